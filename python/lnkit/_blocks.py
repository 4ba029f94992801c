"""Statistics of the diagonal blocks of a curvature operator, as `lnkit
blocks` computes them (include/lnkit/blockstats.h): one block per tensor and
per group of tensors, each with its Frobenius norm (Hutchinson), extreme
eigenvalues (Lanczos, with residuals) and SLQ density; the densities on one
grid and the Jensen-Shannon distances between them."""
import ctypes
import time

import numpy as np

from . import _lib
from ._defaults import BLOCKS, DENSITY
from ._lib import Error, lib, check, c_double_p
from ._model import Model, _data_arg
from ._operator import HessianOperator
from ._names import renamed
from ._curvature import _int, _float, SEED_MAX, warn_unconverged, kernel_width, sigma_of

__all__ = ["blocks", "BlockStats"]

# the common grid's size limit of `lnkit blocks`
MAX_GRID = 5000000


class BlockStats:
    """Per block i (the columns of `lnkit blocks -o`): names[i] (the tensor,
    or the group's globs), types[i] ("tensor" or "group"), n, frob, frob_se,
    frob2, frob2_se (||A_bb||_F, its square, standard errors), top,
    top_residual, top_converged, bottom, bottom_residual, bottom_converged,
    eig_steps (the Lanczos steps the extremes took, at most max_steps),
    node_min, node_max, applies (arrays over the blocks).  The
    densities: t (the common grid), density [blocks x points], sigma (and
    the option that chose it: sigma_option, sigma_value);
    js [blocks x blocks]: the Jensen-Shannon distances (natural log, as
    --pairs).  Also operator, probes, n_products, all_converged, rows()."""

    COLUMNS = ("block", "type", "n", "operator", "probes", "frob", "frob_se", "frob2",
               "frob2_se", "top", "top_residual", "top_converged", "bottom", "bottom_residual",
               "bottom_converged", "eig_steps", "node_min", "node_max", "applies")

    @property
    def all_converged(self):
        return bool(self.top_converged.all() and self.bottom_converged.all())

    def rows(self):
        """One dict per block with the columns of `lnkit blocks -o` (COLUMNS)."""
        out = []
        for i, name in enumerate(self.names):
            row = {"block": name, "type": self.types[i], "operator": self.operator,
                   "probes": self.probes}
            for c in self.COLUMNS[5:] + ("n",):
                row[c] = getattr(self, c)[i].item()
            out.append({c: row[c] for c in self.COLUMNS})
        return out

    def __repr__(self):
        return "<lnkit.BlockStats: %d blocks (%s), sigma %.4g, %d grid points>" % (
            len(self.names), self.operator, self.sigma, len(self.t))


def _patterns(name, v):
    if v is None:
        return None
    if not isinstance(v, str) or not v:
        raise Error("%s: expected comma-separated glob patterns (a non-empty str), got %r"
                    % (name, v))
    return v


def _plan(model, pattern, groups):
    """The blocks' names and types: the tensors matched by pattern (None: no
    tensor blocks) in layout order, then the groups, each checked against the
    model before any work."""
    names, types = [], []
    if pattern is not None:
        sel = _lib.Block()
        check(lib.lnk_block_select(model._m, pattern.encode(), ctypes.byref(sel)))
        try:
            all_names = model.names
            names = [all_names[sel.tensor[i]] for i in range(sel.n_tensors)]
        finally:
            lib.lnk_block_free(ctypes.byref(sel))
        types = ["tensor"] * len(names)
    for g in groups:
        sel = _lib.Block()
        st = lib.lnk_block_select(model._m, g.encode(), ctypes.byref(sel))
        if st:
            raise Error("blocks: group '%s': %s" % (g, _lib.errmsg()), st)
        lib.lnk_block_free(ctypes.byref(sel))
        names.append(g)
        types.append("group")
    return names, types


@renamed("blocks", groups="group", tensors=("no_tensors", lambda t: not t,
                                            ": tensors=False is no_tensors=True"),
         eig_steps="max_steps", per_sigma="grid_per_sigma", seed="rng_seed")
def blocks(m, data=None, group=(), no_tensors=False, block=None, operator=None,
           probes=BLOCKS["probes"], max_steps=BLOCKS["max_steps"], tol=BLOCKS["tol"],
           runs=BLOCKS["runs"], steps=BLOCKS["steps"], sigma=None,
           sigma_fraction=None, grid_per_sigma=DENSITY["grid_per_sigma"],
           rng_seed=BLOCKS["rng_seed"], cache_mb=None, progress=None, sigma_variance=None,
           sigma_kappa=None):
    """Statistics of the diagonal blocks A_bb of the Hessian of the data-set
    loss (or of its Gauss-Newton or functional part: operator=), the numbers
    of `lnkit blocks` with the same options and defaults (the library's
    lnk_blockstat_opts_default: lnkit.defaults()["blocks"]).

    Blocks: one per tensor matched by `block` (comma-separated globs; None:
    every tensor; no_tensors=True: none, as --no-tensors), then one per entry
    of `group` (a comma-separated glob list, or a list of them, as --group
    repeated; names must be distinct).  Keywords are the options of `lnkit
    blocks` (max_steps: each block's Lanczos step limit for its extremes;
    rng_seed: --rng-seed); the deprecated names groups=, tensors=,
    eig_steps=, per_sigma=, seed= still work for one release, with a
    DeprecationWarning.  m: an lnkit.Model with data, or an lnkit.HessianOperator
    (its model, data, weights and operator; its block is the `block`).
    The densities' kernel width: one of sigma, sigma_variance, sigma_kappa
    (with steps as its m), sigma_fraction (the default), as lnkit.density
    and `lnkit blocks --sigma ...` take them.
    progress: None or a function called after each block with a dict (done,
    total, block, elapsed); a true return value cancels the run.  A block
    whose extreme eigenvalues did not converge issues lnkit.ConvergenceWarning
    (the result is returned whole)."""
    groups = [group] if isinstance(group, str) else list(group or ())
    groups = [_patterns("group", g) for g in groups]
    dup = sorted({g for g in groups if groups.count(g) > 1})
    if dup:
        raise Error("group: %s given more than once (the rows could not be told apart)"
                    % ", ".join(repr(g) for g in dup))
    if no_tensors and not groups:
        raise Error("blocks: no_tensors=True without group leaves no block")
    kw = {"probes": _int("probes", probes, 2, 1 << 20),
          "max_steps": _int("max_steps", max_steps, 2, 1 << 20), "tol": _float("tol", tol),
          "runs": _int("runs", runs, 1, 1 << 20), "steps": _int("steps", steps, 1, 1 << 20),
          "rng_seed": _int("rng_seed", rng_seed, 0, SEED_MAX)}
    grid_per_sigma = _float("grid_per_sigma", grid_per_sigma)
    if grid_per_sigma <= 0:
        raise Error("grid_per_sigma: expected a number > 0, got %r" % (grid_per_sigma,))
    width = kernel_width("blocks", sigma, sigma_variance, sigma_kappa, sigma_fraction)
    if isinstance(m, HessianOperator):
        if data is not None or cache_mb is not None or block is not None:
            raise Error("blocks: give a model and data, or a HessianOperator alone")
        if operator is not None and operator != m.operator:
            raise Error("operator: %r was asked for, but the HessianOperator given applies %r"
                        % (operator, m.operator))
        block, operator = m.block, m.operator
        H = m._clone(m.model, m.data, block=None)
    elif isinstance(m, Model):
        if data is None:
            raise Error("data: a data set is needed (lnkit.Data or batch file paths)")
        H = m.hessian(_data_arg(data), cache_mb=cache_mb,
                      operator="hessian" if operator is None else operator)
    else:
        raise Error("expected an lnkit.Model (with data) or an lnkit.HessianOperator, got %s"
                    % type(m).__name__)
    pattern = None if no_tensors else (_patterns("block", block) or "*")
    names, types = _plan(H.model, pattern, groups)
    o = _lib.BlockstatOpts()
    lib.lnk_blockstat_opts_default(ctypes.byref(o))
    o.probes, o.eig_steps, o.eig_tol = kw["probes"], kw["max_steps"], kw["tol"]
    o.slq_runs, o.slq_steps, o.seed = kw["runs"], kw["steps"], kw["rng_seed"]
    st = [_lib.Blockstat() for _ in names]
    done = 0
    try:
        t0 = time.monotonic()
        for i, name in enumerate(names):
            with H._lock:
                if not H._h:
                    raise Error("hessian: the operator is closed")
                check(lib.lnk_hessian_set_block(H._h, name.encode()))
                op = lib.lnk_hessian_operator(H._h)
                rc = lib.lnk_blockstat_compute(ctypes.byref(op), ctypes.byref(o),
                                               ctypes.byref(st[i]))
            if rc:
                raise Error("blocks: block '%s': %s" % (name, _lib.errmsg()), rc)
            done += 1
            if progress is not None and progress({"done": i + 1, "total": len(names),
                                                  "block": name,
                                                  "elapsed": time.monotonic() - t0}):
                raise Error("blocks: cancelled by the progress function after %d of %d blocks"
                            % (i + 1, len(names)))
        # blocks zero to rounding: converged by the library's rule, as in lnkit blocks;
        # why some did not converge: the library's words, as lnkit blocks says them
        ptrs = (ctypes.POINTER(_lib.Blockstat) * len(st))(*[ctypes.pointer(s) for s in st])
        lib.lnk_blockstat_settle(ptrs, len(st), kw["tol"])
        why = ctypes.create_string_buffer(1024)
        names_c = _lib.BlockstatNames(b"max_steps", b"tol", b"group= or more tensors")
        lib.lnk_blockstat_why(ptrs, len(st), H.operator == "ggn", kw["max_steps"],
                              ctypes.byref(names_c), why, len(why))
        res = _collect(names, types, st, H, kw, width, grid_per_sigma)
    finally:
        for i in range(done):
            lib.lnk_blockstat_free(ctypes.byref(st[i]))
        H.close()
    bad = ~(res.top_converged & res.bottom_converged)
    if bad.any():
        scale = np.maximum(np.abs(res.top), np.abs(res.bottom))
        rel = np.maximum(res.top_residual * ~res.top_converged,
                         res.bottom_residual * ~res.bottom_converged)
        rel = np.where(scale > 0, rel / np.where(scale > 0, scale, 1), rel)
        failed = int((~res.top_converged).sum() + (~res.bottom_converged).sum())
        which = [n for n, b in zip(names, bad) if b]
        listed = ", ".join(which[:3]) + (" and %d more" % (len(which) - 3) if len(which) > 3
                                         else "")
        warn_unconverged("blocks", failed, 2 * len(names), float(rel[bad].max()), kw["tol"],
                         int(res.eig_steps[bad].max()),
                         " (the extremes of %d of %d blocks: %s): %s"
                         % (len(which), len(names), listed, why.value.decode()),
                         flags=".top_converged, .bottom_converged")
    return res


def _collect(names, types, st, H, kw, width, grid_per_sigma):
    """The per-block arrays, the common grid and densities, the distances."""
    r = BlockStats()
    r.names, r.types, r.operator, r.probes = list(names), list(types), H.operator, kw["probes"]
    get = {"n": lambda s: s.n, "frob": lambda s: s.frob.frob, "frob_se": lambda s: s.frob.frob_se,
           "frob2": lambda s: s.frob.frob2, "frob2_se": lambda s: s.frob.frob2_se,
           "node_min": lambda s: s.slq.node_min, "node_max": lambda s: s.slq.node_max,
           "applies": lambda s: s.n_applies}
    for c in ("top", "top_residual", "bottom", "bottom_residual", "eig_steps"):
        get[c] = (lambda c: lambda s: getattr(s, c))(c)
    for c, f in get.items():
        dt = np.int64 if c in ("n", "eig_steps", "applies") else np.float64
        setattr(r, c, np.array([f(s) for s in st], dtype=dt))
    r.top_converged = np.array([bool(s.top_converged) for s in st])
    r.bottom_converged = np.array([bool(s.bottom_converged) for s in st])
    r.n_products = H.n_products
    nb = len(st)
    lo, hi = float(r.node_min.min()), float(r.node_max.max())
    try:
        sigma = sigma_of(width, lo, hi, kw["steps"])
    except Error as e:
        raise Error("blocks: %s %g for the nodes' range [%g, %g]: %s"
                    % (width[0], width[1], lo, hi, e), e.status) from None
    ptrs = (ctypes.POINTER(_lib.SlqResult) * nb)(*[ctypes.pointer(s.slq) for s in st])
    tp, npts = c_double_p(), ctypes.c_size_t()
    check(lib.lnk_slq_grid_common(ptrs, nb, sigma, _lib.LNK_SLQ_PAD, grid_per_sigma, MAX_GRID,
                                  ctypes.byref(tp), ctypes.byref(npts)))
    try:
        r.t = np.ctypeslib.as_array(tp, shape=(npts.value,)).copy()
    finally:
        _lib.free(tp)
    n = len(r.t)
    r.density = np.empty((nb, n))
    tptr = r.t.ctypes.data_as(c_double_p)
    for i, s in enumerate(st):
        row = r.density[i]
        check(lib.lnk_slq_density(ctypes.byref(s.slq), sigma, tptr, n,
                                  row.ctypes.data_as(c_double_p)))
        integral = lib.lnk_trapezoid(tptr, row.ctypes.data_as(c_double_p), n)
        if not abs(integral - 1) < 1e-6:
            raise Error("blocks: the density of block '%s' integrates to %.12g, not 1 (grid of %d "
                        "points)" % (names[i], integral, n))
    r.js = np.zeros((nb, nb))
    d = ctypes.c_double()
    for i in range(nb):
        for j in range(i + 1, nb):
            check(lib.lnk_js_distance(tptr, r.density[i].ctypes.data_as(c_double_p),
                                      r.density[j].ctypes.data_as(c_double_p), n, ctypes.byref(d)))
            r.js[i, j] = r.js[j, i] = d.value
    r.sigma = sigma
    r.sigma_option, r.sigma_value = width
    return r
