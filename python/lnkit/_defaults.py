"""The defaults of the library's routines, read from its *_opts_default
functions (the CLI takes them from the same place), so that a Python call
and the `lnkit` command with the same options left out run the same
computation.  defaults() returns them; the functions of this package use them
as their keyword defaults (read once, at import)."""
import ctypes

from . import _lib
from ._lib import lib
from ._names import DeprecatedKeys

__all__ = ["defaults", "EIGS", "SLQ", "TRACE", "BLOCKS", "DENSITY"]

_MODES = {_lib.LNK_LANCZOS_FULL: "full", _lib.LNK_LANCZOS_LIGHT: "light"}
_REORTH = {_lib.LNK_REORTH_PARTIAL: "partial", _lib.LNK_REORTH_ALWAYS: "always"}
_START = {_lib.LNK_SLQ_RADEMACHER: "rademacher", _lib.LNK_SLQ_GAUSSIAN: "gaussian"}


def _eigs():
    o = _lib.EigsOpts()
    lib.lnk_eigs_opts_default(ctypes.byref(o))
    return {"k": o.k_top, "max_steps": o.max_steps, "tol": o.tol, "mode": _MODES[o.mode],
            "reorth": _REORTH[o.reorth], "rng_seed": o.seed}


def _slq():
    o = _lib.SlqOpts()
    lib.lnk_slq_opts_default(ctypes.byref(o))
    return {"runs": o.runs, "steps": o.steps, "start_vectors": _START[o.start],
            "mode": _MODES[o.mode], "reorth": _REORTH[o.reorth], "rng_seed": o.seed}


def _trace():
    o = _lib.TraceOpts()
    lib.lnk_trace_opts_default(ctypes.byref(o))
    return {"method": lib.lnk_trace_method_name(o.method).decode(), "probes": o.probes,
            "rng_seed": o.seed}


def _blocks():
    o = _lib.BlockstatOpts()
    lib.lnk_blockstat_opts_default(ctypes.byref(o))
    return {"probes": o.probes, "max_steps": o.eig_steps, "tol": o.eig_tol, "runs": o.slq_runs,
            "steps": o.slq_steps, "rng_seed": o.seed}


EIGS, SLQ, TRACE, BLOCKS = _eigs(), _slq(), _trace(), _blocks()
# The kernel width and grid of the densities have no library default (they are
# the front end's choice): the values of `lnkit blocks` and `lnkit density
# --sigma-fraction` (tests/test_parity.py runs both and compares).
DENSITY = {"sigma_fraction": 0.01, "grid_per_sigma": 4.0}
# the keys' names before they were the programs' options (read with a warning)
_OLD = {"seed": "rng_seed", "per_sigma": "grid_per_sigma", "eig_steps": "max_steps"}


def defaults():
    """The defaults of eigs, density, trace and blocks (a new dict each call):
    those of the library's lnk_eigs_opts_default, lnk_slq_opts_default,
    lnk_trace_opts_default and lnk_blockstat_opts_default, which the `lnkit`
    commands use too.  Keys are the functions' keywords, which are the
    commands' options (rng_seed: --rng-seed)."""
    out = {"eigs": EIGS, "density": dict(SLQ, **DENSITY), "trace": TRACE,
           "blocks": dict(BLOCKS, **DENSITY)}
    return {k: DeprecatedKeys(k, _OLD, v) for k, v in out.items()}
