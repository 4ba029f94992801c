"""make report's document (studies/summary/report.py) built from the committed
results/: every study has its section; every table of a study's report.json is
\\input from its .tex, which has a caption and names its source; every figure is
included from its PDF with a caption and its source; every claim of claims.csv is in
the claims table; the PDF has pages and its text names every study.

    python3 -m pytest tests/summary/test_report.py    (needs pdflatex: make report)
"""
import csv
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
from studies.summary.__main__ import STUDIES  # noqa: E402
from studies.summary.writer import _tex  # noqa: E402


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    if not shutil.which("pdflatex"):
        pytest.skip("pdflatex not found (make report installs it)")
    out = tmp_path_factory.mktemp("report")
    r = subprocess.run([sys.executable, "-m", "studies.summary", "report", str(out)], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with open(out / "report.tex") as f:
        return out, f.read()


def test_every_study_table_figure_and_claim(report):
    out, tex = report
    for study in STUDIES:
        d = os.path.join("results", study)
        with open(os.path.join(ROOT, d, "report.json")) as f:
            rep = json.load(f)
        assert re.search(r"\\section\{" + re.escape(_tex(rep["title"])) +
                         r"\}\\label\{sec:" + study + "\\}", tex), study
        sec = tex.split(r"\label{sec:" + study + "}")[1].split(r"\section{")[0]
        for name, cap in rep["tables"]:
            assert r"\input{" + f"{d}/{name}.tex" + "}" in sec, (study, name)
            with open(os.path.join(ROOT, d, name + ".tex")) as f:
                t = f.read()
            assert r"\caption{" + _tex(cap) + "}" in t and \
                r"\lnksource{" + f"{study}/{name}" + "}" in t, (study, name)
        for name, cap in rep["figures"]:
            assert os.path.isfile(os.path.join(ROOT, d, name + ".pdf")), (study, name)
            assert r"includegraphics[width=\linewidth,height=0.42\textheight," \
                r"keepaspectratio]{" + f"{d}/{name}.pdf" + "}" in sec, (study, name)
            assert r"\caption{" + _tex(cap) + "}" in sec and \
                r"Source: \texttt{" + _tex(f"{d}/{name}") + ".pdf}" in sec, (study, name)
        with open(os.path.join(ROOT, d, "claims.csv"), newline="") as f:
            for c in csv.DictReader(f):
                assert _tex(c["value"]) + " & " + r"\textbf{" + _tex(c["verdict"]) + "}" \
                    in sec, (study, c["id"])


def test_pdf(report):
    out, _ = report
    if not shutil.which("pdfinfo"):
        pytest.skip("pdfinfo not found (poppler-utils)")
    info = subprocess.run(["pdfinfo", str(out / "report.pdf")], capture_output=True,
                          text=True).stdout
    pages = int(re.search(r"Pages:\s+(\d+)", info).group(1))
    assert pages >= 2 * len(STUDIES)
    text = subprocess.run(["pdftotext", str(out / "report.pdf"), "-"], capture_output=True,
                          text=True).stdout
    for s in ("How to read this report", "Claims", "Setting.", "Provenance."):
        assert s in text
    assert "??" not in text   # no unresolved reference
