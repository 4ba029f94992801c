"""The report: one LaTeX document of every study under results/, built from
results/ alone (make report -> out/report/report.pdf).

Per study (its report.json, claims.csv, sidecars, and its section of
results/README.md for the discussion): the setting, the claims with their 95%
intervals and verdicts, every table (\\input of its NAME.tex, as a paper would
take it) and figure (its NAME.pdf) with caption and source file, and the
provenance (commits and commands of the raw rows).  The method is
docs/statistics.md's.  pdflatex runs twice (references); its log stays in OUT.
"""
import csv
import json
import os
import re
import shutil
import subprocess

from .writer import SummaryError, _tex

PREAMBLE = r"""\documentclass[10pt,a4paper]{article}
\usepackage[T1]{fontenc}
\usepackage{lmodern}
\usepackage[margin=2cm]{geometry}
\usepackage{booktabs,longtable,graphicx,array}
\usepackage[hidelinks]{hyperref}
\DeclareUnicodeCharacter{00B1}{$\pm$}
\newcommand{\lnksource}[1]{\par\smallskip{\footnotesize Source: \texttt{\detokenize{results/#1.tex}}}}
\setlength{\parindent}{0pt}\setlength{\parskip}{4pt}
\title{lnkit: the studies' results}
\author{built from results/ by \texttt{make report}}
\date{}
\begin{document}
\maketitle
"""


def md_inline(s):
    """Markdown inline text -> LaTeX: escapes, **bold**, *italic*, `code`, links."""
    out, pos = [], 0
    for m in re.finditer(r"`([^`]+)`|\*\*([^*]+)\*\*|\*([^*]+)\*|\[([^\]]+)\]\([^)]+\)", s):
        out.append(_tex(s[pos:m.start()]))
        code, bold, it, link = m.groups()
        out.append(r"\texttt{" + _tex(code) + "}" if code else r"\textbf{" + _tex(bold) + "}"
                   if bold else r"\emph{" + _tex(it) + "}" if it else _tex(link))
        pos = m.end()
    return "".join(out) + _tex(s[pos:])


def md_block(text):
    """A README section (paragraphs and '- ' lists; tables and images are the
    summary's own and are left out) -> LaTeX."""
    text = re.sub(r"<!--q:[^>]*-->|<!--/q-->", "", text)
    text = re.sub(r"<!-- include:.*?<!-- /include -->\n?", "", text, flags=re.S)
    out, item, para, inlist = [], [], [], False
    for line in text.split("\n") + [""]:
        if line.startswith(("|", "![")):
            continue
        if line.startswith("- ") or not line.strip():
            if item:
                out.append(r"\item " + md_inline(" ".join(item)))
                item = []
            if para:
                out.append(md_inline(" ".join(para)) + "\n")
                para = []
            if line.startswith("- "):
                if not inlist:
                    out.append(r"\begin{itemize}")
                    inlist = True
                item = [line[2:].strip()]
            elif inlist:
                out.append(r"\end{itemize}")
                inlist = False
        elif item:
            item.append(line.strip())
        else:
            para.append(line.strip())
    return "\n".join(out)


def readme_sections(path):
    """{study: its section's text} from results/README.md ('## STUDY/ ...')."""
    with open(path) as f:
        parts = re.split(r"^## ", f.read(), flags=re.M)
    return {p.split("/", 1)[0]: p.split("\n", 1)[1] for p in parts[1:] if "/" in p.split()[0]}


def provenance(d, raw):
    """The raw rows' commits (with how many files each) and their wall time."""
    commits, secs = {}, 0.0
    for f in raw:
        m = os.path.join(d, os.path.splitext(f)[0] + ".meta.json")
        try:
            with open(m) as fh:
                j = json.load(fh)
        except (OSError, ValueError) as e:
            raise SummaryError(f"{m}: {e}") from None
        c = j.get("git_commit") or "unknown"
        commits[c[:7] + ("-dirty" if c.endswith("-dirty") else "")] = \
            commits.get(c[:7] + ("-dirty" if c.endswith("-dirty") else ""), 0) + 1
        secs += float(j.get("wall_seconds") or 0)
    return commits, secs


def study_tex(study, d, section):
    with open(os.path.join(d, "report.json")) as f:
        rep = json.load(f)
    with open(os.path.join(d, "claims.csv"), newline="") as f:
        claims = list(csv.DictReader(f))
    commits, secs = provenance(d, rep["raw"])
    out = [r"\clearpage", r"\section{" + _tex(rep["title"]) + r"}\label{sec:" + study + "}",
           r"\textbf{Setting.} " + _tex(rep["setting"]) + ".",
           r"\textbf{Provenance.} " + f"{len(rep['raw'])} raw files in \\texttt{{{_tex(d)}}}, "
           "made at commit" + ("s " if len(commits) > 1 else " ") +
           ", ".join(f"\\texttt{{{_tex(c)}}} ({n})" for c, n in sorted(commits.items())) +
           f" in {secs / 60:.0f} min ({secs:.0f} s) of wall time (their sidecars); remade by "
           "\\texttt{" +
           _tex(rep["command"]) + r"}, summarised by \texttt{python3 -m studies.summary " +
           _tex(study) + " " + _tex(d) + "}.",
           r"\subsection*{Claims}",
           r"{\footnotesize\begin{longtable}{>{\raggedright}p{5.2cm}p{3.3cm}"
           r">{\raggedright}p{2.6cm}>{\raggedright\arraybackslash}p{5.2cm}}",
           r"\toprule claim & estimate [95\% CI] & verdict & rule; method \\ \midrule\endhead"]
    for c in claims:
        out.append(" & ".join([_tex(c["claim"]), _tex(c["value"]), r"\textbf{" +
                               _tex(c["verdict"]) + "}", _tex(c["rule"] + "; " + c["method"])])
                   + r" \\")
    out += [r"\bottomrule\end{longtable}}\addtocounter{table}{-1}"]
    if section:
        out += [r"\subsection*{Discussion}", "{\\small (results/README.md)\\par}",
                md_block(section)]
    for name, _ in rep["tables"]:
        out.append(r"\input{" + os.path.join(d, name) + ".tex}")
    for name, cap in rep["figures"]:
        out += [r"\begin{figure}[htbp]\centering",
                r"\includegraphics[width=\linewidth,height=0.42\textheight,keepaspectratio]{" +
                os.path.join(d, name) + ".pdf}",
                r"\caption{" + _tex(cap) + r"}\label{fig:" + study + "-" + name + "}",
                r"\par\smallskip{\footnotesize Source: \texttt{" + _tex(os.path.join(d, name)) +
                ".pdf}}", r"\end{figure}"]
    out.append(r"\clearpage")
    return "\n".join(out)


def build(out_dir, results="results"):
    from .__main__ import STUDIES
    if not shutil.which("pdflatex"):
        raise SummaryError("pdflatex not found (make report installs Debian's TeX)")
    os.makedirs(out_dir, exist_ok=True)
    sections = readme_sections(os.path.join(results, "README.md"))
    body = [PREAMBLE, r"\section*{How to read this report}",
            "Each section is one study under \\texttt{results/}: its setting, its claims with "
            "their 95\\% confidence intervals and the verdict the interval allows (the rule and "
            "the statistics are those of \\texttt{docs/statistics.md}: seeds are the replicates, "
            "trends are fitted to the per-seed values with the seed scatter pooled across the "
            "sweep, words only where the interval excludes the null or lies inside the stated "
            "margin), the discussion of \\texttt{results/README.md}, every table and figure with "
            "its source file, and the provenance of the raw rows. Tables are \\texttt{results/"
            "STUDY/NAME.tex} (booktabs) and figures \\texttt{results/STUDY/NAME.pdf} as they are: "
            "a paper can take them unchanged.", r"\tableofcontents"]
    for study in STUDIES:
        d = os.path.join(results, study)
        if not os.path.isfile(os.path.join(d, "report.json")):
            raise SummaryError(f"{d}/report.json: missing (python3 -m studies.summary {study})")
        body.append(study_tex(study, d, sections.get(study)))
    body.append(r"\end{document}")
    tex = os.path.join(out_dir, "report.tex")
    with open(tex, "w") as f:
        f.write("\n".join(body) + "\n")
    for _ in range(2):
        r = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error",
                            "-output-directory", out_dir, tex], capture_output=True, text=True)
        if r.returncode:
            tail = "\n".join(r.stdout.splitlines()[-15:])
            raise SummaryError(f"pdflatex failed on {tex} (log {out_dir}/report.log):\n{tail}")
    print(f"report: {out_dir}/report.pdf")
    return 0
