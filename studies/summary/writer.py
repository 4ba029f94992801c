"""What a study summary writes, one way for every study (studies/summary/__main__.py).

A study module reads its raw rows (read, sidecar_of), computes with stats.py and
hands its results to a Summary, which writes into the study's directory:
  NAME.md, NAME.tex   every table, Markdown and LaTeX (booktabs, caption, label);
  NAME.pdf, NAME.png  every figure (vector PDF for papers, PNG for the Markdown);
  NAME.csv            plot data and fits, each with its .meta.json (lnkit meta);
  values.csv          name,value: every number results/README.md quotes;
  claims.csv          one row per claim: its words, estimate and 95% interval, the
                      rule (null and margin), the method, the setting, the file;
  summary.md          setting, claims, tables and figures in one page;
  report.json         what the report (studies/summary/report.py) needs: title,
                      setting, command, the tables' and figures' names and captions.
Everything but the sidecars and figures is a deterministic function of the raw rows
(tools/check_summaries.sh compares it).  Errors: SummaryError, one line.
"""
import csv
import hashlib
import json
import os
import re

from . import sidecar
from . import stats as S

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_INPUTS = 64   # lnkit meta takes at most 79 --input files (src/cli/cmd_meta.c)


class SummaryError(Exception):
    pass


def read(d, name, need=()):
    """The rows of d/name as dicts (text), or SummaryError naming the file."""
    path = os.path.join(d, name)
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise SummaryError(f"{path}: {e.strerror}") from None
    if not rows:
        raise SummaryError(f"{path}: no rows")
    miss = [c for c in need if c not in rows[0]]
    if miss:
        raise SummaryError(f"{path}: no column '{miss[0]}'")
    return rows


def sidecar_of(d, name):
    """The sidecar of d/NAME.csv as a dict."""
    path = os.path.join(d, os.path.splitext(name)[0] + ".meta.json")
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise SummaryError(f"{path}: {getattr(e, 'strerror', None) or e}") from None


def fnum(r, key, where=""):
    """Field key of row r as a float, or SummaryError."""
    try:
        return float(r[key])
    except (KeyError, TypeError, ValueError):
        raise SummaryError(f"{where}: field '{key}' = {r.get(key)!r}, expected a number") \
            from None


def _tex(s):
    rep = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
           "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
           "^": r"\textasciicircum{}"}
    s = "".join(rep.get(c, c) for c in str(s))
    for a, b in (("±", r"$\pm$"), ("χ²", r"$\chi^2$"), ("≤", r"$\le$"), ("≥", r"$\ge$"),
                 ("×", r"$\times$"), ("→", r"$\to$"), ("−", "-"), ("‖", r"$\|$"),
                 ("√", r"$\surd$"), ("λ", r"$\lambda$")):
        s = s.replace(a, b)
    return s


def columns(align):
    """The columns of a LaTeX column spec: 'l', 'r', 'c' or 'p{width}' (left in Markdown),
    each perhaps after '>{declarations}' (the array package's)."""
    return re.findall(r"(?:>\{[^}]*\})?(?:[lcr]|p\{[^}]*\})", align)


def table_md(head, rows, align):
    esc = lambda s: str(s).replace("|", "\\|")  # noqa: E731
    out = ["| " + " | ".join(esc(h) for h in head) + " |",
           "|" + "|".join("--:" if a[-1] == "r" else ":--" for a in columns(align)) + "|"]
    out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def table_tex(head, rows, align, caption, label, source, wide=False):
    """A booktabs table float (longtable past 40 rows), ready to \\input; source
    (STUDY/NAME) goes to \\lnksource, which prints nothing unless defined (the
    report prints it).  Past 7 columns it is scaled to the line's width; wide: shrunk to
    it where wider, whatever its columns."""
    body = [" & ".join(_tex(h) for h in head) + r" \\", r"\midrule"]
    body += [" & ".join(_tex(c) for c in r) + r" \\" for r in rows]
    cap = r"\caption{" + _tex(caption) + r"}\label{" + label + "}"
    src = r"\providecommand{\lnksource}[1]{}\lnksource{" + source + "}"
    if len(rows) > 40:
        return "\n".join([r"{\footnotesize\setlength\tabcolsep{3pt}",
                          r"\begin{longtable}{" + align + "}", cap + r"\\", r"\toprule"]
                         + body + [r"\bottomrule", r"\end{longtable}}", src]) + "\n"
    tab = [r"\begin{tabular}{" + align + "}", r"\toprule"] + body + [r"\bottomrule",
                                                                    r"\end{tabular}"]
    if wide:   # shrunk to the line where wider, never enlarged
        tab = [r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%"] + tab + \
            ["}"]
    elif len(head) > 7:
        tab = [r"\resizebox{\linewidth}{!}{%"] + tab + ["}"]
    return "\n".join([r"\begin{table}[htbp]", r"\centering\small"] + tab + [cap, src,
                      r"\end{table}"]) + "\n"


class Summary:
    """One study's summary: collect, then close() writes everything.
    raw: the raw CSVs read (names in d), recorded in every sidecar."""

    def __init__(self, study, d, title, setting, command, raw, module):
        self.study, self.d, self.title, self.setting = study, d, title, setting
        self.command, self.raw = command, list(raw)
        self.values, self.claims, self.tables, self.figures = {}, [], [], []
        code = [os.path.join(HERE, f) for f in ("stats.py", "writer.py", module + ".py")]
        self.inputs = [os.path.relpath(p) for p in code] + \
            [os.path.join(d, n) for n in self.raw]
        self.run = sidecar.Run(argv=["python3", "-m", "studies.summary", study, d], script=False)

    def path(self, name):
        return os.path.join(self.d, name)

    def write(self, name, text):
        tmp = self.path(name) + ".tmp"
        with open(tmp, "w", newline="") as f:
            f.write(text)
        os.replace(tmp, self.path(name))

    def value(self, name, text):
        if name in self.values:
            raise SummaryError(f"{self.study}: value '{name}' given twice")
        self.values[name] = str(text)

    def claim(self, cid, text, e, file, null=0.0, margin=None, words=("grows", "shrinks", "flat"),
              how="", unit=""):
        """A claim: its words from e's interval (stats.verdict), its value with the
        interval; values CID (the estimate) and CID.verdict for the prose."""
        word = S.verdict(e, null, margin, *words)
        rule = f"null {null:.4g}"
        if margin is not None:
            band = margin if isinstance(margin, tuple) else (null - margin, null + margin)
            rule += f"; margin ({band[0]:.3g}, {band[1]:.3g})"
        val = S.ci(e, unit)
        self.value(cid, val)
        self.value(cid + ".verdict", word)
        self.claims.append([cid, text, val, word, rule, how, self.setting, file])
        return word

    def fit_claim(self, cid, text, f, file, xname, **kw):
        """claim() for a Fit: the method states its points, dof, the source of the
        variance, the largest leverage and the leave-one-out range."""
        self.value(cid + ".chi2dof", S.num(f.chi2dof, 2))
        self.value(cid + ".loo", loo_text(f, xname))
        return self.claim(cid, text, f.slope, file, how=fit_how(f, xname), **kw)

    def table(self, name, caption, head, rows, align=None, wide=False):
        align = align or "l" + "r" * (len(head) - 1)
        rows = [[str(c) for c in r] for r in rows]
        self.write(name + ".md", table_md(head, rows, align))
        self.write(name + ".tex", table_tex(head, rows, align, caption,
                                            f"tab:{self.study}-{name}", f"{self.study}/{name}",
                                            wide))
        self.tables.append((name, caption, head, rows, align))

    def figure(self, name, caption, fig):
        from . import plots
        plots.save(fig, self.path(name))
        self.figures.append((name, caption))

    def csv(self, name, head, rows, what):
        tmp = self.path(name) + ".tmp"
        with open(tmp, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(head)
            w.writerows([[repr(x) if isinstance(x, float) else x for x in r] for r in rows])
        os.replace(tmp, self.path(name))
        extra = {"study": self.study, "what": what, "summarises": self.raw,
                 "method": "docs/statistics.md"}
        inputs = self.inputs
        if len(inputs) > MAX_INPUTS:   # the code as inputs, the raw rows' digests here
            inputs = [p for p in inputs if not p.startswith(self.d + os.sep)]
            extra["summarises_sha256"] = {n: sha256(os.path.join(self.d, n)) for n in self.raw}
        self.run.write(self.path(name), inputs=inputs, extra=extra)

    def close(self):
        self.csv("values.csv", ["name", "value"], sorted(self.values.items()),
                 "every number results/README.md quotes, formatted as quoted")
        self.csv("claims.csv", ["id", "claim", "value", "verdict", "rule", "method", "setting",
                                "file"], self.claims,
                 "the study's claims: value [95% CI], the words from the interval")
        md = [f"# {self.title}\n", f"Setting: {self.setting}.\n",
              f"Remade by `{self.command}`; the summary by "
              f"`python3 -m studies.summary {self.study} results/{self.study}`.\n",
              "## Claims\n",
              "Estimate [95% CI]; the words by the rule of docs/statistics.md.\n",
              table_md(["claim", "value [95% CI]", "verdict", "rule", "method", "file"],
                       [[c[1], c[2], c[3], c[4], c[5], c[7]] for c in self.claims],
                       "llllll")]
        for name, cap, head, rows, align in self.tables:
            md += [f"## {cap}\n", f"`{name}.md`, `{name}.tex`\n", table_md(head, rows, align)]
        for name, cap in self.figures:
            md += [f"## Figure: {name}\n", f"![{name}]({name}.png)\n", f"{cap} (`{name}.pdf`)\n"]
        self.write("summary.md", "\n".join(md))
        rep = {"study": self.study, "title": self.title, "setting": self.setting,
               "command": self.command, "raw": self.raw,
               "tables": [[t[0], t[1]] for t in self.tables], "figures": self.figures}
        self.write("report.json", json.dumps(rep, indent=1, ensure_ascii=False) + "\n")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def fit_how(f, xname):
    pts = ", ".join(f"{xname} = {p:g}: {lev:.2f}" for p, lev in zip(f.points, f.leverage))
    chi = "" if f.chi2dof != f.chi2dof else f", χ²/dof {S.num(f.chi2dof, 2)}"
    return (f"{f.n_obs} seeds at {len(f.points)} points, {S.num(f.slope.dof, 2)} dof, variance "
            f"from the {f.source}{chi}; leverage {pts}; {loo_text(f, xname)}")


def loo_text(f, xname):
    """'without one point: lo to hi (without x = X: v)' for the point that moves it most."""
    ok = [(abs(v - f.slope.value), p, v) for p, v in zip(f.points, f.loo) if v == v]
    if not ok:
        return "leave-one-out: too few points"
    vs = [v for _, _, v in ok]
    _, p, v = max(ok)
    return (f"leave one {xname} out: {S.num(min(vs))} to {S.num(max(vs))} (without "
            f"{xname} = {p:g}: {S.num(v)})")
