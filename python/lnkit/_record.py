"""The record a safetensors file written from Python carries inside it
(docs/MODEL.md section 9, "The embedded record"): the header's __metadata__
key "lnkit", compact JSON {producer, git_commit, command, content, identity,
seeds}, as the lnkit program's files carry (src/front/record.c), so that the
file alone says how it was made.  Built from the library's own answers (its
version, its commit, its configuration text and SHA-256), never from the
run's circumstances: the same model gives the same bytes."""
import ctypes
import json

import numpy as np

from ._lib import Digest, lib, check, take_string, c_double_p

KEY = "lnkit"
# the item name of the programs' records (CLI_ID_CONFIG, src/front/ckpt.h)
CONFIG_ITEM = "the configuration (SHA-256 of its resolved keys)"
INIT_CONTENT = "the initial weights (docs/MODEL.md section 5)"


def config_sha256(cfg):
    """The SHA-256 the programs record for a configuration: of the text
    lnk_config_to_json gives without n_params and param_order."""
    text = take_string(lib.lnk_config_to_json(cfg, 0, None, 0)).encode("utf-8")
    d = Digest()
    lib.lnk_digest_of(text, len(text), ctypes.byref(d))
    return d.sha256.decode("ascii")


def is_init(model, theta):
    """True when theta is, bit for bit, lnkit's initialisation of the model's
    configuration (MODEL.md section 5): computed again, not remembered, since
    theta is an array any code can write into."""
    ref = np.empty(model.n_params)
    check(lib.lnk_model_init_params(model._m, ref.ctypes.data_as(c_double_p)))
    # bit for bit: -0.0 is not 0.0 (theta is finite: the writers checked it)
    return ref.tobytes() == np.ascontiguousarray(theta).tobytes()


def text(model, command, content, seeds):
    """The record's compact JSON for a file of model's layout."""
    rec = {"producer": "lnkit %s" % lib.lnk_version().decode(),
           "git_commit": lib.lnk_git_commit().decode(),
           "command": command, "content": content,
           "identity": {CONFIG_ITEM: config_sha256(model._cfg)},
           "seeds": seeds}
    return json.dumps(rec, separators=(",", ":"), ensure_ascii=False)


def metadata(record):
    """The NULL-terminated {key, value} list lnk_*_save_meta take; keep the
    returned array alive for the call."""
    return (ctypes.c_char_p * 3)(KEY.encode(), record.encode("utf-8"), None)


def weights_record(model, theta, command, content=None):
    """The record of a weights file: "init" seed and content when theta is the
    configuration's initialisation; content (or the generic words) otherwise."""
    if is_init(model, theta):
        seeds = {"init": int(model.config["seed"])}
        return text(model, command, content or INIT_CONTENT, seeds)
    return text(model, command,
                content or "weights set in Python (not the configuration's initialisation)", {})
