#!/usr/bin/env python3
"""Numbers quoted in Markdown, taken from the result files, never typed by hand.

Two kinds of marks in a Markdown file:

  <!-- gen:NAME -->            a block (usually a table) made by generator NAME
  ...                          from the files under results/; replaced whole
  <!-- /gen -->

  <!--q:NAME-->TEXT<!--/q-->   one number: TEXT is value NAME, formatted

  <!-- include:PATH -->         a block that is the whole text of file PATH
  ...                          (a table a study's summarising step wrote,
  <!-- /include -->            e.g. results/grad/slopes.md); replaced whole

A value NAME = STUDY.KEY is looked up in results/STUDY/values.csv (columns
name,value; written by that study's summarising step from its raw CSVs, the
value already formatted as quoted) when that file exists; otherwise it is one
of the benchmark values computed below.  tools/check_summaries.sh re-runs the
summarising steps on the committed raw rows and fails where their tables or
values differ from the committed ones, so a value is checked back to the CSVs.

`quotes.py --write FILE...` rewrites the marked parts from the files;
`quotes.py --check FILE...` (make check-results) recomputes them and fails,
naming the file, the mark and both texts, where the Markdown differs.  An
unknown name or a missing result file fails too.  The comments are invisible
in rendered Markdown.

Standard library only: runs with any python3.
"""
import csv
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class QuoteError(Exception):
    pass


def read_csv(rel):
    path = os.path.join(ROOT, rel)
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError as e:
        raise QuoteError(f"{rel}: {e.strerror}") from None


def col(row, key, rel):
    if key not in row or row[key] in (None, ""):
        raise QuoteError(f"{rel}: no column '{key}'")
    return float(row[key])


def fx(x, digits):
    """Fixed-point with `digits` decimals."""
    return f"{x:.{digits}f}"


def pct(x):
    return f"{100 * x:.0f}%"


# ------------------------------------------------------------------ bench

BM = "results/bench/bench_model.csv"
BL = "results/bench/bench_lanczos.csv"
BP = "results/bench/bench_peer.csv"
BMPI = "results/bench/bench_mpi.csv"
BS = "results/bench/bench_span.csv"


def bench_model_rows():
    rows = read_csv(BM)
    if not rows:
        raise QuoteError(f"{BM}: no rows")
    return rows


def opt(row, key, fmt):
    """A column a file from before it existed lacks: '-'."""
    v = row.get(key)
    return "-" if v in (None, "") else fmt(float(v))


def gen_bench_model():
    out = ["| cfg | pos | forward s | gradient s | H v s | H v, primal kept, s | kept / H v "
           "| H v / gradient | gradient % DGEMM | H v % DGEMM | other processes' CPU share |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in bench_model_rows():
        c = lambda k: col(r, k, BM)  # noqa: E731
        out.append(f"| {r['config']} | {r['pos']} | {fx(c('fwd_s'), 4)} | {fx(c('grad_s'), 4)} "
                   f"| {fx(c('hvp_s'), 4)} | {opt(r, 'hvp_kept_s', lambda x: fx(x, 4))} "
                   f"| {opt(r, 'kept_over_hvp', lambda x: fx(x, 2))} "
                   f"| {fx(c('hvp_over_grad'), 2)} "
                   f"| {pct(c('grad_frac_peak'))} | {pct(c('hvp_frac_peak'))} "
                   f"| {opt(r, 'other_cpu_share', pct)} |")
    return "\n".join(out)


def bench_model_value(cfg, pos, key):
    for r in bench_model_rows():
        if r["config"] == cfg and r["pos"] == pos:
            return col(r, key, BM)
    raise QuoteError(f"{BM}: no row config={cfg} pos={pos}")


def peer(measure, tool):
    for r in read_csv(BP):
        if r["measure"] == measure and r["tool"] == tool:
            return float(r["value"])
    raise QuoteError(f"{BP}: no row measure={measure} tool={tool}")


def gen_bench_peer():
    """lnkit against PyTorch + SciPy: (label, PyTorch measure, lnkit measure, decimals)."""
    timed = [("top-5 eigenvalues, tol 1e-6: wall time (s)",
              ("eigs_top5_wall", "torch+scipy"), ("eigs_top5_wall", "lnkit"), 1),
             ("one H v, PyTorch graph reused / lnkit primal pass kept (s)",
              ("hvp_reused_graph", "torch"), ("hvp_primal_kept", "lnkit"), 3),
             ("one H v, PyTorch graph built / lnkit primal pass recomputed (s)",
              ("hvp_fresh_graph", "torch"), ("hvp_recomputed", "lnkit"), 3)]
    out = ["| measure | PyTorch + SciPy | lnkit | lnkit faster by |", "|---|---|---|---|"]
    for k, (label, tm, lm, dig) in enumerate(timed):
        t, l = peer(*tm), peer(*lm)
        out.append(f"| {label} | {fx(t, dig)} | {fx(l, dig)} | {fx(t / l, 2)}x |")
        if k == 0:
            out.append(f"| top-5 eigenvalues: products "
                       f"| {peer('eigs_top5_products', 'torch+scipy'):.0f} "
                       f"| {peer('eigs_top5_products', 'lnkit'):.0f} | |")
    return "\n".join(out)


def gen_bench_lanczos():
    if not os.path.exists(os.path.join(ROOT, BL)):
        return (f"(`{BL}` is not committed yet: `make bench` writes it; the figures of the "
                "Lanczos step come from it.)")
    r = lanczos()
    steps = int(col(r, "steps", BL))
    return "\n".join([
        "| measure | value |", "|---|---|",
        f"| steps | {steps} |",
        f"| product alone (mean of its median before and after the run), s "
        f"| {fx(col(r, 'hv_alone_s', BL), 3)} |",
        *step_split(r, f"mean step over steps 61-{steps}, s"),
        f"| of which first writes to new basis rows left outside the product, s "
        f"| {fx(col(r, 'tail_first_touch_s', BL), 3)} |",
        f"| step / product (target 1.15) | {fx(col(r, 'step_over_hv', BL), 2)} |",
        f"| reorthogonalisations | {col(r, 'n_reorth', BL):.0f} |",
        # full reorthogonalisation: 2 x classical Gram-Schmidt = 4 passes over j rows at step j
        f"| basis rows read (full reorthogonalisation: {2 * steps * (steps + 1)}) "
        f"| {col(r, 'reorth_rows', BL):.0f} |",
        f"| BLAS kernel, threads | {r['kernel']}, {r['threads']} |"] + pretouched(steps))


def gen_bench_span():
    """A block's product over the full one (bench_span), config b: one column
    per placement and kind, the header's layer fraction beside them."""
    rows = [r for r in read_csv(BS) if r["config"] == "b"]
    cols = [(p, k) for p in ("post", "pre") for k in ("hessian", "ggn")]
    blocks = list(dict.fromkeys(r["block"] for r in rows))
    cell = {(r["block"], r["norm_pos"], r["kind"]): r for r in rows}
    name = {"hessian": "H v", "ggn": "G v", "post": "Post-LN", "pre": "Pre-LN"}
    out = ["| block | parameters | " + " | ".join(f"{name[k]}, {name[p]}" for p, k in cols)
           + " | (L - l) / L |", "|---|--:|" + "--:|" * len(cols) + "--:|"]
    for b in blocks:
        first = cell[(b, "pre", "hessian")]
        vals = []
        for p, k in cols:
            r = cell[(b, p, k)]
            vals.append("-" if r["seconds"] == "" else
                        f"{fx(col(r, 'seconds', BS), 3)} s" if b == "*" else fx(col(r, 'over_full', BS), 2))
        exp = first["expected"]
        out.append(f"| `{b}` | {int(first['block_params']):,} | " + " | ".join(vals)
                   + f" | {fx(float(exp), 2) if exp else ''} |")
    share = max(col(r, "other_cpu_share", BS) for r in rows)
    out.append(f"\nOther processes' share of the CPUs during these rows: at most {pct(share)}.")
    return "\n".join(out)


def step_split(r, label):
    """A bench_lanczos row's mean tail step and its split into product and vector work."""
    return [f"| {label} | {fx(col(r, 'tail_step_s', BL), 3)} |",
            f"| of which the product, s | {fx(col(r, 'tail_hv_s', BL), 3)} |",
            f"| of which the vector work, s | {fx(col(r, 'tail_vector_s', BL), 3)} |"]


def pretouched(steps):
    """The rows of the run with the basis written before it, where the file has one."""
    p = lanczos(pretouch=True, optional=True)
    if p is None:
        return []
    return step_split(p, f"the same with the basis written before the run (`--pretouch`, "
                         f"{fx(col(p, 'pretouch_s', BL), 3)} s apart): mean step over steps "
                         f"61-{steps}, s") + [
        f"| step / product without the first writes (`--pretouch`) "
        f"| {fx(col(p, 'step_over_hv', BL), 2)} |"]


def lanczos(pretouch=False, optional=False):
    """The row of bench_lanczos.csv as eigs runs (fresh memory), or the --pretouch one;
    optional: None where the file has no such row."""
    rows = [r for r in read_csv(BL) if r.get("pretouch", "0") == ("1" if pretouch else "0")]
    if optional and not rows:
        return None
    if len(rows) != 1:
        raise QuoteError(f"{BL}: expected one row with pretouch = {int(pretouch)}, "
                         f"found {len(rows)}")
    return rows[0]


def gen_bench_mpi():
    out = ["| ranks x threads | s per H v | s per Lanczos step | communication per H v "
           "| Lanczos basis (80 steps) per rank |", "|---|---|---|---|---|"]
    for r in read_csv(BMPI):
        c = lambda k: col(r, k, BMPI)  # noqa: E731
        mb = c("bytes_per_hvp") / int(r["ranks"]) / 1e6
        comm = "-" if int(r["ranks"]) == 1 else f"{mb:.2f} MB per rank, {fx(c('t_comm_s'), 4)} s"
        out.append(f"| {r['ranks']} x {r['threads']} | {fx(c('t_hvp_s'), 3)} "
                   f"| {fx(c('t_step_s'), 3)} | {comm} | {c('basis_MB_80_steps'):.0f} MB |")
    return "\n".join(out)


BT = "results/bench/bench_model_vs_torch.csv"


def gen_bench_vs_torch():
    out = ["| cfg | pos | lnkit gradient s | PyTorch gradient s | speed-up | lnkit H v s "
           "| PyTorch H v s | speed-up |", "|---|---|---|---|---|---|---|---|"]
    for r in read_csv(BT):
        c = lambda k: col(r, k, BT)  # noqa: E731
        out.append(f"| {r['config']} | {r['pos']} | {fx(c('lnkit_grad_s'), 3)} "
                   f"| {fx(c('torch_grad_s'), 3)} | {fx(c('grad_speedup'), 1)}x "
                   f"| {fx(c('lnkit_hvp_s'), 3)} | {fx(c('torch_hvp_s'), 3)} "
                   f"| {fx(c('hvp_speedup'), 1)}x |")
    return "\n".join(out)


def mpi_row(ranks, threads):
    for r in read_csv(BMPI):
        if int(r["ranks"]) == ranks and int(r["threads"]) == threads:
            return r
    raise QuoteError(f"{BMPI}: no row ranks={ranks} threads={threads}")


def mpi_value(key):
    r11, r12, r21 = mpi_row(1, 1), mpi_row(1, 2), mpi_row(2, 1)
    t11, t12, t21 = (col(r, "t_hvp_s", BMPI) for r in (r11, r12, r21))
    imb = col(r21, "imbalance_padded", BMPI)
    comm = col(r21, "t_comm_s", BMPI)
    model = t11 / 2 * imb + comm
    s2 = t11 / t12
    table = {
        "pairs": f"{col(r11, 'pairs', BMPI):.0f}",
        "scored_tokens": f"{col(r11, 'scored_tokens', BMPI):.0f}",
        "chunks": f"{col(r11, 'chunks', BMPI):.0f}",
        "n_params_M": f"{col(r11, 'n_params', BMPI) / 1e6:.2f}",
        "t11": fx(t11, 3), "t21": fx(t21, 3), "comm21": fx(comm, 4),
        "speedup_threads": fx(s2, 2), "speedup_ranks": fx(t11 / t21, 2),
        # Amdahl: S = 1 / (f + (1 - f) / 2) on 2 threads, so f = 2 / S - 1
        "amdahl_serial": fx(2 / s2 - 1, 2),
        "imbalance": fx(imb, 3), "model2": fx(model, 3),
        "model2_dev": f"{100 * (model - t21) / t21:+.1f}%",
        "exchange_GBps": fx(col(r21, "bytes_per_hvp", BMPI) / 2 / comm / 1e9, 1),
    }
    if key not in table:
        raise QuoteError(f"unknown quote 'bench_mpi.{key}'")
    return table[key]


PM = "results/bench/bench_peer.meta.json"


def m30k_value(key):
    import json
    try:
        with open(os.path.join(ROOT, PM)) as f:
            rows = json.load(f)["multi30k"]
    except (OSError, KeyError, ValueError) as e:
        raise QuoteError(f"{PM}: no multi30k rows ({e})") from None
    first = next(r for r in rows if r["product"] == "1")
    kept = next(r for r in rows if r["product"] == "2")
    n = float(first["n_params"])
    t1, t2 = float(first["seconds"]), float(kept["seconds"])
    steps = 80
    table = {
        "n_params_M": f"{n / 1e6:.1f}", "pairs": first["pairs"], "chunks": first["chunks"],
        "cached_chunks": kept["cached_chunks"], "cache_GB": fx(float(kept["cache_mb"]) / 1e3, 1),
        "maxrss_GB": fx(float(kept["maxrss_mb"]) / 1e3, 1),
        "first_s": f"{t1:.0f}", "kept_s": f"{t2:.0f}",
        "exchange_MB": f"{16 * n / 1e6:.0f}",            # 16 n bytes per rank per H v
        "exchange_10gbit_s": fx(16 * n * 8 / 10e9, 2),   # on a 10 Gbit/s link
        "basis_GB": f"{(steps + 1) * n * 8 / 1e9:.0f}",  # (m + 1) n doubles
        "basis_32_GB": fx((steps + 1) * n * 8 / 1e9 / 32, 2),
        # 32 single-thread ranks: one thread about twice the 2-thread time
        "t32_kept_s": f"{2 * t2 / 32 + 16 * n * 8 / 10e9 * 31 / 32:.1f}",
    }
    if key not in table:
        raise QuoteError(f"unknown quote 'm30k.{key}'")
    return table[key]


def kept_share_predicted(B=16, T=32, d=256, h=4, L=6, d_ff=1024, V=4000):
    """The tangent passes' share of the H v flops, (6 F_lin + 6.5 F_att) /
    (8 F_lin + 9.5 F_att), with F_lin and F_att as in bench/bench_model.c."""
    R = B * T
    f_lin = 2 * R * (4 * d * d + 2 * d * d_ff) * L + 2 * R * d * V
    f_att = 2 * 2 * B * h * T * T * (d / h) * L
    return (6 * f_lin + 6.5 * f_att) / (8 * f_lin + 9.5 * f_att)


def gen_bench_targets():
    """Issue 14's targets against the files."""
    def row(target, measured, ok):
        return f"| {target} | {measured} | {'met' if ok else 'missed'} |"
    out = ["| target (config b, 2 threads) | measured | |", "|---|---|---|"]
    sp = peer("eigs_top5_speedup", "lnkit")
    out.append(row("top-5 eigenvalues at least 4x faster than PyTorch + SciPy", f"{fx(sp, 2)}x",
                   sp >= 4))
    for pos in ("post", "pre"):
        f = bench_model_value("b", pos, "hvp_frac_peak")
        out.append(row(f"one H v ({pos}-LN, primal pass recomputed) at least 60% of DGEMM",
                       pct(f), f >= 0.60))
    pred = kept_share_predicted()
    for pos in ("post", "pre"):
        k = bench_model_value("b", pos, "kept_over_hvp")
        out.append(row(f"H v with the primal pass kept ({pos}-LN) below the recomputed one by "
                       f"the primal share: at most {fx(pred, 2)} of it (tangent flops' share)",
                       fx(k, 2), k <= pred))
    st = col(lanczos(), "step_over_hv", BL)
    out.append(row("Lanczos step at steps 61-80 at most 1.15x the product", f"{fx(st, 2)}x",
                   st <= 1.15))
    return "\n".join(out)


# ------------------------------------------------------------------ claims

def gen_claims():
    """The citation table at the top of results/README.md: every study's
    claims.csv (id, claim, value, verdict, rule, method, setting, file; written
    by its summary, studies/summary/writer.py): the estimate with its 95%
    interval and the words the interval allows (docs/statistics.md)."""
    import glob
    rows = []
    for path in sorted(glob.glob(os.path.join(ROOT, "results", "*", "claims.csv"))):
        rel = os.path.relpath(path, ROOT)
        for r in read_csv(rel):
            for k in ("claim", "value", "verdict", "rule", "file"):
                if not r.get(k):
                    raise QuoteError(f"{rel}: a row without '{k}'")
            if not r["file"].startswith("results/"):  # relative to its own directory
                r["file"] = os.path.join(os.path.dirname(rel), r["file"])
            rows.append(r)
    if not rows:
        raise QuoteError("no results/*/claims.csv")

    def cell(x):
        return x.replace("|", "\\|")

    out = ["| claim | estimate [95% CI] | verdict | rule | file |", "|---|---|---|---|---|"]
    out += [f"| {cell(r['claim'])} | {cell(r['value'])} | **{cell(r['verdict'])}** "
            f"| {cell(r['rule'])} | `{r['file']}` |" for r in rows]
    return "\n".join(out)


GENERATORS = {
    "claims": gen_claims,
    "bench_targets": gen_bench_targets,
    "bench_vs_torch": gen_bench_vs_torch,
    "bench_lanczos": gen_bench_lanczos,
    "bench_span": gen_bench_span,
    "bench_model": gen_bench_model,
    "bench_peer": gen_bench_peer,
    "bench_mpi": gen_bench_mpi,
}


_VALUES = {}


def study_value(name):
    """STUDY.KEY from results/STUDY/values.csv, or None if STUDY has no such file."""
    study, _, key = name.partition(".")
    rel = f"results/{study}/values.csv"
    if not key or not os.path.exists(os.path.join(ROOT, rel)):
        return None
    if rel not in _VALUES:
        table = {}
        for row in read_csv(rel):
            if "name" not in row or "value" not in row:
                raise QuoteError(f"{rel}: expected columns name,value")
            if row["name"] in table:
                raise QuoteError(f"{rel}: value '{row['name']}' given twice")
            table[row["name"]] = row["value"]
        _VALUES[rel] = table
    if key not in _VALUES[rel]:
        raise QuoteError(f"unknown quote '{name}' ({rel} has no '{key}')")
    return _VALUES[rel][key]


def value(name):
    """The formatted value of an inline quote."""
    v = study_value(name)
    if v is not None:
        return v
    m = re.fullmatch(r"bench_model\.([ab])\.(post|pre)\.(\w+)", name)
    if m:
        cfg, pos, key = m.groups()
        x = bench_model_value(cfg, pos, key)
        if key.endswith("_frac_peak") or key == "other_cpu_share":
            return pct(x)
        if key.endswith("_s"):
            return fx(x, 4)
        return fx(x, 2) if "over" in key else fx(x, 1)
    if name == "bench_model.dgemm_gflops":
        return fx(col(bench_model_rows()[0], "dgemm_gflops", BM), 1)
    m = re.fullmatch(r"bench_mpi\.(\w+)", name)
    if m:
        return mpi_value(m.group(1))
    m = re.fullmatch(r"m30k\.(\w+)", name)
    if m:
        return m30k_value(m.group(1))
    m = re.fullmatch(r"bench_lanczos\.(\w+)", name)
    if m:
        r, key = lanczos(), m.group(1)
        if key in ("n_reorth", "reorth_rows", "steps"):
            return f"{col(r, key, BL):.0f}"
        if key == "full_reorth_rows":  # 4 passes over j rows at step j = 1..steps
            s = int(col(r, "steps", BL))
            return f"{2 * s * (s + 1):.0f}"
        if key == "step_over_hv":
            return fx(col(r, key, BL), 2)
        if key == "kernel":
            return r["kernel"]
        return fx(col(r, key, BL), 3)
    m = re.fullmatch(r"bench_peer\.(\w+)\.([\w+]+)", name)
    if m:
        measure, tool = m.groups()
        x = peer(measure, tool)
        if "speedup" in measure:
            return fx(x, 2)
        if "products" in measure or "chunks" in measure:
            return f"{x:.0f}"
        if "agreement" in measure:
            return f"{x:.1e}"
        return fx(x, 1) if x >= 10 else fx(x, 3)
    raise QuoteError(f"unknown quote '{name}'")


GEN_RE = re.compile(r"(<!-- gen:([\w.-]+) -->\n)(.*?)(<!-- /gen -->)", re.S)
Q_RE = re.compile(r"(<!--q:([\w.+-]+)-->)(.*?)(<!--/q-->)", re.S)
INC_RE = re.compile(r"(<!-- include:([\w./-]+) -->\n)(.*?)(<!-- /include -->)", re.S)


def included(rel):
    path = os.path.normpath(os.path.join(ROOT, rel))
    if not path.startswith(ROOT + os.sep):
        raise QuoteError(f"include '{rel}' is outside the repository")
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise QuoteError(f"include '{rel}': {e.strerror}") from None
    return text if text.endswith("\n") else text + "\n"


def process(path, write):
    with open(path) as f:
        text = f.read()
    problems = []

    def gen(m):
        name = m.group(2)
        if name not in GENERATORS:
            raise QuoteError(f"{path}: unknown generator '{name}'")
        new = GENERATORS[name]() + "\n"
        if new != m.group(3):
            problems.append(f"{path}: block '{name}' differs from its files")
        return m.group(1) + new + m.group(4)

    def quote(m):
        new = value(m.group(2))
        if new != m.group(3):
            problems.append(f"{path}: '{m.group(2)}' reads {m.group(3)!r}, the files give {new!r}")
        return m.group(1) + new + m.group(4)

    def inc(m):
        new = included(m.group(2))
        if new != m.group(3):
            problems.append(f"{path}: block 'include:{m.group(2)}' differs from the file")
        return m.group(1) + new + m.group(4)

    out = Q_RE.sub(quote, INC_RE.sub(inc, GEN_RE.sub(gen, text)))
    if write and out != text:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(out)
        os.replace(tmp, path)
    return problems, (len(GEN_RE.findall(text)) + len(Q_RE.findall(text))
                      + len(INC_RE.findall(text)))


def main(argv):
    if len(argv) < 2 or argv[0] not in ("--check", "--write"):
        print("usage: quotes.py --check|--write FILE.md...", file=sys.stderr)
        return 2
    write = argv[0] == "--write"
    bad = 0
    for path in argv[1:]:
        try:
            problems, n = process(path, write)
        except (QuoteError, OSError) as e:
            print(f"quotes: {e}", file=sys.stderr)
            return 2
        if problems and not write:
            for p in problems:
                print(f"quotes: {p}", file=sys.stderr)
            bad = 1
        print(f"quotes: {path}: {n} marks {'written' if write else 'checked'}"
              + (f", {len(problems)} differ" if problems else ""))
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
