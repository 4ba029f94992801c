"""Curvature by the library's own Lanczos (include/lnkit/curvature.h):
extremal eigenpairs with explicit residuals (lnk_eigs), the trace by
Hutchinson or Hutch++ (lnk_trace) and the spectral density by stochastic
Lanczos quadrature (lnk_slq).  Defaults are the library's (_defaults.py)."""
import ctypes
import signal
import threading

import numpy as np

from . import _lib
from ._defaults import EIGS, SLQ, TRACE, DENSITY, _MODES, _REORTH, _START
from ._lib import Error, ConvergenceWarning, lib, check
from ._model import Model, _data_arg
from ._operator import HessianOperator
from ._names import renamed
from ._warn import warn

__all__ = ["eigs", "density", "trace", "EigsResult", "Density", "Trace"]

# --rng-seed's range: a seed given here can be given to the lnkit program too
SEED_MAX = 2**31 - 1


def _operator_of(m, data, block, cache_mb, operator=None):
    if isinstance(m, HessianOperator):
        if data is not None or block is not None or cache_mb is not None:
            raise Error("give a model and data, or a HessianOperator alone (its data, block "
                        "and cache are its own)")
        if operator is not None and operator != m.operator:
            raise Error("operator: %r was asked for, but the HessianOperator given applies %r"
                        % (operator, m.operator))
        return m
    if not isinstance(m, Model):
        raise Error("expected an lnkit.Model (with data) or an lnkit.HessianOperator, got %s"
                    % type(m).__name__)
    if data is None:
        raise Error("data: a data set is needed (lnkit.Data or batch file paths)")
    return m.hessian(_data_arg(data), block=block, cache_mb=cache_mb,
                     operator="hessian" if operator is None else operator)


def _int(name, v, lo, hi=2**31 - 1):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
        raise Error("%s: expected an integer in [%d, %d], got %r" % (name, lo, hi, v))
    return int(v)


def _float(name, v, lo=0.0):
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise Error("%s: expected a number, got %r" % (name, v)) from None
    if not np.isfinite(f) or f < lo:
        raise Error("%s: expected a finite number >= %g, got %r" % (name, lo, v))
    return f


def _choice(name, v, allowed):
    if not isinstance(v, str) or v not in allowed:
        raise Error("%s: expected %s, got %r" % (name, " or ".join(repr(a) for a in allowed), v))
    return v


def _lanczos(what, mode, reorth):
    """mode and reorth as --mode and --reorth: reorth None is the library's
    default; given with mode='light' (which keeps no basis) it is refused,
    as `lnkit CMD --mode light --reorth ...` is."""
    _choice("mode", mode, ("full", "light"))
    if reorth is None:
        return
    _choice("reorth", reorth, ("partial", "always"))
    if mode == "light":
        raise Error("%s: reorth applies only with mode='full', not mode='light'" % what)


def _set_lanczos(o, mode, reorth):
    o.mode = _lib.LNK_LANCZOS_FULL if mode == "full" else _lib.LNK_LANCZOS_LIGHT
    if reorth is not None:
        o.reorth = _lib.LNK_REORTH_PARTIAL if reorth == "partial" else _lib.LNK_REORTH_ALWAYS


# The kernel width of a density: one of four conventions, as lnkit density and
# lnkit blocks take them (--sigma, --sigma-variance, --sigma-kappa,
# --sigma-fraction; src/front/density.c); the kappa convention's margin is
# theirs too.
SIGMA_NAMES = ("sigma", "sigma_variance", "sigma_kappa", "sigma_fraction")
KAPPA_MARGIN = 0.05


def kernel_width(what, sigma, sigma_variance, sigma_kappa, sigma_fraction):
    """(name, value) of the one width option given (sigma_fraction's default
    when none is), checked; two given are refused."""
    given = [(n, v) for n, v in zip(SIGMA_NAMES, (sigma, sigma_variance, sigma_kappa,
                                                 sigma_fraction)) if v is not None]
    if len(given) > 1:
        raise Error("%s: give only one of sigma, sigma_variance, sigma_kappa, sigma_fraction "
                    "(got %s)" % (what, ", ".join(n for n, _ in given)))
    name, v = given[0] if given else ("sigma_fraction", DENSITY["sigma_fraction"])
    v = _float(name, v)
    lo = 1 if name == "sigma_kappa" else 0
    if not v > lo:
        raise Error("%s: expected a number > %d, got %r" % (name, lo, v))
    return name, v


def sigma_of(width, lo, hi, m):
    """The kernel's standard deviation for nodes in [lo, hi] after m Lanczos
    steps by the width option (name, value) (the library's conventions,
    include/lnkit/curvature.h); the library's message if it gives none."""
    name, v = width
    if name == "sigma":
        return v
    s = ctypes.c_double()
    if name == "sigma_variance":
        st = lib.lnk_sigma_from_variance(v, lo, hi, ctypes.byref(s))
    elif name == "sigma_kappa":
        st = lib.lnk_sigma_from_kappa(v, m, KAPPA_MARGIN, lo, hi, ctypes.byref(s))
    else:
        st = lib.lnk_sigma_from_fraction(v, lo, hi, ctypes.byref(s))
    check(st)
    return s.value


def warn_unconverged(what, n_failed, n_req, worst, tol, steps, detail="", flags=".converged"):
    """The ConvergenceWarning of a result in which n_failed of n_req requested
    pairs missed tol (worst: the largest relative residual among them)."""
    msg = ("lnkit.%s: %d of %d requested eigenpairs did not converge: worst residual %.3g "
           "max|l| against tol %.3g, after %d Lanczos steps%s; the results are returned "
           "whole (see %s)" % (what, n_failed, n_req, worst, tol, steps, detail, flags))
    warn(ConvergenceWarning(msg, n_failed, n_req, worst, tol, steps))


class _Progress:
    """The C progress callback: calls the user's function, and turns an
    exception raised meanwhile (Ctrl-C's KeyboardInterrupt, or the user's)
    into a cancel of the run; the exception is raised again after it."""

    def __init__(self, user, eigs):
        self.user = user
        self.exc = None
        self.interrupted = False
        self.old = None
        self.cfunc = (_lib.EIGS_PROGRESS_FN(self._eigs) if eigs else
                      _lib.PROGRESS_FN(self._plain))

    def _eigs(self, ctx, p):
        if self.interrupted:
            return 1
        try:
            if self.user is not None:
                p = p.contents
                info = {"step": p.step, "max_steps": p.max_steps, "elapsed": p.elapsed,
                        "n_converged": p.n_converged,
                        "top": [p.top[i] for i in range(p.n_top)],
                        "bottom": [p.bottom[i] for i in range(p.n_bottom)]}
                if self.user(info):
                    return 1
            return 0
        except BaseException as e:  # noqa: B902 - KeyboardInterrupt too
            self.exc = e
            return 1

    def _plain(self, ctx, done, total, elapsed):
        if self.interrupted:
            return 1
        try:
            if self.user is not None and self.user({"done": done, "total": total,
                                                    "elapsed": elapsed}):
                return 1
            return 0
        except BaseException as e:  # noqa: B902
            self.exc = e
            return 1

    # Ctrl-C: Python runs its SIGINT handler when the callback is entered,
    # before any line of it, where a KeyboardInterrupt could not be caught
    # (ctypes would print and drop it).  During the run a handler that only
    # notes the signal stands in (main thread, default handler only); the
    # callback then cancels the run and the interrupt is raised after it.
    def _note(self, signum, frame):
        self.interrupted = True

    def __enter__(self):
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self.old = signal.signal(signal.SIGINT, self._note)
        return self

    def __exit__(self, *exc):
        if self.old is not None:
            signal.signal(signal.SIGINT, self.old)
            self.old = None

    def reraise(self):
        if self.exc is not None:
            raise self.exc
        if self.interrupted:
            raise KeyboardInterrupt


class EigsResult:
    """Extremal eigenpairs: values (top ones largest first, then bottom ones
    smallest first), which ("top"/"bottom" per value), residuals ||H y - l y||
    (computed with the operator), bounds, converged (per pair: residual <=
    tol * scale), all_converged, vectors (k x n, if asked), top and bottom
    (views of values), scale (max|l|), requested (pairs asked for), steps,
    stop ("tol", "max_steps", "invariant"), operator, mode, reorth (the
    settings run, as the sidecar of `lnkit eigs` records them), n_applies,
    elapsed."""

    @property
    def all_converged(self):
        """True when every requested pair was found and converged."""
        return bool(len(self.values) == self.requested and self.converged.all())

    @property
    def n_converged(self):
        return int(self.converged.sum())

    def __repr__(self):
        return ("lnkit.EigsResult(top=%s, bottom=%s, residuals=%s, converged %d/%d, steps=%d, "
                "stop=%s)" % (np.array2string(self.top, precision=8),
                              np.array2string(self.bottom, precision=8),
                              np.array2string(self.residuals, precision=2), self.n_converged,
                              self.requested, self.steps, self.stop))


@renamed("eigs", seed="rng_seed")
def eigs(m, data=None, k=EIGS["k"], which="top", tol=EIGS["tol"], max_steps=EIGS["max_steps"],
         mode=EIGS["mode"], reorth=None, rng_seed=EIGS["rng_seed"], block=None,
         vectors=False, cache_mb=None, operator=None, progress=None):
    """The k largest (which="top"), smallest ("bottom") or both ("both": k
    of each) eigenvalues of the data-set loss Hessian (or of a block, or of
    its Gauss-Newton or functional part) by the library's Lanczos (lnk_eigs),
    with residuals computed explicitly: the same numbers as `lnkit eigs` with
    the same options, and the same defaults (the library's
    lnk_eigs_opts_default: lnkit.defaults()["eigs"]; tol is relative to max|l|).
    Keywords are the options of `lnkit eigs` (rng_seed= is --rng-seed, the
    start vector's seed; seed= is its deprecated name).

    m: an lnkit.Model with data (an lnkit.Data or batch file paths), or an
    lnkit.HessianOperator alone.  operator: "hessian" (default), "ggn" or
    "functional", as `lnkit eigs --operator` (see Model.hessian).
    mode: "full" (a stored basis) or "light" (none); reorth (full mode
    only, as --reorth): "partial" or "always"; None is the library's default
    (lnkit.defaults()["eigs"]["reorth"]), which r.reorth records.
    progress: None or a function called after each Lanczos step with a dict
    (step, max_steps, top, bottom, n_converged, elapsed); a true return value
    cancels the run (lnkit.Error).  Ctrl-C cancels it too (KeyboardInterrupt
    after the current step).

    When a requested pair did not converge the result is still returned
    whole (r.converged per pair, r.all_converged) and a
    lnkit.ConvergenceWarning is issued (the lnkit program exits with status 3
    after writing its results): warnings.simplefilter("error",
    lnkit.ConvergenceWarning) turns it into an exception."""
    _choice("which", which, ("top", "bottom", "both"))
    _lanczos("eigs", mode, reorth)
    k = _int("k", k, 1)
    max_steps = _int("max_steps", max_steps, 1)
    tol = _float("tol", tol)
    rng_seed = _int("rng_seed", rng_seed, 0, SEED_MAX)
    H = _operator_of(m, data, block, cache_mb, operator)
    n = H.shape[0]
    if k > n:
        raise Error("k: %d is larger than the operator's size %d" % (k, n))
    if which == "both" and 2 * k > n:
        raise Error("k: %d with which='both' asks for %d eigenpairs, but the operator has %d: the "
                    "two ends would overlap" % (k, 2 * k, n))
    o = _lib.EigsOpts()
    lib.lnk_eigs_opts_default(ctypes.byref(o))
    o.k_top = k if which != "bottom" else 0
    o.k_bottom = k if which != "top" else 0
    o.max_steps = max_steps
    o.tol = tol
    _set_lanczos(o, mode, reorth)
    o.vectors = 1 if vectors else 0
    o.seed = rng_seed
    pr = _Progress(progress, True)
    o.progress = pr.cfunc
    op = H._operator()
    r = _lib.EigsResult()
    with H._lock, pr:
        st = lib.lnk_eigs(ctypes.byref(op), ctypes.byref(o), ctypes.byref(r))
    pr.reraise()
    check(st)
    if r.stop == 3:  # LNK_EIGS_CANCELLED
        steps = r.steps
        lib.lnk_eigs_result_free(ctypes.byref(r))
        raise Error("eigs: cancelled by the progress function after %d Lanczos steps" % steps)
    try:
        res = EigsResult()
        kk = r.k
        res.values = np.array([r.value[i] for i in range(kk)])
        res.residuals = np.array([r.residual[i] for i in range(kk)])
        res.bounds = np.array([r.bound[i] for i in range(kk)])
        res.converged = np.array([bool(r.converged[i]) for i in range(kk)], dtype=bool)
        res.which = np.array(["top"] * r.n_top + ["bottom"] * r.n_bottom)
        res.top = res.values[:r.n_top]
        res.bottom = res.values[r.n_top:]
        res.vectors = (np.ctypeslib.as_array(r.vectors, shape=(kk, n)).copy()
                       if vectors and r.vectors else None)
        res.scale = r.scale
        res.steps = r.steps
        res.stop = lib.lnk_eigs_stop_name(r.stop).decode()
        res.n_applies = int(r.n_applies)
        res.n_reorth = r.n_reorth
        res.elapsed = r.elapsed
        res.tol = tol
        res.requested = o.k_top + o.k_bottom
        res.mode, res.reorth = _MODES[o.mode], _REORTH[o.reorth]
        res.operator = H.operator
    finally:
        lib.lnk_eigs_result_free(ctypes.byref(r))
    if not (np.all(np.isfinite(res.values)) and np.all(np.isfinite(res.residuals))):
        raise Error("eigs: an eigenpair is not finite (values %s, residuals %s)"
                    % (res.values, res.residuals), 6)
    if not res.all_converged:
        _warn_eigs(res)
    return res


def _warn_eigs(res):
    bad = ~res.converged
    rel = res.residuals / res.scale if res.scale > 0 else res.residuals
    worst = float(rel[bad].max()) if bad.any() else 0.0
    missing = res.requested - len(res.values)
    detail = " (stopped by %s)" % res.stop
    if missing:
        detail += "; %d of the %d requested were not found" % (missing, res.requested)
    if res.stop == "tol" and not missing:
        # the bounds met tol, the explicit residuals did not (as `lnkit eigs` says)
        detail += ("; they met tol by their residual bound but not by the explicit residual "
                   "||H y - l y||: rounding in double precision is above tol, and a larger tol "
                   "makes the two agree")
    elif res.operator == "ggn" and (bad & (res.which == "bottom")).any():
        detail += ("; G is positive semidefinite: its smallest eigenvalues are >= 0 and crowd "
                   "near 0, where Lanczos converges slowly (which='top' is what G is for)")
    else:
        detail += "; more max_steps or a larger tol would let them converge"
    warn_unconverged("eigs", int(bad.sum()) + missing, res.requested, worst, res.tol, res.steps,
                     detail)


class Density:
    """A spectral density by SLQ: t (grid), density (phi(t)), sigma, the
    option that chose it (sigma_option, sigma_value: as the sidecar of
    `lnkit density` records them), and the quadrature: nodes and weights per
    run (lists of arrays), n_applies; the settings run: start_vectors, mode,
    reorth."""


@renamed("density", seed="rng_seed", per_sigma="grid_per_sigma")
def density(m, data=None, runs=SLQ["runs"], steps=SLQ["steps"], sigma=None,
            sigma_fraction=None, grid_per_sigma=DENSITY["grid_per_sigma"],
            rng_seed=SLQ["rng_seed"],
            mode=SLQ["mode"], block=None, cache_mb=None, operator=None, progress=None,
            start_vectors=SLQ["start_vectors"], reorth=None, sigma_variance=None,
            sigma_kappa=None):
    """The spectral density of the data-set loss Hessian (or a block, or of
    its Gauss-Newton or functional part: operator=) by stochastic Lanczos
    quadrature (lnk_slq; `lnkit density`): `runs` random start vectors
    (start_vectors: "rademacher" or "gaussian" entries), `steps` Lanczos
    steps each (mode, reorth: as in eigs); phi on a grid covering the nodes
    +- 6 sigma with `grid_per_sigma` points per sigma.  Keywords are the
    options of `lnkit density` (rng_seed= is --rng-seed; seed= and
    per_sigma= are deprecated names of rng_seed= and grid_per_sigma=).

    The Gaussian kernel's standard deviation, by one of four conventions
    (give at most one; docs/MODEL.md section 7, as `lnkit density`): sigma
    (eigenvalue units), sigma_variance V (PyHessian's: variance V max(1,
    range of the nodes)), sigma_kappa K > 1 (Papyan 2020: 1.1 range / ((steps
    - 1) sqrt(8 ln K))) or sigma_fraction F (F times the range of the nodes;
    the default, lnkit.defaults()["density"]["sigma_fraction"]).  Other
    defaults: the library's (lnkit.defaults()["density"])."""
    runs = _int("runs", runs, 1)
    steps = _int("steps", steps, 1)
    rng_seed = _int("rng_seed", rng_seed, 0, SEED_MAX)
    grid_per_sigma = _float("grid_per_sigma", grid_per_sigma)
    if grid_per_sigma <= 0:
        raise Error("grid_per_sigma: expected a number > 0, got %r" % (grid_per_sigma,))
    _lanczos("density", mode, reorth)
    _choice("start_vectors", start_vectors, tuple(_START.values()))
    width = kernel_width("density", sigma, sigma_variance, sigma_kappa, sigma_fraction)
    H = _operator_of(m, data, block, cache_mb, operator)
    o = _lib.SlqOpts()
    lib.lnk_slq_opts_default(ctypes.byref(o))
    o.runs, o.steps, o.seed = runs, steps, rng_seed
    o.start = {v: k for k, v in _START.items()}[start_vectors]
    _set_lanczos(o, mode, reorth)
    pr = _Progress(progress, False)
    o.progress = pr.cfunc
    op = H._operator()
    r = _lib.SlqResult()
    with H._lock, pr:
        st = lib.lnk_slq(ctypes.byref(op), ctypes.byref(o), ctypes.byref(r))
    pr.reraise()
    check(st)
    try:
        d = Density()
        off = [r.offset[i] for i in range(r.runs + 1)]
        d.nodes = [np.array([r.node[j] for j in range(off[v], off[v + 1])]) for v in range(r.runs)]
        d.weights = [np.array([r.weight[j] for j in range(off[v], off[v + 1])])
                     for v in range(r.runs)]
        d.n_applies = int(r.n_applies)
        sigma = sigma_of(width, r.node_min, r.node_max, steps)
        if not sigma > 0:
            raise Error("sigma: expected a number > 0, got %r" % (sigma,))
        npts = lib.lnk_slq_grid_size(ctypes.byref(r), sigma, _lib.LNK_SLQ_PAD, grid_per_sigma)
        if npts < 2 or npts > 10**8:
            raise Error("density: %d grid points for sigma %g (expected 2 to 1e8)" % (npts, sigma))
        d.t = np.empty(npts)
        d.density = np.empty(npts)
        check(lib.lnk_slq_grid(ctypes.byref(r), sigma, _lib.LNK_SLQ_PAD, npts,
                               d.t.ctypes.data_as(_lib.c_double_p)))
        check(lib.lnk_slq_density(ctypes.byref(r), sigma, d.t.ctypes.data_as(_lib.c_double_p),
                                  npts, d.density.ctypes.data_as(_lib.c_double_p)))
        d.sigma = sigma
        d.sigma_option, d.sigma_value = width
        d.start_vectors, d.mode, d.reorth = start_vectors, _MODES[o.mode], _REORTH[o.reorth]
        d.operator = H.operator
    finally:
        lib.lnk_slq_result_free(ctypes.byref(r))
    return d


class Trace:
    """A trace estimate: trace, stderr (its standard error: the column and
    JSON key of `lnkit trace`), method ("hutchinson" or "hutchpp"), probes
    (products used), samples (random quadratic forms averaged), sketch and
    deflated (Hutch++: the sketch size s and tr(Q^T A Q)), operator,
    elapsed."""

    @property
    def std_error(self):
        """Deprecated name of stderr (removed in the next release)."""
        warn("lnkit.Trace.std_error is deprecated, use .stderr (the column and JSON key of "
             "`lnkit trace`); std_error will be removed in the next release", DeprecationWarning)
        return self.stderr

    def __repr__(self):
        return "lnkit.Trace(%s: %.10g +- %.3g, %d probes)" % (self.method, self.trace,
                                                            self.stderr, self.probes)


@renamed("trace", seed="rng_seed")
def trace(m, data=None, probes=TRACE["probes"], method=TRACE["method"],
          rng_seed=TRACE["rng_seed"],
          block=None, cache_mb=None, operator=None, progress=None):
    """The trace of the data-set loss Hessian (or a block, or its
    Gauss-Newton or functional part: operator=) with its standard error, as
    `lnkit trace`: method "hutchinson" (Rademacher probes) or "hutchpp"
    (Hutch++: a third of the budget sketches the top subspace, whose trace
    is taken exactly); probes: the budget of products; rng_seed: the
    probes' seed, as --rng-seed (seed= is its deprecated name).  Defaults:
    the library's lnk_trace_opts_default (lnkit.defaults()["trace"]).
    progress: None or a function called after each product with a dict
    (done, total, elapsed); a true return value cancels the run."""
    _choice("method", method, ("hutchinson", "hutchpp"))
    probes = _int("probes", probes, 2, 1 << 24)
    if method == "hutchpp" and probes < 4:
        raise Error("probes: Hutch++ needs at least 4 (a sketch of probes/3 >= 1 and 2 residual "
                    "probes), got %d" % probes)
    rng_seed = _int("rng_seed", rng_seed, 0, SEED_MAX)
    H = _operator_of(m, data, block, cache_mb, operator)
    o = _lib.TraceOpts()
    lib.lnk_trace_opts_default(ctypes.byref(o))
    o.method = _lib.LNK_TRACE_HUTCHPP if method == "hutchpp" else _lib.LNK_TRACE_HUTCHINSON
    o.probes, o.seed = probes, rng_seed
    pr = _Progress(progress, False)
    o.progress = pr.cfunc
    op = H._operator()
    r = _lib.TraceResult()
    with H._lock, pr:
        st = lib.lnk_trace(ctypes.byref(op), ctypes.byref(o), ctypes.byref(r))
    pr.reraise()
    check(st)
    if not (np.isfinite(r.trace) and np.isfinite(r.std_error)):
        raise Error("trace: the estimate is not finite (%g +- %g)" % (r.trace, r.std_error), 6)
    t = Trace()
    t.trace, t.stderr, t.probes, t.samples = r.trace, r.std_error, r.probes, r.samples
    t.sketch, t.deflated, t.elapsed = r.sketch, r.deflated, r.elapsed
    t.method, t.operator = lib.lnk_trace_method_name(o.method).decode(), H.operator
    return t
