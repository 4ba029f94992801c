"""lnkit from Python: exact float64 loss, gradient and Hessian-vector
products of the transformers of docs/MODEL.md, as NumPy arrays and a SciPy
LinearOperator, over the C library liblnkit.so (ctypes; no compiled
extension).

    import lnkit
    m = lnkit.Model.load("w.json", "w.safetensors")     # or lnkit.Model(config, seed=0)
    data = lnkit.Data(["b1.safetensors", "b2.safetensors"], chunk=64)
    loss, g = m.loss_grad(data)                          # float, ndarray [n_params]
    hv = m.hvp(data, v)                                  # exact H v
    H = m.hessian(data, block="*.attn.*")                # scipy LinearOperator
    r = lnkit.eigs(m, data, k=5, which="both")           # lnkit's Lanczos, with residuals
    t = lnkit.trace(m, data, method="hutchpp")           # as `lnkit trace`
    b = lnkit.blocks(m, data, group=["*.attn.*"])        # as `lnkit blocks`
    m.params["dec.0.ffn.w2"]                             # a view into m.theta

Defaults are the library's (its *_opts_default functions, which the lnkit
program uses too): lnkit.defaults() lists them.  Keywords are the options of
the command a function mirrors, '_' for '-' (rng_seed= is --rng-seed); the
few older names still work for one release, with a DeprecationWarning.

Errors of the library (and bad input: dtype, shape, NaN, missing files)
raise lnkit.Error, a ValueError, with the library's one-line message.
Eigenpairs that did not converge are returned with per-pair flags and a
lnkit.ConvergenceWarning.  Products release the GIL.  The BLAS thread count:
lnkit.set_threads(n).

Copies and arrays: copy.copy, copy.deepcopy and pickle of every public class
give an independent object (Model, HessianOperator: their own library
objects; no object frees memory another uses).  Every array the package
keeps is copied when it is given (Data.from_arrays, theta); vectors given to
a product are read during the call only; m.named(v) alone returns views.

BLAS kernel: the lnkit program restarts itself on OpenBLAS's best kernel
when OpenBLAS's own CPU detection fell back to a slower one (include/lnkit/
blas.h); a Python process cannot, as OpenBLAS is loaded already.  On import
lnkit warns (lnkit.BlasWarning) if the kernel in use is slower than the CPU
allows, naming the setting to start Python with:
    OPENBLAS_CORETYPE=<kernel> python3 ...
(lnkit.blas_advice() returns it, or None when the kernel is already the best.)

PyTorch models in and out: lnkit.torch_io (imported on first use; needs torch).
"""
import os as _os
from ._warn import warn as _warn_user

from ._lib import Error, ConvergenceWarning, SOVERSION, lib as _clib, \
    lib_path as library_path, take_string as _take
from ._defaults import defaults
from ._data import Data
from ._model import Model, Params
from ._operator import HessianOperator
from ._curvature import eigs, density, trace, EigsResult, Density, Trace
from ._blocks import blocks, BlockStats

__version__ = "0.1.0"
__all__ = ["Error", "ConvergenceWarning", "Model", "Params", "Data", "HessianOperator", "eigs",
           "density", "trace", "blocks", "EigsResult", "Density", "Trace", "BlockStats",
           "defaults", "set_threads", "threads", "blas_kernel", "blas_advice", "version",
           "BlasWarning", "library_path", "MAX_THREADS"]

# `--threads`'s range in the lnkit program (OpenBLAS itself may use fewer:
# threads() says how many it took)
MAX_THREADS = 1024


def __getattr__(name):
    # lnkit.torch_io (PyTorch models in and out) on first use: importing lnkit
    # never imports it, nor torch
    if name == "torch_io":
        import importlib
        return importlib.import_module(".torch_io", __name__)
    raise AttributeError("module 'lnkit' has no attribute %r" % name)


class BlasWarning(UserWarning):
    """OpenBLAS runs a slower kernel than the CPU allows (see blas_advice)."""


def set_threads(n):
    """Set the number of BLAS (OpenBLAS) threads used by the library's
    products: an integer in [1, MAX_THREADS], the range of the lnkit
    program's --threads (outside it lnkit.Error).  OpenBLAS takes at most the
    number it was built for; threads() returns the number in use."""
    import numbers
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or not 1 <= n <= MAX_THREADS:
        raise Error("threads: expected an integer in [1, %d] (as --threads), got %r"
                    % (MAX_THREADS, n))
    _clib.lnk_set_blas_threads(int(n))


def threads():
    """The number of BLAS threads in use."""
    return int(_clib.lnk_blas_threads())


def blas_kernel():
    """The OpenBLAS kernel in use (e.g. "Haswell", "SkylakeX")."""
    k = _clib.lnk_blas_kernel()
    return k.decode() if k else None


def _env(name):
    """An environment variable as bytes, None when unset or empty (the
    library reads none itself: the program passes the settings in)."""
    v = _os.environ.get(name)
    return _os.fsencode(v) if v else None


def _memory_limit():
    """LNK_MEM_LIMIT_MB (a whole number of MiB >= 1), as the programs take it."""
    v = _os.environ.get("LNK_MEM_LIMIT_MB")
    if not v:
        return
    if not (v.isascii() and v.isdigit() and len(v) <= 15 and int(v) >= 1):
        raise Error("LNK_MEM_LIMIT_MB: expected a whole number of MiB >= 1, got %r" % v)
    _clib.lnk_memory_set_limit(int(v) * 1048576)


def blas_advice():
    """The faster OpenBLAS kernel to start Python with (OPENBLAS_CORETYPE), or
    None if the one in use is already the best for this CPU (or the user's
    own OPENBLAS_CORETYPE / LNK_BLAS_KERNEL=keep is in force)."""
    k = _clib.lnk_blas_advice(_env("LNK_BLAS_KERNEL"), _env("OPENBLAS_CORETYPE"))
    if k is None:
        from ._lib import errmsg
        msg = errmsg()
        if msg:
            raise Error(msg)
        return None
    return k.decode()


def version():
    """The library's version text (version, commit, compiler, BLAS, LAPACK, GSL, ...)."""
    return _take(_clib.lnk_version_text(None))


def _check_blas():
    _clib.lnk_error_clear()
    try:
        adv = blas_advice()
    except Error as e:
        _warn_user("lnkit: %s" % e, BlasWarning)
        return
    if adv:
        _warn_user("lnkit: OpenBLAS runs its %s kernel, slower than this CPU allows: start "
              "Python with OPENBLAS_CORETYPE=%s for the faster one (see "
              "help(lnkit))" % (blas_kernel(), adv), BlasWarning)


_memory_limit()
_check_blas()
