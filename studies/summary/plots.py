"""Figures of the summaries (matplotlib): vector PDF for papers, PNG for the
Markdown.  Conventions, stated in every caption that uses them: small dots are the
seeds, markers the geometric mean over seeds (the mean of ln y, which the fits
use), bars its 95% interval (stats.mean_ci on ln y); log axes carry labelled
ticks at the sweep's points (x) and at 1, 2, 5 x 10^k (y; denser over a
narrow range)."""
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402

import numpy as np  # noqa: E402

from . import stats as S  # noqa: E402

matplotlib.rcParams.update({"pdf.fonttype": 42, "font.size": 8, "axes.titlesize": 9,
                            "legend.fontsize": 7, "legend.frameon": False,
                            "axes.grid": True, "grid.alpha": 0.25})
CAPTION = ("Dots: seeds; markers: geometric mean over seeds; bars: its 95% confidence "
           "interval (t on ln y)")
STYLE = {"post": ("tab:red", "o", "Post-LN"), "pre": ("tab:blue", "s", "Pre-LN")}


def figure(n=1, w=3.4, h=2.6):
    fig, ax = plt.subplots(1, n, figsize=(w * n, h), squeeze=False, layout="constrained")
    return fig, list(ax[0])


def _g(v, _=None):
    return f"{v:g}" if v >= 1e-3 and v < 1e5 else S.num(v, 1)


def log_axes(ax, xs=None, xlog=True, ylog=True):
    """Log scales with readable ticks: x at the sweep's points, y at 1, 2, 5 x 10^k."""
    if xlog:
        ax.set_xscale("log")
        if xs is not None:
            ax.set_xticks(sorted(set(xs)))
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(_g))
        ax.xaxis.set_minor_locator(ticker.NullLocator())
    if ylog:
        ax.set_yscale("log")
        lo, hi = ax.get_ylim()
        dec = math.log10(hi / lo) if lo > 0 else 3
        subs = (1.0,) if dec > 2.5 else (1.0, 2.0, 5.0) if dec > 1.2 else \
            (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0) if dec > 0.5 else np.arange(1.0, 10.0, 0.5)
        ax.yaxis.set_major_locator(ticker.LogLocator(subs=subs, numticks=12))
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(_g))
        ax.yaxis.set_minor_locator(ticker.NullLocator())


def seeds(ax, xs, ys, pos=None, label=None, color=None, marker="o", line="-"):
    """Per-seed values ys[i] (a list) at xs[i]: dots, geometric mean, its 95% CI."""
    c, m, lab = STYLE.get(pos, (color, marker, label))
    label = label or lab
    gm, lo, hi = [], [], []
    for x, y in zip(xs, ys):
        y = np.asarray(y, float)
        ax.plot([x] * len(y), y, ".", color=c, alpha=0.35, ms=3)
        e = S.mean_ci(np.log(y))
        gm.append(math.exp(e.value))
        lo.append(math.exp(e.value) - math.exp(e.lo) if e.n > 1 else 0)
        hi.append(math.exp(e.hi) - math.exp(e.value) if e.n > 1 else 0)
    ax.errorbar(xs, gm, yerr=[lo, hi], fmt=m + line, color=c, ms=4, lw=1, capsize=2,
                label=label)


def fit(ax, f, color, label=None, style="--"):
    """A power-law fit y = exp(a) x^b over its points' range."""
    x = np.geomspace(min(f.points), max(f.points), 50)
    ax.plot(x, np.exp(f.intercept) * x ** f.slope.value, style, color=color, lw=0.9,
            label=label)


def legend(ax, **kw):
    """ax.legend(**kw) where the axes have labelled artists (a partial sweep may have none)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(**kw)


def save(fig, base):
    fig.savefig(base + ".pdf", bbox_inches="tight",
                metadata={"CreationDate": None, "Creator": None, "Producer": None})
    fig.savefig(base + ".png", dpi=150, bbox_inches="tight")
    plt.close(fig)
