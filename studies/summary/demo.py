"""The demo (studies/demo_postpre): loss at initialisation against ln V, and
every block's ||dL/dW2||_F, Post-LN against Pre-LN, from postpre_loss.csv and
postpre_layers.csv."""
import math

from . import plots
from . import stats as S
from .writer import Summary, fnum, read, sidecar_of

POS = ("post", "pre")
NAME = {"post": "Post-LN", "pre": "Pre-LN"}


def summarise(study, d):
    loss = read(d, "postpre_loss.csv", ("norm_pos", "seed", "loss"))
    lay = read(d, "postpre_layers.csv", ("norm_pos", "seed", "layer", "tensor", "grad_norm"))
    m = sidecar_of(d, "postpre_loss.csv")
    c = m["config"]
    seeds = sorted({int(r["seed"]) for r in loss})
    setting = (f"{c['task']}, {c['init']} init, d = {c['d']}, h = {c['h']}, d_ff = {c['d_ff']}, "
               f"L = {c['L']}, V = {c['V']}, output {'tied' if c['tie_output'] else 'untied'}, "
               f"synthetic batches B = {m['B']}, T = {m['T']} (ids uniform in [4, V)), "
               f"{len(seeds)} seeds")
    out = Summary(study, d, "Post-LN vs Pre-LN at initialisation (the demo)", setting,
                  "make study-demo", ["postpre_loss.csv", "postpre_layers.csv"], "demo")
    lnV = math.log(c["V"])
    L = {p: [fnum(r, "loss") for r in loss if r["norm_pos"] == p] for p in POS}
    out.value("lnV", f"{lnV:.3f}")
    for p in POS:
        out.claim(f"loss_{p}", f"{NAME[p]} loss at initialisation against ln V (the loss of "
                  "a uniform prediction)", S.mean_ci(L[p]), "postpre_loss.csv", null=lnV,
                  words=("above ln V", "below ln V", "equal"), how=f"{len(L[p])} seeds")
        out.value(f"loss_{p}_range", f"{min(L[p]):.2f}-{max(L[p]):.2f}")
    diff = S.mean_ci([a - b for a, b in zip(L["post"], L["pre"])])
    out.claim("loss_diff", "Loss, Post-LN minus Pre-LN (per seed: the same batches)", diff,
              "postpre_loss.csv", margin=0.05, words=("larger", "smaller", "equal"),
              how=f"{diff.n} paired seeds")
    w2 = {(r["norm_pos"], int(r["layer"]), int(r["seed"])): fnum(r, "grad_norm")
          for r in lay if r["tensor"] == "ffn.w2"}
    nl = max(k[1] for k in w2) + 1
    for p in POS:
        first = [w2[(p, 0, s)] for s in seeds]
        last = [w2[(p, nl - 1, s)] for s in seeds]
        out.claim(f"w2_{p}_last_over_first", f"{NAME[p]}: ||dL/dW2||_F of block {nl} over "
                  "block 1 of the same model", S.ratio_ci(last, first), "postpre_layers.csv",
                  null=1, margin=(1 / 1.25, 1.25), words=("larger", "smaller", "equal"),
                  how=f"{len(seeds)} seeds, per-seed ratios; equal: within a factor 1.25")
        for l in (0, nl - 1):
            v = [w2[(p, l, s)] for s in seeds]
            out.value(f"w2_{p}_block{l + 1}", S.pm(*_msd(v)))
    out.table("loss", "Loss at initialisation per variant, mean ± sd over seeds, its range, "
              "and ln V (the loss of a uniform prediction)",
              ["norm", "loss", "min", "max", "ln V"],
              [[NAME[p], S.pm(*_msd(L[p])), f"{min(L[p]):.3f}", f"{max(L[p]):.3f}",
                f"{lnV:.3f}"] for p in POS])
    out.table("w2_blocks", "||dL/dW2||_F of every block's FFN output matrix (blocks from 1), "
              "mean ± sd over seeds", ["block"] + [f"{NAME[p]} ||dL/dW2||_F" for p in POS],
              [[l + 1] + [S.pm(*_msd([w2[(p, l, s)] for s in seeds])) for p in POS]
               for l in range(nl)])
    fig, (ax,) = plots.figure()
    for p in POS:
        plots.seeds(ax, list(range(1, nl + 1)), [[w2[(p, l, s)] for s in seeds]
                                                 for l in range(nl)], p)
    plots.log_axes(ax, list(range(1, nl + 1)), xlog=False)
    ax.set_xlabel("block")
    ax.set_ylabel("||dL/dW2||_F")
    ax.legend()
    out.figure("w2_blocks", "||dL/dW2||_F of each block of one model (L = "
               f"{nl}), Post-LN and Pre-LN. {plots.CAPTION}.", fig)
    out.close()


def _msd(v):
    e = S.mean_ci(v)
    return e.value, e.sd
