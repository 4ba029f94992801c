#!/usr/bin/env python3
"""Summary of studies/anatomy (curvature anatomy, issue 17), from its files only.

usage: anatomy_summary.py [DIR [PART ...]]   (DIR: results/anatomy; PART: .)

Reads DIR/PART/{extremes,mass,blocknorms,js}.csv for every PART (written by
build/studies/anatomy, with their sidecars; the study script runs the lm and
the seq2seq points as two processes into DIR/lm and DIR/seq2seq) and writes
into DIR:
  curves.csv     per configuration and quantity: mean, sd over seeds, count
                 (converged values only for eigenvalues; the count left out);
  fits.csv       power-law slopes: ln|y| = a + b ln x by weighted least squares
                 over the depth (x = L) or width (x = d) sweep, weights from the
                 seed spread (var ln y = (se/|y|)^2, se = sd/sqrt(n)); the
                 standard error is multiplied by sqrt(chi^2/dof) when that is
                 > 1 (as the study kit's lnk_fit_power), never made smaller;
  mass.csv       the reference points' eigenvector mass by tensor kind;
  layers.csv     per-layer ||H_bb||_F of Q, K, V, O, FFN1, FFN2 at the deepest
                 lm depth-sweep point;
  jsmatrix.csv   the Jensen-Shannon matrix between kind blocks at the
                 reference points (mean over seeds);
  values.csv     name,value: the numbers results/README.md quotes, formatted;
  summary.md, tables.tex   the tables in Markdown and LaTeX;
  extremes.gp, blocknorms.gp, js.gp   gnuplot scripts (-> .png; run by
                 studies/scripts/study_anatomy.sh);
each CSV with a .meta.json sidecar by lnkit's one writer (`lnkit meta`: inputs
with size and SHA-256, command line, commit, versions; build/bin/lnkit or $LNKIT).
Standard library only.
"""
import csv
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
import sidecar  # noqa: E402  (studies/kit/sidecar.py: lnkit meta, the one sidecar writer)

KEY = ["task", "norm_pos", "norm", "qk_norm", "L", "d", "seed"]
CFG = ["task", "norm_pos", "norm", "qk_norm", "L", "d"]
OPS = {"hessian": "H", "ggn": "G", "functional": "F"}
LOG = "natural"


def read(dirpath, name):
    path = os.path.join(dirpath, name)
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit(f"anatomy_summary: {path}: no rows")
    return rows


def cfg_of(r):
    return (r["task"], r["norm_pos"], r["norm"], r["qk_norm"], int(r["L"]), int(r["d"]))


def mean_sd(xs):
    n = len(xs)
    if n == 0:
        return float("nan"), float("nan")
    mu = sum(xs) / n
    if n == 1:
        return mu, 0.0
    return mu, math.sqrt(sum((x - mu) ** 2 for x in xs) / (n - 1))


def wls(xs, ys, ses):
    """ln|y| = a + b ln x, weights (|y|/se)^2; returns slope, se, chi2/dof, dof."""
    X = [math.log(x) for x in xs]
    Y = [math.log(abs(y)) for y in ys]
    W = [(abs(y) / s) ** 2 if s > 0 else None for y, s in zip(ys, ses)]
    if any(w is None for w in W):  # no spread to weigh by: ordinary least squares
        W = [1.0] * len(X)
        plain = True
    else:
        plain = False
    sw = sum(W)
    mx = sum(w * x for w, x in zip(W, X)) / sw
    my = sum(w * y for w, y in zip(W, Y)) / sw
    sxx = sum(w * (x - mx) ** 2 for w, x in zip(W, X))
    b = sum(w * (x - mx) * (y - my) for w, x, y in zip(W, X, Y)) / sxx
    a = my - b * mx
    chi2 = sum(w * (y - a - b * x) ** 2 for w, x, y in zip(W, X, Y))
    dof = len(X) - 2
    if plain:
        se = math.sqrt(chi2 / dof / sxx) if dof > 0 else float("nan")
        return b, se, float("nan"), dof
    se = math.sqrt(1.0 / sxx)
    red = chi2 / dof if dof > 0 else float("nan")
    if dof > 0 and red > 1:
        se *= math.sqrt(red)
    return b, se, red, dof


def kind_of(tensor):
    """Tensor name -> kind for the eigenvector masses."""
    if tensor.endswith("_emb"):
        return "emb"
    if tensor == "out.w":
        return "out"
    parts = tensor.split(".")
    if "norm" in parts[-2] or parts[0].startswith("final") or "norm" in tensor.split(".")[0]:
        return "norm"
    sub, w = parts[-2], parts[-1]
    if sub in ("attn", "xattn"):
        k = {"q": "Q", "k": "K", "v": "V", "o": "O"}.get(w[1], "?")
        return ("X" if sub == "xattn" else "") + k
    if sub == "ffn":
        return "FFN"
    if "norm" in sub:
        return "norm"
    return "other"


def fmt(x, sig=3):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    if x == 0:
        return "0"
    return f"{x:.{sig}g}"


def pm(mu, sd):
    """mean +- sd with the sd to 2 significant digits (as the kit's lnk_fmt_pm)."""
    if not math.isfinite(mu):
        return "-"
    if not (sd > 0):
        return fmt(mu, 4)
    e = math.floor(math.log10(sd)) - 1
    if abs(mu) < 1e-3 or abs(mu) >= 1e5:
        return f"{mu:.3g} ± {sd:.2g}"
    dec = max(0, -e)
    return f"{mu:.{dec}f} ± {sd:.{dec}f}"


def slope_text(b, se):
    return pm(b, se) if math.isfinite(se) else fmt(b)


# ------------------------------------------------------------------ provenance

class Out:
    def __init__(self, dirpath, inputs):
        self.dir = dirpath
        self.inputs = [os.path.join(dirpath, n) for n in inputs]
        self.run = sidecar.Run()

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        tmp = path + ".tmp"
        with open(tmp, "w", newline="") as f:
            f.write(text)
        os.replace(tmp, path)

    def csv(self, name, header, rows, what):
        path = os.path.join(self.dir, name)
        tmp = path + ".tmp"
        with open(tmp, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(header)
            for r in rows:
                w.writerow([repr(x) if isinstance(x, float) else x for x in r])
        os.replace(tmp, path)
        # the sidecar by lnkit's one writer (studies/kit/sidecar.py: lnkit meta)
        meta = dict(file=name, what=what, program="studies/anatomy_summary.py", js_log=LOG,
                    fit="WLS of ln|y| on ln x, weights (|y|/se)^2, se = sd/sqrt(seeds); "
                        "se scaled by sqrt(chi2/dof) when > 1")
        self.run.write(path, inputs=self.inputs, extra=meta)


# ------------------------------------------------------------------ tables

class Table:
    def __init__(self, head, align):
        self.head, self.align, self.rows = head, align, []

    def add(self, row):
        self.rows.append([str(c) for c in row])

    def md(self):
        esc = lambda s: s.replace("|", "\\|")
        out = ["| " + " | ".join(esc(h) for h in self.head) + " |",
               "|" + "|".join(":--" if a == "l" else "--:" for a in self.align) + "|"]
        out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in self.rows]
        return "\n".join(out) + "\n"

    def tex(self, caption, label):
        def esc(s):
            rep = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                   "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                   "^": r"\textasciicircum{}", "|": r"\textbar{}"}
            s = "".join(rep.get(ch, ch) for ch in s)
            return s.replace("±", r"$\pm$").replace("χ²", r"$\chi^2$").replace("‖", r"$\|$")
        out = [r"\begin{table}[ht]", r"\centering", r"\begin{tabular}{" + "".join(self.align) + "}",
               r"\toprule", " & ".join(esc(h) for h in self.head) + r" \\", r"\midrule"]
        out += [" & ".join(esc(c) for c in r) + r" \\" for r in self.rows]
        out += [r"\bottomrule", r"\end{tabular}", r"\caption{" + esc(caption) + "}",
                r"\label{" + label + "}", r"\end{table}"]
        return "\n".join(out) + "\n"


def seeds_text(ext, task):
    """'3 seeds', or '3 seeds (1 at d = 128)' where some widths ran fewer."""
    per = {}
    for r in ext:
        if r["task"] == task:
            per.setdefault((r["norm_pos"], r["norm"], r["qk_norm"], int(r["L"]), int(r["d"])),
                           set()).add(r["seed"])
    counts = [len(v) for v in per.values()]
    if not counts:
        return "0 seeds"
    common = max(set(counts), key=counts.count)
    other = {}
    for k, v in per.items():
        if len(v) != common:
            other.setdefault(len(v), set()).add(k[4])
    extra = "; ".join(f"{n} at d = {', '.join(str(x) for x in sorted(ds))}"
                      for n, ds in sorted(other.items()))
    return f"{common} seed{'s' if common != 1 else ''}" + (f" ({extra})" if extra else "")


# ------------------------------------------------------------------ main

def main(argv):
    d = argv[1] if len(argv) > 1 else "results/anatomy"
    parts = argv[2:] if len(argv) > 2 else ["."]
    names = ["extremes.csv", "mass.csv", "blocknorms.csv", "js.csv"]
    ext, mas, bns, jss = [], [], [], []
    ref, setting, walls, seeds = {}, {}, {}, {}
    for p in parts:
        for lst, n in zip((ext, mas, bns, jss), names):
            lst += read(os.path.join(d, p), n)
        with open(os.path.join(d, p, "extremes.meta.json")) as f:
            extra = json.load(f)
        walls[p] = extra.get("wall_seconds", float("nan"))
        # each task's reference point and settings from the run that computed it
        for task in sorted({r["task"] for r in read(os.path.join(d, p), "extremes.csv")}):
            ref[task] = tuple(extra["lm_ref" if task == "lm" else "s2s_ref"])
            seeds[task] = seeds_text(ext, task)
            setting[task] = (
                f"{task}: {extra['lm_data' if task == 'lm' else 's2s_data']}; h = "
                f"{extra.get('h')}, {seeds[task]}, Lanczos tol {extra.get('tol')} "
                f"(relative), at most {extra.get('eig_steps')} steps; block norms by Hutchinson "
                f"with {extra.get('probes')} probes; SLQ {extra.get('slq_runs')} x "
                f"{extra.get('slq_steps')} per kind block, sigma = "
                f"{extra.get('sigma_fraction')} of the common node range")
    out = Out(d, [os.path.normpath(os.path.join(p, n)) for p in parts
                  for n in names + ["extremes.meta.json"]])
    lm_ref = ref.get("lm", (4, 32))

    # ---- per point quantities: q[(cfg)][name] = list of (seed, value) ----
    Q = {}
    excluded = {}

    def put(cfg, name, v):
        Q.setdefault(cfg, {}).setdefault(name, []).append(v)

    for r in ext:
        cfg = cfg_of(r)
        nm = OPS[r["operator"]] + "_" + r["which"]
        excluded.setdefault((cfg, nm), [0, 0])
        excluded[(cfg, nm)][1] += 1
        if r["converged"] != "1":
            excluded[(cfg, nm)][0] += 1
            continue
        put(cfg, nm, float(r["eigenvalue"]))
        put(cfg, nm + "_relres", float(r["residual"]) / float(r["scale"]))
    # G's bottom relative to its scale (PSD check)
    gb = [float(r["eigenvalue"]) / float(r["scale"]) for r in ext
          if r["operator"] == "ggn" and r["which"] == "bottom"]
    # block norms: per point, kind aggregates over layers (sqrt of sum of squares)
    agg = {}
    for r in bns:
        cfg, seed = cfg_of(r), int(r["seed"])
        k = (r["side"] + "." if r["task"] == "seq2seq" else "") + r["kind"]
        key = (cfg, seed, OPS[r["operator"]])
        a = agg.setdefault(key, {})
        a[k] = a.get(k, 0.0) + float(r["frob"]) ** 2
        if r["kind"] in ("FFN1", "FFN2"):
            kk = k.replace("FFN1", "FFN").replace("FFN2", "FFN")
            a[kk] = a.get(kk, 0.0) + float(r["frob"]) ** 2
    for (cfg, seed, op), a in sorted(agg.items()):
        for k, v in a.items():
            put(cfg, f"{op}_frob_{k}", math.sqrt(v))
        pre = "dec." if cfg[0] == "seq2seq" else ""
        if a.get(pre + "Q", 0) > 0:
            put(cfg, f"{op}_ratio_VQ", math.sqrt(a[pre + "V"] / a[pre + "Q"]))
            put(cfg, f"{op}_ratio_KQ", math.sqrt(a[pre + "K"] / a[pre + "Q"]))
    # JS: mean over pairs and Q-V per point
    jsp = {}
    for r in jss:
        cfg, seed = cfg_of(r), int(r["seed"])
        jsp.setdefault((cfg, seed), []).append((r["block_a"], r["block_b"],
                                                float(r["js_distance"]),
                                                float(r.get("js_scaled", "nan"))))
    for (cfg, seed), prs in sorted(jsp.items()):
        for col, nm in ((2, "JS"), (3, "JSs")):
            vs = [p[col] for p in prs]
            if not all(math.isfinite(v) for v in vs):
                continue
            put(cfg, nm + "_mean", sum(vs) / len(vs))
            put(cfg, nm + "_max", max(vs))
            for p in prs:
                if p[0].endswith("attn.wq") and p[1].endswith("attn.wv") and \
                        ".xattn." not in p[0] and (cfg[0] == "lm" or p[0].startswith("dec")):
                    put(cfg, nm + "_QV", p[col])
    # eigenvector masses by kind, per point
    mk = {}
    for r in mas:
        cfg, seed = cfg_of(r), int(r["seed"])
        key = (cfg, OPS[r["operator"]] + "_" + r["which"], seed)
        m = mk.setdefault(key, {})
        k = kind_of(r["tensor"])
        m[k] = m.get(k, 0.0) + float(r["mass"])
    masssum = [sum(m.values()) for m in mk.values()]

    # ---- curves ----
    curves = []
    stat = {}
    for cfg in sorted(Q):
        for nm in sorted(Q[cfg]):
            xs = Q[cfg][nm]
            mu, sd = mean_sd(xs)
            exc = excluded.get((cfg, nm), [0, len(xs)])
            stat[(cfg, nm)] = (mu, sd, len(xs), exc[0])
            curves.append(list(cfg) + [nm, mu, sd, len(xs), exc[0]])
    out.csv("curves.csv", CFG + ["quantity", "mean", "sd", "n", "n_excluded"], curves,
            "per configuration and quantity: mean and sample sd over seeds (eigenvalues: "
            "converged only; n_excluded unconverged left out)")

    def sweep(task, pos, kind):
        """Configurations of the depth or width sweep, sorted by x."""
        if task not in ref:
            return []
        L0, d0 = ref[task]
        cs = [c for c in Q if c[0] == task and c[1] == pos and c[2] == "layernorm"
              and c[3] == "none" and ((kind == "depth" and c[5] == d0) or
                                      (kind == "width" and c[4] == L0))]
        return sorted(cs, key=lambda c: c[4] if kind == "depth" else c[5])

    # ---- fits ----
    FITQ = ["H_top", "H_bottom", "G_top", "F_top", "F_bottom", "H_frob_Q", "H_frob_K",
            "H_frob_V", "H_frob_O", "H_frob_FFN", "H_ratio_VQ", "G_ratio_VQ", "F_ratio_VQ",
            "JS_mean", "JSs_mean"]
    fits = []
    F = {}
    for task in ("lm", "seq2seq"):
        for kind in ("depth", "width"):
            for pos in ("post", "pre"):
                cs = sweep(task, pos, kind)
                for nm in FITQ:
                    if task == "seq2seq" and nm.startswith("H_frob_"):
                        nm = nm.replace("H_frob_", "H_frob_dec.")
                    pts = [(c[4] if kind == "depth" else c[5],) + stat[(c, nm)]
                           for c in cs if (c, nm) in stat and stat[(c, nm)][2] > 0]
                    if len(pts) < 3:
                        continue
                    xs = [p[0] for p in pts]
                    ys = [p[1] for p in pts]
                    ses = [p[2] / math.sqrt(p[3]) for p in pts]
                    if any(y == 0 for y in ys):
                        continue
                    b, se, red, dof = wls(xs, ys, ses)
                    nexc = sum(p[4] for p in pts)
                    F[(task, kind, pos, nm)] = (b, se, red, dof, min(xs), max(xs), len(pts), nexc)
                    fits.append([task, kind, pos, nm, "L" if kind == "depth" else "d",
                                 min(xs), max(xs), len(pts), b, se, red, dof, nexc])
            # the Post / Pre ratio along the sweep (se by the delta method)
            cpost = sweep(task, "post", kind)
            for nm in ("H_top", "H_bottom", "G_top", "F_top", "F_bottom", "JS_mean", "JSs_mean"):
                pts = []
                for c in cpost:
                    x = c[4] if kind == "depth" else c[5]
                    cp = (c[0], "pre") + c[2:]
                    if (c, nm) in stat and (cp, nm) in stat and stat[(c, nm)][2] > 0 \
                            and stat[(cp, nm)][2] > 0:
                        a, sa, na, ea = stat[(c, nm)]
                        b, sb, nb, eb = stat[(cp, nm)]
                        r = a / b
                        se = abs(r) * math.sqrt((sa / a) ** 2 / na + (sb / b) ** 2 / nb)
                        pts.append((x, r, se, ea + eb))
                if len(pts) < 3:
                    continue
                b_, se_, red, dof = wls([p[0] for p in pts], [p[1] for p in pts],
                                        [p[2] for p in pts])
                xs = [p[0] for p in pts]
                nexc = sum(p[3] for p in pts)
                F[(task, kind, "post/pre", nm)] = (b_, se_, red, dof, min(xs), max(xs),
                                                   len(pts), nexc)
                fits.append([task, kind, "post/pre", nm, "L" if kind == "depth" else "d",
                             min(xs), max(xs), len(pts), b_, se_, red, dof, nexc])
    out.csv("fits.csv", ["task", "sweep", "norm_pos", "quantity", "x", "x_min", "x_max",
                         "n_x", "slope", "se", "chi2_dof", "dof", "n_excluded"], fits,
            "power-law slopes d ln|quantity| / d ln x over the sweep (WLS)")

    # ---- masses at the reference points (and variants) ----
    mrows = []
    MK = {}
    for (cfg, vec, seed), m in mk.items():
        for k, v in m.items():
            MK.setdefault((cfg, vec, k), []).append(v)
    for (cfg, vec, k), xs in sorted(MK.items()):
        mu, sd = mean_sd(xs)
        mrows.append(list(cfg) + [vec, k, mu, sd, len(xs)])
    out.csv("mass.csv" if False else "masskind.csv", CFG + ["vector", "kind", "mean", "sd", "n"],
            mrows, "eigenvector mass by tensor kind (sum of squared entries), mean over seeds")

    # ---- per-layer block norms at the deepest lm depth point and at the s2s ref ----
    lrows = []
    for task in ("lm", "seq2seq"):
        cs = sweep(task, "post", "depth")
        if not cs:
            continue
        Lmax = cs[-1][4] if task == "lm" else ref[task][0]
        dd = ref[task][1]
        acc = {}
        for r in bns:
            c = cfg_of(r)
            if c[0] == task and c[4] == Lmax and c[5] == dd and c[2] == "layernorm" \
                    and c[3] == "none":
                acc.setdefault((r["norm_pos"], r["side"], int(r["layer"]), r["kind"],
                                OPS[r["operator"]]), []).append(float(r["frob"]))
        for (pos, side, l, k, op), xs in sorted(acc.items()):
            mu, sd = mean_sd(xs)
            lrows.append([task, pos, Lmax, dd, side, l, k, op, mu, sd, len(xs)])
    out.csv("layers.csv", ["task", "norm_pos", "L", "d", "side", "layer", "kind", "operator",
                           "mean", "sd", "n"], lrows,
            "per-layer ||A_bb||_F of each weight matrix, mean over seeds")

    # ---- JS matrix at the reference points ----
    jrows = []
    JM = {}
    for r in jss:
        c = cfg_of(r)
        if c[2] == "layernorm" and c[3] == "none" and (c[4], c[5]) == ref[c[0]]:
            for meas, col in (("as_is", "js_distance"), ("scaled", "js_scaled")):
                if col in r:
                    JM.setdefault((c[0], c[1], meas, r["block_a"], r["block_b"]), []).append(
                        float(r[col]))
    for (task, pos, meas, a_, b_), xs in JM.items():
        mu, sd = mean_sd(xs)
        jrows.append([task, pos, meas, a_, b_, mu, sd, len(xs)])
    out.csv("jsmatrix.csv", ["task", "norm_pos", "measure", "block_a", "block_b", "mean", "sd",
                             "n"], jrows,
            "Jensen-Shannon distance (natural log) between kind-block densities, reference "
            "points; measure as_is: the densities as they are; scaled: each block's spectrum "
            "divided by its largest |SLQ node|")

    # ---- values quoted by the README section ----
    V = []

    def val(name, text):
        V.append([name, text])

    for (task, kind, pos, nm), (b, se, red, dof, x0, x1, n, nexc) in sorted(F.items()):
        base = f"{task}.{kind}.{pos.replace('/', '_over_')}.{nm}"
        val(base + ".slope", slope_text(b, se))
        val(base + ".chi2dof", fmt(red, 2))
        val(base + ".range", f"{x0}-{x1}")
    for cfg, qs in sorted(Q.items()):
        tag = f"{cfg[0]}.{cfg[1]}.{cfg[2]}.{cfg[3]}.L{cfg[4]}.d{cfg[5]}"
        for nm in ("H_top", "H_bottom", "G_top", "G_bottom", "F_top", "F_bottom",
                   "H_ratio_VQ", "G_ratio_VQ", "F_ratio_VQ", "H_ratio_KQ", "JS_mean", "JS_max",
                   "JS_QV", "JSs_mean", "JSs_max", "JSs_QV"):
            if (cfg, nm) in stat:
                mu, sd, n, ne = stat[(cfg, nm)]
                val(f"{tag}.{nm}", pm(mu, sd))
                val(f"{tag}.{nm}.n", f"{n}" + (f" ({ne} unconverged left out)" if ne else ""))
    # Post/Pre ratios of the extremes at each configuration pair
    for cfg in sorted(Q):
        if cfg[1] != "post":
            continue
        pc = (cfg[0], "pre") + cfg[2:]
        tag = f"{cfg[0]}.{cfg[2]}.{cfg[3]}.L{cfg[4]}.d{cfg[5]}"
        for nm in ("H_top", "H_bottom", "G_top", "F_bottom"):
            if (cfg, nm) in stat and (pc, nm) in stat:
                a, sa, na, _ = stat[(cfg, nm)]
                b, sb, nb, _ = stat[(pc, nm)]
                r = a / b
                se = abs(r) * math.sqrt((sa / a) ** 2 / na + (sb / b) ** 2 / nb)
                val(f"{tag}.{nm}.post_over_pre", pm(r, se) if se > 0 else fmt(r))
    for task, pos, L_, d_, side, l, k, op, mu, sd, n in lrows:
        val(f"{task}.{pos}.L{L_}.{side}{l}.{k}.{op}_frob", pm(mu, sd))
    # per-layer V/Q ratios (per seed, then mean +- sd) at the layers.csv points
    PL = {}
    for r in bns:
        c = cfg_of(r)
        Lr = max((x[2] for x in lrows if x[0] == c[0]), default=None)
        if Lr is None or c[4] != Lr or c[5] != ref[c[0]][1] or c[2] != "layernorm" \
                or c[3] != "none" or r["side"] != "dec":
            continue
        PL.setdefault((c[0], c[1], int(r["layer"]), OPS[r["operator"]], int(r["seed"])),
                      {})[r["kind"]] = float(r["frob"])
    PR = {}
    for (task, pos, l, op, seed), kd in PL.items():
        if "V" in kd and "Q" in kd:
            PR.setdefault((task, pos, l, op), []).append(kd["V"] / kd["Q"])
    for (task, pos, l, op), xs in sorted(PR.items()):
        val(f"{task}.{pos}.layer{l}.{op}_ratio_VQ", pm(*mean_sd(xs)))
    for (cfg, vec, k), xs in sorted(MK.items()):
        if vec in ("H_top", "H_bottom", "G_top", "F_bottom", "F_top"):
            tag = f"{cfg[0]}.{cfg[1]}.{cfg[2]}.{cfg[3]}.L{cfg[4]}.d{cfg[5]}"
            mu, sd = mean_sd(xs)
            val(f"{tag}.mass.{vec}.{k}", pm(mu, sd))
    for nm in ("H_top", "H_bottom", "G_top", "F_top", "F_bottom"):
        pairs = [(stat[(c, nm)][0], stat[((c[0], "pre") + c[2:], nm)][0]) for c in Q
                 if c[1] == "post" and (c, nm) in stat and ((c[0], "pre") + c[2:], nm) in stat]
        val(f"checks.post_gt_pre.{nm}", f"{sum(abs(a) > abs(b) for a, b in pairs)} of "
                                        f"{len(pairs)}")
    # which part dominates each block: ||F_bb||_F > ||G_bb||_F, counted over every
    # (point, layer) block of a kind
    FG = {}
    for r in bns:
        FG.setdefault((r["task"], r["norm_pos"], r["side"], r["kind"], cfg_of(r), r["seed"],
                       r["layer"]), {})[OPS[r["operator"]]] = float(r["frob"])
    cnt = {}
    for (task, pos, side, kind, *_), v in FG.items():
        c = cnt.setdefault((task, pos, side, kind), [0, 0])
        c[0] += v["F"] > v["G"]
        c[1] += 1
    for (task, pos, side, kind), (a_, n_) in sorted(cnt.items()):
        val(f"checks.F_gt_G.{task}.{pos}.{side}.{kind}", f"{a_} of {n_}")
    val("checks.G_bottom_over_scale_min", f"{min(gb):.2g}")
    val("checks.mass_sum_maxdev", f"{max(abs(s - 1) for s in masssum):.1g}")
    nconv = sum(1 for r in ext if r["converged"] == "1")
    val("checks.converged", f"{nconv} of {len(ext)}")
    unconv = sorted(set(f"{OPS[r['operator']]} {r['which']}" for r in ext
                        if r["converged"] != "1"))
    val("checks.unconverged_kinds", ", ".join(unconv) if unconv else "none")
    val("points", str(len({(cfg_of(r), r["seed"]) for r in ext})))
    for task in sorted(seeds):
        val(f"settings.{task}.seeds", seeds[task])
    for p, w in walls.items():
        val(f"wall_seconds.{os.path.basename(os.path.normpath(p))}", f"{w:.0f}")
    out.csv("values.csv", ["name", "value"], V, "numbers quoted by results/README.md")

    # ---- claims: rows of the citation table at the top of results/README.md ----
    vd = dict(V)
    C = []

    def claim(text, task, file, fmt, *names):
        if all(n in vd for n in names):
            C.append([text, fmt.format(*(vd[n] for n in names)),
                      f"{setting.get(task, task)}; reference point L = {ref[task][0]}, "
                      f"d = {ref[task][1]} (depth sweeps at that d)", file])

    claim("Top Hessian eigenvalue at init, Post-LN vs Pre-LN (anatomy reference point)", "lm",
          "lm/extremes.csv", "{} against {} (mean ± sd over seeds); Post / Pre {} (± se)",
          "lm.post.layernorm.none.L4.d32.H_top", "lm.pre.layernorm.none.L4.d32.H_top",
          "lm.layernorm.none.L4.d32.H_top.post_over_pre")
    claim("Gauss-Newton part above H at the top, functional part below H at the bottom "
          "(Post-LN, anatomy reference point)", "lm", "lm/extremes.csv",
          "top: G {} vs H {}; bottom: F {} vs H {}",
          "lm.post.layernorm.none.L4.d32.G_top", "lm.post.layernorm.none.L4.d32.H_top",
          "lm.post.layernorm.none.L4.d32.F_bottom", "lm.post.layernorm.none.L4.d32.H_bottom")
    for q, label in (("G_top", "G's top eigenvalue"), ("H_bottom", "H's bottom eigenvalue"),
                     ("H_top", "H's top eigenvalue")):
        claim(f"Depth exponent of the Post/Pre ratio of {label}", "lm", "fits.csv",
              "{} (se), chi2/dof {}, L = {}",
              f"lm.depth.post_over_pre.{q}.slope", f"lm.depth.post_over_pre.{q}.chi2dof",
              f"lm.depth.post_over_pre.{q}.range")
    claim("Mass of H's top eigenvector on the query weights, Post-LN / Pre-LN", "lm",
          "lm/mass.csv", "{} / {}", "lm.post.layernorm.none.L4.d32.mass.H_top.Q",
          "lm.pre.layernorm.none.L4.d32.mass.H_top.Q")
    # the per-layer profile is the deepest lm point's (layers.csv)
    Lp = max((x[2] for x in lrows if x[0] == "lm"), default=None)
    if Lp is not None:
        # the block norms, not their ratio: a query block near 0 makes V/Q a
        # division by nearly 0, whose mean and sd over seeds say little
        claim("Query and value block norms ||H_QQ||_F, ||H_VV||_F, first and last layer of a "
              f"{Lp}-layer model (Ormaniec et al.)", "lm", "lm/blocknorms.csv",
              "Post-LN Q {} -> {}, V {} -> {}; Pre-LN Q {} -> {}, V {} -> {}",
              *(f"lm.{pos}.L{Lp}.dec{l}.{k}.H_frob" for pos in ("post", "pre")
                for k in ("Q", "V") for l in (0, Lp - 1)))
    out.csv("claims.csv", ["claim", "value", "setting", "file"], C,
            "rows of the citation table of results/README.md")

    # ---- tables ----
    md = ["# Curvature anatomy at initialisation (studies/anatomy)\n",
          "Settings: " + "; ".join(f"{setting[t]} (reference point L = {ref[t][0]}, d = "
                                   f"{ref[t][1]})" for t in sorted(setting)) +
          ". JS distances in natural log, in [0, sqrt(ln 2) = 0.8326].\n",
          f"Eigenvalues: {nconv} of {len(ext)} converged; unconverged ones are left out of "
          "every mean and fit and counted in the tables (n = converged seeds).\n"]
    tex = []
    # extremes per configuration
    t = Table(["task", "pos", "norm", "qk", "L", "d", "H top", "H bottom", "G top",
               "F top", "F bottom", "n"], "llllrrrrrrrl")
    for cfg in sorted(Q, key=lambda c: (c[0], c[2], c[3], c[4], c[5], c[1])):
        s = lambda nm: pm(*stat[(cfg, nm)][:2]) if (cfg, nm) in stat else "-"
        ns = [stat.get((cfg, nm), (0, 0, 0, 0)) for nm in ("H_top", "H_bottom", "G_top",
                                                            "F_top", "F_bottom")]
        ncount = "/".join(str(x[2]) for x in ns)
        t.add(list(cfg) + [s("H_top"), s("H_bottom"), s("G_top"), s("F_top"), s("F_bottom"),
                           ncount])
    md += ["## Extreme eigenvalues of H, G = J^T H_out J and F = H - G\n",
           "Mean ± sd over seeds; n = converged seeds per column.\n", t.md()]
    tex.append(t.tex("Extreme eigenvalues of H, its Gauss-Newton part G and functional part "
                     "F at initialisation (mean ± sd over seeds)", "tab:anatomy-extremes"))
    # fits
    t = Table(["task", "sweep", "pos", "quantity", "range", "points", "slope ± se", "χ²/dof",
               "excluded"], "lllllrrrr")
    for (task, kind, pos, nm), (b, se, red, dof, x0, x1, n, nexc) in sorted(F.items()):
        t.add([task, kind, pos, nm, f"{'L' if kind == 'depth' else 'd'} {x0}-{x1}", n,
               slope_text(b, se), fmt(red, 2), nexc])
    md += ["## Power-law slopes against depth and width\n",
           "d ln|y| / d ln x by weighted least squares over the sweep's points (weights from "
           "the seed spread); se scaled by sqrt(χ²/dof) when that exceeds 1.\n", t.md()]
    tex.append(t.tex("Slopes of ln|quantity| against ln L (depth) or ln d (width), WLS",
                     "tab:anatomy-fits"))
    # masses
    kinds = ["emb", "Q", "K", "V", "O", "XQ", "XK", "XV", "XO", "FFN", "norm", "out"]
    t = Table(["task", "pos", "norm", "qk", "L", "d", "vector"] + kinds, "lllllll" + "r" * 12)
    for (cfg, vec) in sorted({(c, v) for (c, v, k) in MK}):
        if (cfg[4], cfg[5]) != ref[cfg[0]] or vec == "G_bottom":
            continue
        row = list(cfg) + [vec]
        for k in kinds:
            xs = MK.get((cfg, vec, k))
            row.append(pm(*mean_sd(xs)) if xs else "-")
        t.add(row)
    md += ["## Where the extreme eigenvectors live\n",
           "Mass of the unit eigenvector on each kind of tensor (sum of squared entries over "
           "all layers; weights and biases of a projection together), reference points, mean ± "
           "sd over seeds.\n", t.md()]
    tex.append(t.tex("Eigenvector mass by tensor kind at the reference points",
                     "tab:anatomy-mass"))
    # per-layer block norms
    t = Table(["task", "pos", "side", "layer", "op"] + ["Q", "K", "V", "O", "FFN1", "FFN2"],
              "lllrl" + "r" * 6)
    LR = {}
    for r in lrows:
        LR[(r[0], r[1], r[4], r[5], r[7], r[6])] = (r[8], r[9])
    for (task, pos, side, l, op) in sorted({k[:5] for k in LR}):
        t.add([task, pos, side, l, op] + [pm(*LR[(task, pos, side, l, op, k)])
                                          if (task, pos, side, l, op, k) in LR else "-"
                                          for k in ["Q", "K", "V", "O", "FFN1", "FFN2"]])
    md += ["## Block norms ||A_bb||_F per layer (Ormaniec et al.'s heterogeneity)\n",
           "At the deepest lm depth point and at the seq2seq reference; mean ± sd over seeds; "
           "Hutchinson, each value also has a probe standard error in blocknorms.csv.\n",
           t.md()]
    tex.append(t.tex("Per-layer Frobenius norms of the diagonal blocks of H, G and F",
                     "tab:anatomy-layers"))
    # JS matrices
    for task, pos, meas in [(t_, p_, m_) for t_ in ("lm", "seq2seq") for m_ in ("as_is", "scaled")
                            for p_ in ("post", "pre")]:
            prs = {(a_, b_): mu for (tk, ps, ms, a_, b_, mu, sd, n) in jrows
                   if tk == task and ps == pos and ms == meas}
            if not prs:
                continue
            bl = []
            for a_, b_ in prs:
                for x in (a_, b_):
                    if x not in bl:
                        bl.append(x)
            short = [x.replace(".*.", ".").replace("attn.w", "").replace("ffn.w", "ffn")
                     for x in bl]
            t = Table(["block"] + short, "l" + "r" * len(bl))
            for i, a_ in enumerate(bl):
                t.add([short[i]] + [f"{prs.get((a_, b_), prs.get((b_, a_), 0.0)):.3f}"
                                    for b_ in bl])
            what = ("the densities as they are" if meas == "as_is" else
                    "each spectrum divided by its largest |SLQ node|")
            md += [f"## Jensen-Shannon distances between kind-block spectra ({what}): {task}, "
                   f"{pos}-LN (L = {ref[task][0]}, d = {ref[task][1]}, mean over seeds)\n",
                   t.md()]
            tex.append(t.tex(f"Jensen-Shannon distance between block spectral densities "
                             f"({what}), {task} {pos}-LN", f"tab:anatomy-js-{task}-{pos}-{meas}"))
    md.append("\nChecks: smallest G bottom eigenvalue / scale over all points "
              f"{min(gb):.2g}; largest |sum of tensor masses - 1| "
              f"{max(abs(s - 1) for s in masssum):.1g}.\n")
    out.write("summary.md", "\n".join(md))
    out.write("tables.tex", "% made by studies/anatomy_summary.py from results/anatomy/*.csv\n"
              + "\n".join(tex))

    # ---- plots ----
    gp_extremes(out, lm_ref)
    gp_layers(out, lrows)
    gp_js(out, jrows)


def gp_extremes(out, ref):
    """|H top|, |H bottom|, G top, |F bottom| against L and d, Post vs Pre (lm)."""
    s = ["# made by studies/anatomy_summary.py: curves.csv -> extremes.png",
         "set terminal pngcairo size 1400,900 font ',10' noenhanced",
         "set output 'extremes.png'",
         "set datafile separator ','",
         "set logscale xy",
         "set key top left",
         "set multiplot layout 2,2 title 'lm: extreme eigenvalues at initialisation "
         "(mean and sd over seeds)'"]
    for kind, col, lab in (("depth", 5, "L"), ("width", 6, "d")):
        for pair in (("H_top", "H_bottom"), ("G_top", "F_bottom")):
            s.append(f"set title '{pair[0]}, |{pair[1]}| against {lab}'")
            s.append(f"set xlabel '{lab}'")
            pl = []
            for q in pair:
                for pos, pt in (("post", 7), ("pre", 5)):
                    # filter rows by awk-free gnuplot ternaries on string columns
                    sel = (f"(strcol(1) eq 'lm' && strcol(2) eq '{pos}' && strcol(3) eq "
                           f"'layernorm' && strcol(4) eq 'none' && strcol(7) eq '{q}' && "
                           f"{'$6 == %d' % ref[1] if kind == 'depth' else '$5 == %d' % ref[0]} ? ${col} : NaN)")
                    pl.append(f"'curves.csv' skip 1 using {sel}:(abs($8)):9 with yerrorlines "
                              f"pt {pt} title '{q} {pos}'")
            s.append("plot " + ", \\\n     ".join(pl))
    s.append("unset multiplot")
    text = "\n".join(s) + "\n"
    out.write("extremes.gp", text)


def gp_layers(out, lrows):
    """Per-layer ||H_bb||_F of Q, V, FFN2 at the deepest lm point, Post vs Pre."""
    if not lrows:
        return
    L = lrows[0][2]
    s = ["# made by studies/anatomy_summary.py: layers.csv -> blocknorms.png",
         "set terminal pngcairo size 1200,500 font ',10' noenhanced",
         "set output 'blocknorms.png'",
         "set datafile separator ','",
         "set logscale y",
         "set format y '%g'",
         "set key outside right",
         "set xlabel 'layer'",
         "set ylabel '||H_bb||_F'",
         "set multiplot layout 1,2 title 'lm, L = %d: per-layer Hessian block norms "
         "(Ormaniec et al. heterogeneity)'" % L]
    for pos in ("post", "pre"):
        s.append(f"set title '{pos}-LN'")
        pl = []
        for k, pt in (("Q", 1), ("K", 2), ("V", 4), ("O", 6), ("FFN1", 8), ("FFN2", 10)):
            sel = (f"(strcol(1) eq 'lm' && strcol(2) eq '{pos}' && strcol(7) eq '{k}' && "
                   f"strcol(8) eq 'H' ? $6 : NaN)")
            pl.append(f"'layers.csv' skip 1 using {sel}:9:10 with yerrorlines pt {pt} "
                      f"title '{k}'")
        s.append("plot " + ", \\\n     ".join(pl))
    s.append("unset multiplot")
    out.write("blocknorms.gp", "\n".join(s) + "\n")


def gp_js(out, jrows):
    """JS matrices (lm reference) as heat maps, Post and Pre."""
    rows = [r for r in jrows if r[0] == "lm"]
    if not rows:
        return
    bl = []
    for r in rows:
        for x in (r[3], r[4]):
            if x not in bl:
                bl.append(x)
    idx = {b: i for i, b in enumerate(bl)}
    short = [x.replace(".*.", ".").replace("dec.", "").replace("attn.w", "").replace(
        "ffn.w", "ffn") for x in bl]
    s = ["# made by studies/anatomy_summary.py: jsmatrix.csv -> js.png",
         "set terminal pngcairo size 1200,1000 font ',10' noenhanced",
         "set output 'js.png'",
         "set cbrange [0:0.8326]",
         "set palette rgb 33,13,10",
         "set xtics (" + ", ".join(f"'{n}' {i}" for i, n in enumerate(short)) + ") rotate",
         "set ytics (" + ", ".join(f"'{n}' {i}" for i, n in enumerate(short)) + ")",
         "set multiplot layout 2,2 title 'lm reference: Jensen-Shannon distance between "
         "Hessian kind-block spectra (natural log; max sqrt(ln 2))'"]
    for meas in ("as_is", "scaled"):
        for pos in ("post", "pre"):
            M = [[0.0] * len(bl) for _ in bl]
            for r in rows:
                if r[1] == pos and r[2] == meas:
                    i, j = idx[r[3]], idx[r[4]]
                    M[i][j] = M[j][i] = r[5]
            what = "as is" if meas == "as_is" else "spectra / largest |node|"
            s.append(f"set title '{pos}-LN, {what}'")
            s.append(f"$M{pos}{meas} << EOD")
            s += [" ".join(f"{v:.6f}" for v in row) for row in M]
            s.append("EOD")
            s.append(f"plot $M{pos}{meas} matrix with image notitle")
    s.append("unset multiplot")
    out.write("js.gp", "\n".join(s) + "\n")


if __name__ == "__main__":
    main(sys.argv)
