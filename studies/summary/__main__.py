"""The one way to summarise a study, from its raw rows only:

    python3 -m studies.summary STUDY [DIR]     (DIR: results/STUDY)
    python3 -m studies.summary all             every study below, in results/
    python3 -m studies.summary --list          the studies' names
    python3 -m studies.summary report [OUT]    the report of results/ (out/report)

Run from the repository's root.  A new study adds a module with
summarise(study, dir) and a line to STUDIES.  Errors: one line, exit status 2.
"""
import importlib
import os
import sys

from .writer import SummaryError

STUDIES = {  # study -> module
    "demo": "demo", "hessian": "spectra", "multi30k": "spectra", "multi30k_all": "spectra",
    "multi30k_full": "m30k_full", "anatomy": "anatomy", "grad": "grad",
    "grad_factorial": "factorial", "geometry": "geometry", "placements": "placements",
}


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    what = argv[0]
    if what == "--list":
        print("\n".join(STUDIES))
        return 0
    try:
        if what == "report":
            from . import report
            return report.build(argv[1] if len(argv) > 1 else "out/report")
        todo = [(s, f"results/{s}") for s in STUDIES] if what == "all" else \
            [(what, argv[1] if len(argv) > 1 else f"results/{what}")]
        for study, d in todo:
            if study not in STUDIES:
                raise SummaryError(f"unknown study '{study}' (one of {', '.join(STUDIES)})")
            if not os.path.isdir(d):
                raise SummaryError(f"{d}: no such directory")
            importlib.import_module(f".{STUDIES[study]}", __package__).summarise(study, d)
            print(f"summary: {study}: {d}")
    except SummaryError as e:
        print(f"summary: {e}", file=sys.stderr)
        return 2
    except (ValueError, KeyError, OSError) as e:   # rows the summary cannot use
        print(f"summary: {what}: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
