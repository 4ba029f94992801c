"""Shared fixtures of the Python tests: the lnkit program (the reference the
package is compared with: $LNK_BIN, else the clone's bin/lnkit), and small
models with batch and vector files made by it in a temporary folder."""
import csv
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))


def lnkit_bin():
    p = os.environ.get("LNK_BIN") or os.path.join(ROOT, "bin", "lnkit")
    if not os.access(p, os.X_OK):
        pytest.fail("the lnkit program is not built (%s); run make" % p)
    return p


def run(*args, cwd=None, ok=(0,)):
    """Run the lnkit program; its stdout (it must exit with a status in ok:
    0, or 3 too where eigenpairs may not converge)."""
    r = subprocess.run([lnkit_bin(), *map(str, args)], cwd=cwd, capture_output=True, text=True)
    if r.returncode not in ok:
        pytest.fail("lnkit %s: exit %d: %s" % (" ".join(map(str, args)), r.returncode, r.stderr))
    return r.stdout


def read_eigs_csv(path):
    rows = list(csv.DictReader(open(path)))
    top = [float(r["eigenvalue"]) for r in rows if r["which"] == "top"]
    bottom = [float(r["eigenvalue"]) for r in rows if r["which"] == "bottom"]
    res = [float(r["residual"]) for r in rows]
    return top, bottom, res


class Files:
    """A model made by `lnkit init`, two batch files and a vector."""

    def __init__(self, folder, name, init_flags, batch_flags):
        self.dir = str(folder)
        p = lambda f: os.path.join(self.dir, f)  # noqa: E731
        self.config, self.weights = p(name + ".json"), p(name + ".safetensors")
        self.batch, self.batch2 = p(name + "_b.safetensors"), p(name + "_b2.safetensors")
        self.vector = p(name + "_v.safetensors")
        self.init_flags = init_flags
        run("init", *init_flags, "-o", self.weights, "--quiet")
        run("batch", "--synthetic", "--config", self.config, *batch_flags, "--rng-seed", 1,
            "-o", self.batch, "--quiet")
        bf = list(batch_flags)
        bf[bf.index("--rows") + 1] = "5"
        run("batch", "--synthetic", "--config", self.config, *bf, "--rng-seed", 2,
            "-o", self.batch2, "--quiet")
        run("vector", "--config", self.config, "--random", "--rng-seed", 7, "-o", self.vector,
            "--quiet")

    def path(self, f):
        return os.path.join(self.dir, f)


MODELS = {
    "pre_lm": (["--d", 16, "--h", 2, "--L", 2, "--V", 24, "--norm-pos", "pre", "--seed", 3],
               ["--rows", 4, "--len", 8]),
    "post_lm": (["--d", 16, "--h", 4, "--L", 3, "--V", 30, "--norm-pos", "post", "--seed", 5],
                ["--rows", 4, "--len", 7]),
    "s2s": (["--task", "seq2seq", "--d", 16, "--h", 2, "--L", 1, "--V", 20, "--seed", 2],
            ["--rows", 3, "--len", 6]),
    "cls": (["--task", "cls", "--d", 8, "--h", 2, "--L", 1, "--V", 15, "--n-classes", 5,
             "--norm", "rmsnorm", "--seed", 4], ["--rows", 3, "--len", 6]),
}


@pytest.fixture(scope="session")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("lnkit")


@pytest.fixture(scope="session", params=sorted(MODELS))
def files(request, folder):
    init, batch = MODELS[request.param]
    return Files(folder, request.param, init, batch)


@pytest.fixture(scope="session")
def pre(folder):
    init, batch = MODELS["pre_lm"]
    return Files(folder, "pre", init, batch)


def rel_err(a, b):
    """max |a - b| / max |b| (b the reference)."""
    import numpy as np
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    scale = np.max(np.abs(b))
    return float(np.max(np.abs(a - b)) / (scale if scale > 0 else 1.0))


def read_safetensors(path):
    """A safetensors file's tensors as NumPy arrays (F64, I64), read here
    independently of the library."""
    import struct
    import numpy as np
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    out = {}
    for k, e in head.items():
        if k == "__metadata__":
            continue
        b, end = e["data_offsets"]
        dt = {"F64": "<f8", "I64": "<i8"}[e["dtype"]]
        out[k] = np.frombuffer(raw[8 + n + b:8 + n + end], dtype=dt).reshape(e["shape"])
    return out


RECORD_KEYS = ["producer", "git_commit", "command", "content", "identity", "seeds"]
CONFIG_ITEM = "the configuration (SHA-256 of its resolved keys)"


def read_record(path):
    """The embedded record of a safetensors file (docs/MODEL.md section 9), read
    here independently of the library: the header's __metadata__["lnkit"]
    parsed, its keys in their order (None: no record)."""
    import struct
    raw = open(path, "rb").read()
    head = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
    text = head.get("__metadata__", {}).get("lnkit")
    return None if text is None else json.loads(text)


def same_bytes(a, b):
    """Two files hold the same bytes."""
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


def config_sha256(resolved_json):
    """The configuration checksum by docs/MODEL.md section 9's rule, from the
    text of a configuration file lnkit wrote: up to n_params, closed."""
    import hashlib
    t = open(resolved_json).read()
    return hashlib.sha256((t[:t.index(',\n  "n_params"')] + "\n}\n").encode()).hexdigest()


def pytest_configure(config):
    # a ConvergenceWarning a test does not expect (pytest.warns) fails it
    config.addinivalue_line("filterwarnings", "error::lnkit.ConvergenceWarning")
    # a deprecated keyword (or key) used anywhere but where a test expects it
    config.addinivalue_line("filterwarnings", r"error:lnkit\.:DeprecationWarning")
