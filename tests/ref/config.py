"""Configuration of docs/MODEL.md §8: a JSON object -> a dict of resolved,
validated settings.  Only what the model needs is resolved here; lnkit's
rules on derived keys in saved files do not matter to a reference that is
handed one complete configuration."""
import math

from .base import RefError

_CHOICES = {"task": ("lm", "seq2seq", "cls"),
            "norm_pos": ("post", "pre", "peri", "out", "deepnorm", "mix"),
            "norm": ("layernorm", "rmsnorm", "none"),
            "qk_norm": ("none", "layernorm", "rmsnorm"),
            "init": ("xavier", "xavier_normal", "theorem"),
            "activation": ("relu", "gelu", "swiglu"),
            "pos": ("sinusoidal", "learned", "rope", "none")}
_DEFAULTS = {"task": "lm", "norm_pos": "post", "norm": "layernorm", "qk_norm": "none",
             "init": "xavier", "activation": "relu", "pos": "sinusoidal"}
_INTS = ("d", "h", "d_ff", "L", "L_enc", "L_dec", "V", "V_src", "V_tgt", "n_classes", "seed",
         "max_len")
_FLOATS = ("eps", "label_smoothing", "mix_ratio", "deepnorm_alpha", "deepnorm_beta",
           "input_scale")
_KNOWN = set(_CHOICES) | set(_INTS) | set(_FLOATS) | {"tie_output", "bias", "n_params",
                                                     "param_order"}

# placements whose stacks end with a final norm (MODEL.md §3)
FINAL_NORM = ("pre", "peri", "out", "mix")


def _number(g, k, default, ok, expected):
    v = g.get(k, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
            or not ok(v):
        raise RefError(f"config: key {k!r} = {v!r}, expected {expected}")
    return float(v)


def _bool(g, k, default):
    v = g.get(k, default)
    if not isinstance(v, bool):
        raise RefError(f"config: key {k!r} = {v!r}, expected true or false")
    return v


def deepnorm_constants(task, L_enc, L_dec):
    """DeepNet's alpha and beta (Wang et al. 2022, Table/§3 "DeepNorm"):
    encoder-only or decoder-only with N layers: alpha = (2N)^(1/4),
    beta = (8N)^(-1/4); encoder-decoder with N encoder and M decoder layers:
    encoder alpha = 0.81 (N^4 M)^(1/16), beta = 0.87 (N^4 M)^(-1/16), decoder
    alpha = (3M)^(1/4), beta = (12M)^(-1/4).  Returns
    (alpha_enc, beta_enc, alpha_dec, beta_dec), None for a stack absent."""
    if task == "lm":
        return None, None, (2 * L_dec) ** 0.25, (8 * L_dec) ** -0.25
    if task == "cls":
        return (2 * L_enc) ** 0.25, (8 * L_enc) ** -0.25, None, None
    N, M = L_enc, L_dec
    return (0.81 * (N ** 4 * M) ** (1 / 16), 0.87 * (N ** 4 * M) ** (-1 / 16),
            (3 * M) ** 0.25, (12 * M) ** -0.25)


def resolve_config(obj):
    """JSON object -> dict of resolved, validated settings."""
    if not isinstance(obj, dict):
        raise RefError("config: not a JSON object")
    for k in obj:
        if k not in _KNOWN:
            raise RefError(f"config: unknown key {k!r}")
    g = {k: v for k, v in obj.items() if v is not None}
    c = {}
    for k, choices in _CHOICES.items():
        v = g.get(k, _DEFAULTS[k])
        if not isinstance(v, str) or v not in choices:
            raise RefError(f"config: key {k!r} = {v!r}, expected one of {list(choices)}")
        c[k] = v

    def get_int(k, default, lo=1):
        v = g.get(k, default)
        if isinstance(v, bool) or not isinstance(v, int):
            raise RefError(f"config: key {k!r} = {v!r}, expected an integer")
        if v < lo:
            raise RefError(f"config: key {k!r} = {v}, expected >= {lo}")
        return v

    c["d"] = get_int("d", 16)
    c["h"] = get_int("h", 2)
    if c["d"] % c["h"]:
        raise RefError(f"config: key 'h' = {c['h']} does not divide d = {c['d']}")
    c["d_k"] = c["d"] // c["h"]
    if c["pos"] == "sinusoidal" and c["d"] % 2:
        raise RefError(f"config: key 'd' = {c['d']}, expected even (sinusoidal positions)")
    if c["pos"] == "rope" and c["d_k"] % 2:
        raise RefError(f"config: key 'h' = {c['h']}: d / h = {c['d_k']}, expected even "
                       f"(rotary positions rotate pairs)")
    c["d_ff"] = get_int("d_ff", 4 * c["d"])
    L = get_int("L", 2)
    c["L_enc"] = get_int("L_enc", L)
    c["L_dec"] = get_int("L_dec", L)
    V = get_int("V", 32)
    c["V_src"] = get_int("V_src", V)
    c["V_tgt"] = get_int("V_tgt", V)
    # Reading chosen: for cls the default n_classes is the source vocabulary
    # (V_src, which is V unless overridden), so that tie_output's src_emb fits.
    c["n_classes"] = get_int("n_classes", c["V_src"])
    c["seed"] = get_int("seed", 0, lo=0)
    c["max_len"] = get_int("max_len", 512)
    c["eps"] = _number(g, "eps", 1e-5, lambda x: x >= 0, "a number >= 0")
    c["tie_output"] = _bool(g, "tie_output", False)
    c["bias"] = _bool(g, "bias", True)
    c["label_smoothing"] = _number(g, "label_smoothing", 0.0, lambda x: 0 <= x < 1,
                                   "0 <= a < 1")
    c["mix_ratio"] = _number(g, "mix_ratio", 0.25, lambda x: 0 <= x <= 1, "0 <= rho <= 1")
    c["input_scale"] = _number(g, "input_scale", 1.0, lambda x: x > 0, "a number > 0")
    if c["task"] == "cls" and c["tie_output"] and c["n_classes"] != c["V_src"]:
        raise RefError(f"config: key 'n_classes' = {c['n_classes']}, with tie_output it "
                       f"must equal the source vocabulary {c['V_src']}")
    c["has_enc"] = c["task"] in ("cls", "seq2seq")
    c["has_dec"] = c["task"] in ("lm", "seq2seq")
    if not c["has_enc"]:
        c["L_enc"] = 0
    if not c["has_dec"]:
        c["L_dec"] = 0
    # DeepNorm: alpha scales the residual in every block of a stack; beta only
    # scales the initial weights (which come from files here), kept for show.
    ae, be, ad, bd = deepnorm_constants(c["task"], c["L_enc"], c["L_dec"])
    if "deepnorm_alpha" in g:
        a = _number(g, "deepnorm_alpha", None, lambda x: x > 0, "a number > 0")
        ae = a if ae is not None else None
        ad = a if ad is not None else None
    if "deepnorm_beta" in g:
        b = _number(g, "deepnorm_beta", None, lambda x: x > 0, "a number > 0")
        be = b if be is not None else None
        bd = b if bd is not None else None
    c["alpha_enc"], c["beta_enc"], c["alpha_dec"], c["beta_dec"] = ae, be, ad, bd
    # Mix-LN (Li et al. 2024): the first floor(rho L) layers of each stack are
    # Post-LN, the rest Pre-LN, with a final norm.
    c["mix_post_enc"] = int(math.floor(c["mix_ratio"] * c["L_enc"]))
    c["mix_post_dec"] = int(math.floor(c["mix_ratio"] * c["L_dec"]))
    return c


def placement(c, stack, l):
    """The norm placement of layer l of stack ("enc" or "dec"): mix resolves
    to post or pre."""
    if c["norm_pos"] != "mix":
        return c["norm_pos"]
    return "post" if l < c["mix_post_" + stack] else "pre"
