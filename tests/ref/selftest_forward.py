"""Checks of the reference's forward definitions against other writings of
the same model (part of tests/test_ref_torch.py): torch.nn's transformer
modules (weights copied in, and bound to the flat vector: loss and gradient),
torch.nn.functional's pieces (F.layer_norm, F.multi_head_attention_forward,
F.gelu, F.silu) for the new placements, RoPE in LLaMA's complex form,
identities between placements, the sinusoidal table, DeepNet's constants and
the pairwise covering set."""
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from . import pairwise
from .base import PAD, RefError
from .config import resolve_config, deepnorm_constants, placement, FINAL_NORM
from .layout import param_layout, flatten_named
from .model import check_batch, rope, gelu, silu, sinusoidal_pe
from .nnmodel import pe_alt, nn_loss_grad, expressible
from .testkit import check, random_weights, random_batch, loss_of, grad_of, relerr

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---------------------------------------------------------------------------
# torch.nn modules with the weights copied in (loss only)

def _load_mha(m, w, prefix):
    t = lambda name: torch.tensor(w[prefix + name])  # noqa: E731
    with torch.no_grad():
        m.in_proj_weight.copy_(torch.cat([t(".wq").T, t(".wk").T, t(".wv").T], 0))
        m.in_proj_bias.copy_(torch.cat([t(".bq"), t(".bk"), t(".bv")]))
        m.out_proj.weight.copy_(t(".wo").T)
        m.out_proj.bias.copy_(t(".bo"))


def _load_ln(m, w, prefix):
    with torch.no_grad():
        m.weight.copy_(torch.tensor(w[prefix + ".g"]))
        m.bias.copy_(torch.tensor(w[prefix + ".b"]))


def _load_ffn(layer, w, prefix):
    with torch.no_grad():
        layer.linear1.weight.copy_(torch.tensor(w[prefix + ".w1"]).T)
        layer.linear1.bias.copy_(torch.tensor(w[prefix + ".b1"]))
        layer.linear2.weight.copy_(torch.tensor(w[prefix + ".w2"]).T)
        layer.linear2.bias.copy_(torch.tensor(w[prefix + ".b2"]))


def copied_nn_loss(c, w, b):
    """LayerNorm, relu or gelu, post / pre / mix, sinusoidal or learned or no positions."""
    d, h, eps = c["d"], c["h"], c["eps"]

    def kw(stack, l):
        return dict(d_model=d, nhead=h, dim_feedforward=c["d_ff"], dropout=0.0,
                    activation=c["activation"], layer_norm_eps=eps, batch_first=True,
                    norm_first=placement(c, stack, l) == "pre", dtype=torch.float64)

    def enc_layer(stack, l):
        m = nn.TransformerEncoderLayer(**kw(stack, l))
        prefix = f"{stack}.{l}"
        _load_mha(m.self_attn, w, prefix + ".attn")
        _load_ln(m.norm1, w, prefix + ".norm1")
        _load_ln(m.norm2, w, prefix + ".norm2")
        _load_ffn(m, w, prefix + ".ffn")
        return m.train()   # training mode keeps the generic (non fast-path) kernels

    def final(x, prefix):
        if c["norm_pos"] not in FINAL_NORM:
            return x
        return F.layer_norm(x, (d,), torch.tensor(w[prefix + ".g"]),
                            torch.tensor(w[prefix + ".b"]), eps)

    def emb(side, ids):
        T, E = ids.shape[1], torch.tensor(w[side + "_emb"])
        if c["pos"] == "sinusoidal":
            return math.sqrt(d) * E[ids] + pe_alt(T, d)[None]
        if c["pos"] == "learned":
            return E[ids] + torch.tensor(w[side + "_pos"])[:T][None]
        return E[ids]

    if c["has_enc"]:
        src = torch.tensor(b["src"])
        x = emb("src", src)
        for l in range(c["L_enc"]):
            x = enc_layer("enc", l)(x, src_key_padding_mask=src == 0)
        mem = final(x, "enc.final_norm")
    if c["task"] == "cls":
        z, E, labels, scored = mem, w["src_emb"], torch.tensor(b["labels"]), src != 0
    else:
        tgt = torch.tensor(b["tgt"])
        tin, labels = tgt[:, :-1], tgt[:, 1:]
        scored = labels != 0
        T = tin.shape[1]
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
        x = emb("tgt", tin)
        for l in range(c["L_dec"]):
            P = f"dec.{l}"
            if c["task"] == "lm":   # a self-attention-only decoder block is an encoder layer
                x = enc_layer("dec", l)(x, src_mask=causal, src_key_padding_mask=tin == 0)
            else:
                m = nn.TransformerDecoderLayer(**kw("dec", l))
                _load_mha(m.self_attn, w, P + ".attn")
                _load_mha(m.multihead_attn, w, P + ".xattn")
                for j in (1, 2, 3):
                    _load_ln(getattr(m, f"norm{j}"), w, f"{P}.norm{j}")
                _load_ffn(m, w, P + ".ffn")
                x = m.train()(x, mem, tgt_mask=causal, tgt_key_padding_mask=tin == 0,
                              memory_key_padding_mask=src == 0)
        z, E = final(x, "dec.final_norm"), w["tgt_emb"]
    Wout = torch.tensor(E).T if c["tie_output"] else torch.tensor(w["out.w"])
    logits = z @ Wout
    per = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                          reduction="none", label_smoothing=c["label_smoothing"])
    return float(per[scored.reshape(-1)].sum() / scored.sum())


def _nn_configs():
    k = 0
    for task in ("lm", "cls", "seq2seq"):
        for norm_pos in ("post", "pre", "mix"):
            for act, pos in (("relu", "sinusoidal"), ("gelu", "learned"), ("relu", "none")):
                k += 1
                yield k, {"task": task, "norm_pos": norm_pos, "activation": act, "pos": pos,
                          "d": 8, "h": 2, "d_ff": 12, "L": 2 + (norm_pos == "mix"), "V": 13,
                          "max_len": 9, "mix_ratio": 0.5, "tie_output": k % 2 == 0,
                          "label_smoothing": 0.2 * (k % 3 == 1)}


def test_against_nn():
    """The reference against torch.nn's modules: loss with the weights copied
    in; loss and gradient with the modules bound to the flat vector."""
    for k, cfg in _nn_configs():
        tag = f"[{cfg['task']},{cfg['norm_pos']},{cfg['activation']},{cfg['pos']}]"
        rng = np.random.default_rng(500 + k)
        c = resolve_config(cfg)
        layout = param_layout(c)
        w = random_weights(layout, rng)
        b = random_batch(c, rng, B=3, n=6)
        theta = flatten_named(w, layout, "w")
        tb = check_batch(c, b)
        L, g = grad_of(c, layout, theta, tb)
        with torch.no_grad():
            ref = copied_nn_loss(c, w, b)
        rel = abs(L - ref) / abs(ref)
        check(f"nn modules, copied weights: loss {tag}", rel < 1e-13,
              f"ref_torch {L:.17g} nn {ref:.17g} rel {rel:.1e}")
        Ln, gn = nn_loss_grad(c, layout, theta, tb)
        el, eg = abs(L - float(Ln)) / abs(L), relerr(g, gn.numpy())
        check(f"nn modules, bound: loss, grad {tag}", el < 1e-13 and eg < 1e-12,
              f"loss {el:.1e} grad {eg:.1e}")
    for cfg in ({"norm": "none", "norm_pos": "pre"}, {"norm": "none", "task": "seq2seq"}):
        c = resolve_config(dict(cfg, d=8, V=11, d_ff=10))
        layout = param_layout(c)
        rng = np.random.default_rng(9)
        theta = flatten_named(random_weights(layout, rng), layout, "w")
        tb = check_batch(c, random_batch(c, rng))
        L, g = grad_of(c, layout, theta, tb)
        Ln, gn = nn_loss_grad(c, layout, theta, tb)
        check(f"nn modules, nn.Identity norms {cfg}", abs(L - float(Ln)) / abs(L) < 1e-13 and
              relerr(g, gn.numpy()) < 1e-12)
    for v in ({"norm_pos": "peri"}, {"norm": "rmsnorm"}, {"qk_norm": "layernorm"},
              {"activation": "swiglu"}, {"bias": False}, {"pos": "rope"}):
        c = resolve_config(v)
        try:
            nn_loss_grad(c, param_layout(c), None, None)
            ok = False
        except RefError as e:
            ok = list(v)[0] in str(e)
        check(f"nn modules refuse {v}", ok and expressible(c) is not None)


# ---------------------------------------------------------------------------
# torch.nn.functional's pieces: the placements, activations and bias = false

def functional_loss(c, w, b):
    """Encoder-only (cls) or decoder-only (lm) model written with F.layer_norm /
    F.rms-free pieces: the placements of issue 32 as their papers write them."""
    d, h, eps = c["d"], c["h"], c["eps"]
    t = lambda n: torch.tensor(w[n]) if n in w else None  # noqa: E731

    def N(prefix, x):
        return F.layer_norm(x, (d,), t(prefix + ".g"), t(prefix + ".b"), eps)

    def attn(prefix, x, pad, causal):
        bias = None if not c["bias"] else torch.cat([t(prefix + s) for s in (".bq", ".bk", ".bv")])
        W = torch.cat([t(prefix + ".wq").T, t(prefix + ".wk").T, t(prefix + ".wv").T])
        T = x.shape[1]
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1) if causal else None
        o, _ = F.multi_head_attention_forward(
            x.transpose(0, 1), x.transpose(0, 1), x.transpose(0, 1), d, h, W, bias, None, None,
            False, 0.0, t(prefix + ".wo").T, t(prefix + ".bo"), training=False,
            key_padding_mask=pad, need_weights=False, attn_mask=mask)
        return o.transpose(0, 1)

    def ff(prefix, x):
        a = F.linear(x, t(prefix + ".w1").T, t(prefix + ".b1"))
        if c["activation"] == "swiglu":
            a = F.silu(a) * F.linear(x, t(prefix + ".w3").T, t(prefix + ".b3"))
        else:
            a = F.gelu(a) if c["activation"] == "gelu" else F.relu(a)
        return F.linear(a, t(prefix + ".w2").T, t(prefix + ".b2"))

    side, stack = ("src", "enc") if c["task"] == "cls" else ("tgt", "dec")
    ids = torch.tensor(b["src"] if c["task"] == "cls" else b["tgt"][:, :-1])
    pad = ids == PAD
    x = math.sqrt(d) * t(side + "_emb")[ids] + pe_alt(ids.shape[1], d)[None]
    alpha = c["alpha_enc"] if stack == "enc" else c["alpha_dec"]
    for l in range(c[f"L_{stack}"]):
        P = f"{stack}.{l}"
        subs = ((1, lambda y: attn(P + ".attn", y, pad, stack == "dec")),
                (2, lambda y: ff(P + ".ffn", y)))
        for k, f in subs:
            pl = placement(c, stack, l)
            if pl == "post":
                x = N(f"{P}.norm{k}", x + f(x))
            elif pl == "pre":
                x = x + f(N(f"{P}.norm{k}", x))
            elif pl == "peri":   # Kim et al. 2025, eq. (3): x + Norm(F(Norm(x)))
                x = x + N(f"{P}.norm{k}_out", f(N(f"{P}.norm{k}", x)))
            elif pl == "out":    # OLMo 2: x + Norm(F(x))
                x = x + N(f"{P}.norm{k}_out", f(x))
            else:                # DeepNet, eq. (2): LN(alpha x + G(x))
                x = N(f"{P}.norm{k}", alpha * x + f(x))
    if c["norm_pos"] in FINAL_NORM:
        x = N(f"{stack}.final_norm", x)
    if c["task"] == "cls":
        labels, scored = torch.tensor(b["labels"]), ids != PAD
    else:
        labels = torch.tensor(b["tgt"][:, 1:])
        scored = labels != PAD
    logits = x @ (t(side + "_emb").T if c["tie_output"] else t("out.w"))
    per = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                          reduction="none", label_smoothing=c["label_smoothing"])
    return float(per[scored.reshape(-1)].sum() / scored.sum())


def test_functional():
    k = 0
    for task in ("cls", "lm"):
        for norm_pos in ("peri", "out", "deepnorm", "mix", "post", "pre"):
            for act in ("relu", "gelu", "swiglu"):
                k += 1
                cfg = {"task": task, "norm_pos": norm_pos, "activation": act, "d": 8, "h": 2,
                       "d_ff": 10, "L": 3, "V": 11, "bias": k % 2 == 0, "mix_ratio": 0.5,
                       "tie_output": k % 3 == 0, "label_smoothing": 0.1 * (k % 2)}
                c = resolve_config(cfg)
                layout = param_layout(c)
                rng = np.random.default_rng(700 + k)
                w = random_weights(layout, rng)
                b = random_batch(c, rng, B=3, n=6)
                mine = loss_of(c, layout, flatten_named(w, layout, "w"), check_batch(c, b))
                with torch.no_grad():
                    ref = functional_loss(c, w, b)
                rel = abs(mine - ref) / abs(ref)
                check(f"F.* pieces: loss [{task},{norm_pos},{act},bias={cfg['bias']}]",
                      rel < 1e-13, f"ref_torch {mine:.17g} F {ref:.17g} rel {rel:.1e}")
    x = torch.linspace(-6, 6, 101, dtype=torch.float64)
    check("gelu == F.gelu (exact, erf)", float((gelu(x) - F.gelu(x)).abs().max()) < 1e-15)
    check("silu == F.silu", float((silu(x) - F.silu(x)).abs().max()) < 1e-15)


# ---------------------------------------------------------------------------
# rotary positions, placement identities, constants

def test_rope():
    """RoPE against Meta's LLaMA reference form: view the pairs (2i, 2i+1) as
    complex numbers and multiply by polar(1, t * base^(-2i/d_k))."""
    rng = np.random.default_rng(3)
    x = torch.tensor(rng.normal(size=(2, 3, 7, 6)))
    dk, T = 6, 7
    freqs = 1.0 / (10000.0 ** (torch.arange(0, dk, 2, dtype=torch.float64) / dk))
    cis = torch.polar(torch.ones(T, dk // 2, dtype=torch.float64),
                      torch.outer(torch.arange(T, dtype=torch.float64), freqs))
    xc = torch.view_as_complex(x.reshape(2, 3, T, dk // 2, 2).contiguous())
    want = torch.view_as_real(xc * cis).reshape(x.shape)
    check("rope == LLaMA's complex form", float((rope(x) - want).abs().max()) < 1e-14)
    # scores depend on positions only through their difference
    q, k = torch.tensor(rng.normal(size=6)), torch.tensor(rng.normal(size=6))
    Q, K = rope(q.expand(1, 1, T, 6).clone()), rope(k.expand(1, 1, T, 6).clone())
    S = (Q[0, 0] @ K[0, 0].T).numpy()
    check("rope: q_t . k_s depends on t - s", max(abs(S[i, j] - S[i + 1, j + 1])
                                                  for i in range(T - 1) for j in range(T - 1))
          < 1e-13)


def _same_loss(tag, cfg_a, cfg_b, seed, w_map=None):
    ca, cb = resolve_config(cfg_a), resolve_config(cfg_b)
    la, lb = param_layout(ca), param_layout(cb)
    rng = np.random.default_rng(seed)
    wa = random_weights(la, rng)
    wb = w_map(wa, lb) if w_map else wa
    b = random_batch(ca, rng)
    A = loss_of(ca, la, flatten_named(wa, la, "a"), check_batch(ca, b))
    B = loss_of(cb, lb, flatten_named(wb, lb, "b"), check_batch(cb, b))
    check(tag, abs(A - B) <= 1e-14 * abs(A), f"{A:.17g} vs {B:.17g}")


def test_identities():
    base = {"d": 8, "h": 2, "d_ff": 10, "L": 2, "V": 11}
    for task in ("lm", "cls", "seq2seq"):
        t = dict(base, task=task, norm="none")
        for p in ("peri", "out", "mix"):
            _same_loss(f"norm none: {p} == pre [{task}]", dict(t, norm_pos=p),
                       dict(t, norm_pos="pre"), 11)
        _same_loss(f"norm none: mix ratio 1 == post [{task}]",
                   dict(t, norm_pos="mix", mix_ratio=1), dict(t, norm_pos="post"), 12)
        t = dict(base, task=task)
        _same_loss(f"deepnorm alpha 1 == post [{task}]",
                   dict(t, norm_pos="deepnorm", deepnorm_alpha=1.0), dict(t, norm_pos="post"), 13)
        _same_loss(f"mix ratio 0 == pre [{task}]", dict(t, norm_pos="mix", mix_ratio=0),
                   dict(t, norm_pos="pre"), 14)

        for act in ("relu", "swiglu"):
            cfg = dict(t, activation=act, norm_pos="peri")
            ca = resolve_config(dict(cfg, bias=True))
            rng = np.random.default_rng(15)
            wt = random_weights(param_layout(ca), rng)
            for n in wt:
                if n.split(".")[-1] in ("b", "bq", "bk", "bv", "bo", "b1", "b2", "b3"):
                    wt[n] = np.zeros_like(wt[n])
            cb = resolve_config(dict(cfg, bias=False))
            lb = param_layout(cb)
            b = random_batch(ca, rng)
            A = loss_of(ca, param_layout(ca), flatten_named(wt, param_layout(ca), "a"),
                        check_batch(ca, b))
            B = loss_of(cb, lb, flatten_named({n: wt[n] for n, _ in lb}, lb, "b"),
                        check_batch(cb, b))
            check(f"bias false == zero biases and shifts [{task},{act}]", abs(A - B) <= 1e-14 * A)


def test_constants():
    for task, Le, Ld in (("lm", 0, 6), ("cls", 5, 0), ("seq2seq", 6, 6), ("seq2seq", 18, 3)):
        ae, be, ad, bd = deepnorm_constants(task, Le, Ld)
        if task == "lm":
            ok = abs(ad - 12 ** 0.25) < 1e-15 and abs(bd - 48 ** -0.25) < 1e-15 and ae is None
        elif task == "cls":
            ok = abs(ae - 10 ** 0.25) < 1e-15 and abs(be - 40 ** -0.25) < 1e-15 and ad is None
        else:
            r = (Le ** 4 * Ld) ** (1 / 16)
            ok = abs(ae - 0.81 * r) < 1e-14 and abs(be - 0.87 / r) < 1e-14 and \
                abs(ad - (3 * Ld) ** 0.25) < 1e-14 and abs(bd - (12 * Ld) ** -0.25) < 1e-14
        check(f"DeepNet constants {task} N={Le} M={Ld}", ok)
    c = resolve_config({"task": "seq2seq", "norm_pos": "deepnorm", "deepnorm_alpha": 2.5})
    check("deepnorm_alpha overrides both stacks", c["alpha_enc"] == c["alpha_dec"] == 2.5)
    c = resolve_config({"norm_pos": "mix", "L": 7, "mix_ratio": 0.3})
    check("mix: floor(rho L) post layers", [placement(c, "dec", l) for l in range(7)] ==
          ["post", "post"] + ["pre"] * 5)


def test_pe():
    for d in (4, 16, 64):
        a = sinusoidal_pe(50, d)
        bb = pe_alt(50, d)
        ref = torch.tensor([[math.sin(t / 10000 ** (2 * (j // 2) / d)) if j % 2 == 0 else
                             math.cos(t / 10000 ** (2 * (j // 2) / d)) for j in range(d)]
                            for t in range(50)], dtype=torch.float64)
        check(f"PE table d={d}", float((a - bb).abs().max()) < 1e-12 and
              float((a - ref).abs().max()) < 1e-12)


def test_pairwise():
    rows = pairwise.generate()
    check("pairwise set covers every pair", not (pairwise.all_pairs() - pairwise.covered(rows)),
          f"{len(rows)} rows")
    lo = max(len(a[1]) * len(b[1]) for a in pairwise.FACTORS for b in pairwise.FACTORS
             if a is not b)
    check("pairwise set is small", lo <= len(rows) <= 32, f"{len(rows)} rows, >= {lo} needed")
    fac = [("a", [0, 1]), ("b", [0, 1, 2]), ("c", [0, 1]), ("d", [0, 1, 2, 3])]
    r = pairwise.generate(fac)
    check("pairwise generator on a small set", not (pairwise.all_pairs(fac) -
                                                   pairwise.covered(r, fac)), f"{len(r)} rows")
    missing = [[0] * 4]   # a set that misses pairs is told apart
    check("pairwise coverage test detects a gap",
          bool(pairwise.all_pairs(fac) - pairwise.covered(missing, fac)))
    conf = os.path.join(HERE, "pairwise.conf")
    check("tests/pairwise.conf is the generator's output", pairwise.main(["--check", conf]) == 0)
    for line in open(conf):
        cfg = {}
        for w in line.split():
            k, v = w.split("=")
            cfg[k] = {"true": True, "false": False}.get(v, v)
            if k == "label_smoothing":
                cfg[k] = float(v)
        resolve_config(cfg)   # every row is a valid configuration


def run_all(run):
    run("pe", test_pe)
    run("rope", test_rope)
    run("constants", test_constants)
    run("identities", test_identities)
    run("torch.nn modules", test_against_nn)
    run("F.* pieces", test_functional)
    run("pairwise", test_pairwise)
