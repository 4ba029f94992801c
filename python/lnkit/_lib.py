"""The shared library liblnkit.so through ctypes: where it is found, the C
prototypes and the structures this package reads, and the error convention.

Which library is loaded, first found wins:
  1. $LNKIT_LIB, the path of a liblnkit.so (an error if it cannot be loaded);
  2. the installed one: `make install` writes _install.py beside this file with
     the library's path relative to the package (so a DESTDIR staging works)
     and its absolute path;
  3. the build tree's, when the package is used from a clone
     (python/lnkit -> ../../build/liblnkit.so);
  4. the soname liblnkit.so.MAJOR.MINOR through the dynamic loader's search.

Calls into the library go through ctypes.CDLL, which releases the GIL for the
duration of each call: other Python threads run during a product or a Lanczos
run.  Every call that can fail returns a status; check() turns a failure into
lnkit.Error with the library's one-line message (lnk_errmsg, thread-local, so
it is read in the thread that made the call).
"""
import ctypes
import os

__all__ = ["Error", "ConvergenceWarning", "lib", "check", "c_double_p", "c_int64_p"]

# The version of the C library this package is written for: the soname's
# MAJOR.MINOR (no ABI promise between 0.x releases; the structures below
# mirror that version's headers, tests/test_abi.py checks them against the
# installed headers with the C compiler).
SOVERSION = "0.1"


class Error(ValueError):
    """A failure reported by lnkit (or bad input caught before the call):
    the library's one-line message naming the file, key, tensor or argument."""

    def __init__(self, message, status=1):
        super().__init__(message)
        self.status = status


class ConvergenceWarning(UserWarning):
    """Some requested eigenpairs did not converge (residual above tol * max|l|):
    the result is returned whole, with its per-pair `converged` flags; the
    message names how many, the worst residual against the tolerance and the
    Lanczos steps used (the CLI's exit status 3 in Python).  Attributes:
    n_failed, n_requested, worst (worst relative residual), tol, steps."""

    def __init__(self, message, n_failed=0, n_requested=0, worst=0.0, tol=0.0, steps=0):
        super().__init__(message)
        self.n_failed, self.n_requested = n_failed, n_requested
        self.worst, self.tol, self.steps = worst, tol, steps


c_double_p = ctypes.POINTER(ctypes.c_double)
c_int64_p = ctypes.POINTER(ctypes.c_int64)


def _candidates():
    here = os.path.dirname(os.path.abspath(__file__))
    env = os.environ.get("LNKIT_LIB")
    if env:
        return [(env, True)]
    try:
        from . import _install  # written by make install
        out = [(os.path.normpath(os.path.join(here, _install.LIB_RELATIVE)), False),
               (_install.LIB_ABSOLUTE, False)]
    except ImportError:  # the clone's python/lnkit
        out = [(os.path.normpath(os.path.join(here, "..", "..", "build",
                                              "liblnkit.so." + SOVERSION)), False)]
    out.append(("liblnkit.so." + SOVERSION, False))
    return out


def _load():
    tried = []
    for path, required in _candidates():
        if os.sep in path and not os.path.exists(path):
            if required:
                raise ImportError("lnkit: LNKIT_LIB=%s: no such file" % path)
            tried.append(path)
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            if required:
                raise ImportError("lnkit: LNKIT_LIB=%s: %s" % (path, e)) from None
            tried.append("%s (%s)" % (path, e))
    raise ImportError("lnkit: liblnkit.so.%s not found (tried %s); build it with `make` in the "
                      "clone, install it with `make install`, or set LNKIT_LIB to its path"
                      % (SOVERSION, "; ".join(tried)))


lib, lib_path = _load()

# ------------------------------------------------------------------ structures
LNK_NAME_MAX = 64


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * LNK_NAME_MAX), ("offset", ctypes.c_size_t),
                ("size", ctypes.c_size_t), ("ndim", ctypes.c_int), ("shape", ctypes.c_int * 2)]


class Layout(ctypes.Structure):
    _fields_ = [("n_params", ctypes.c_size_t), ("n_tensors", ctypes.c_int),
                ("t", ctypes.POINTER(TensorInfo))]


class Batch(ctypes.Structure):
    _fields_ = [("B", ctypes.c_int), ("S", ctypes.c_int), ("T", ctypes.c_int),
                ("src", c_int64_p), ("tgt", c_int64_p), ("labels", c_int64_p),
                ("owns", ctypes.c_int)]


class Block(ctypes.Structure):
    _fields_ = [("n_tensors", ctypes.c_int), ("tensor", ctypes.POINTER(ctypes.c_int)),
                ("n", ctypes.c_size_t)]


APPLY_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, c_double_p, c_double_p)


class Operator(ctypes.Structure):
    _fields_ = [("n", ctypes.c_size_t), ("ctx", ctypes.c_void_p), ("apply", APPLY_FN),
                ("group", ctypes.c_void_p)]


class EigsProgress(ctypes.Structure):
    _fields_ = [("step", ctypes.c_int), ("max_steps", ctypes.c_int), ("n_top", ctypes.c_int),
                ("n_bottom", ctypes.c_int), ("top", c_double_p), ("bottom", c_double_p),
                ("n_converged", ctypes.c_int), ("elapsed", ctypes.c_double)]


EIGS_PROGRESS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(EigsProgress))
PROGRESS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                               ctypes.c_double)


# the checkpoint fields (include/lnkit/curvature.h, "Checkpoints"): unused from
# Python, kept NULL by the library's defaults
CKPT_FIELDS = [("basis", c_double_p), ("checkpoint", ctypes.c_void_p),
               ("checkpoint_ctx", ctypes.c_void_p), ("resume", ctypes.c_void_p)]


class EigsOpts(ctypes.Structure):
    _fields_ = [("k_top", ctypes.c_int), ("k_bottom", ctypes.c_int), ("max_steps", ctypes.c_int),
                ("tol", ctypes.c_double), ("mode", ctypes.c_int), ("reorth", ctypes.c_int),
                ("vectors", ctypes.c_int), ("seed", ctypes.c_uint64), ("v0", c_double_p),
                ("progress", EIGS_PROGRESS_FN), ("progress_ctx", ctypes.c_void_p)] + CKPT_FIELDS


class EigsResult(ctypes.Structure):
    _fields_ = [("k", ctypes.c_int), ("n_top", ctypes.c_int), ("n_bottom", ctypes.c_int),
                ("value", c_double_p), ("residual", c_double_p), ("bound", c_double_p),
                ("converged", ctypes.POINTER(ctypes.c_int)), ("vectors", c_double_p),
                ("scale", ctypes.c_double), ("steps", ctypes.c_int), ("stop", ctypes.c_int),
                ("n_restarts", ctypes.c_int), ("n_applies", ctypes.c_long),
                ("n_reorth", ctypes.c_int), ("reorth_rows", ctypes.c_double),
                ("elapsed", ctypes.c_double)]


class SlqOpts(ctypes.Structure):
    _fields_ = [("runs", ctypes.c_int), ("steps", ctypes.c_int), ("start", ctypes.c_int),
                ("mode", ctypes.c_int), ("reorth", ctypes.c_int), ("seed", ctypes.c_uint64),
                ("progress", PROGRESS_FN), ("progress_ctx", ctypes.c_void_p)] + CKPT_FIELDS


class TraceOpts(ctypes.Structure):
    _fields_ = [("method", ctypes.c_int), ("probes", ctypes.c_int), ("seed", ctypes.c_uint64),
                ("progress", PROGRESS_FN), ("progress_ctx", ctypes.c_void_p),
                ("checkpoint", ctypes.c_void_p), ("checkpoint_ctx", ctypes.c_void_p),
                ("resume", ctypes.c_void_p)]


class TraceResult(ctypes.Structure):
    _fields_ = [("trace", ctypes.c_double), ("std_error", ctypes.c_double),
                ("probes", ctypes.c_int), ("samples", ctypes.c_int), ("sketch", ctypes.c_int),
                ("deflated", ctypes.c_double), ("elapsed", ctypes.c_double)]


class SlqResult(ctypes.Structure):
    _fields_ = [("runs", ctypes.c_int), ("offset", ctypes.POINTER(ctypes.c_int)),
                ("node", c_double_p), ("weight", c_double_p),
                ("steps", ctypes.POINTER(ctypes.c_int)), ("invariant", ctypes.POINTER(ctypes.c_int)),
                ("node_min", ctypes.c_double), ("node_max", ctypes.c_double),
                ("n_applies", ctypes.c_long), ("elapsed", ctypes.c_double)]


class BlockstatOpts(ctypes.Structure):
    _fields_ = [("probes", ctypes.c_int), ("eig_steps", ctypes.c_int), ("eig_tol", ctypes.c_double),
                ("slq_runs", ctypes.c_int), ("slq_steps", ctypes.c_int), ("seed", ctypes.c_uint64)]


class FrobResult(ctypes.Structure):
    _fields_ = [("frob2", ctypes.c_double), ("frob2_se", ctypes.c_double),
                ("frob", ctypes.c_double), ("frob_se", ctypes.c_double),
                ("probes", ctypes.c_int), ("elapsed", ctypes.c_double)]


class BlockstatNames(ctypes.Structure):
    _fields_ = [("steps", ctypes.c_char_p), ("tol", ctypes.c_char_p), ("more", ctypes.c_char_p)]


class Blockstat(ctypes.Structure):
    _fields_ = [("n", ctypes.c_size_t), ("frob", FrobResult), ("top", ctypes.c_double),
                ("top_residual", ctypes.c_double), ("bottom", ctypes.c_double),
                ("bottom_residual", ctypes.c_double), ("top_converged", ctypes.c_int),
                ("bottom_converged", ctypes.c_int), ("eig_steps", ctypes.c_int),
                ("slq", SlqResult), ("n_applies", ctypes.c_long)]


class Digest(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_uint64), ("sha256", ctypes.c_char * 65)]


# lnk_config is used only through the library's functions (never its fields),
# in a buffer larger than the structure (tests/test_abi.py checks the size).
CONFIG_BYTES = 1 << 16
LNK_LANCZOS_FULL, LNK_LANCZOS_LIGHT = 0, 1
LNK_REORTH_PARTIAL, LNK_REORTH_ALWAYS = 0, 1
LNK_SLQ_RADEMACHER, LNK_SLQ_GAUSSIAN = 0, 1
LNK_VEC_FLAT, LNK_VEC_NAMED = 0, 1
LNK_TRACE_HUTCHINSON, LNK_TRACE_HUTCHPP = 0, 1
LNK_SLQ_PAD = 6.0
HESSIAN_CACHE_AUTO = ctypes.c_size_t(-1).value

# ------------------------------------------------------------------ prototypes
_P = ctypes.c_void_p
_I = ctypes.c_int
_S = ctypes.c_char_p
_Z = ctypes.c_size_t
_D = ctypes.c_double


def _proto(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)


for _name, _res, _args in [
    ("lnk_errmsg", _S, ()),
    ("lnk_error_clear", None, ()),
    ("lnk_strerror", _S, (_I,)),
    ("lnk_config_default", None, (_P,)),
    ("lnk_config_clear", None, (_P,)),
    ("lnk_config_load_json", _I, (_P, _S)),
    ("lnk_config_parse_json", _I, (_P, _S, _S)),
    ("lnk_config_set", _I, (_P, _S, _S)),
    ("lnk_config_finalize", _I, (_P,)),
    ("lnk_config_to_json", _P, (_P, _Z, _P, _I)),
    ("lnk_config_save_json", _I, (_P, _S, _Z, _P, _I)),
    ("lnk_model_alloc", _P, (_P,)),
    ("lnk_model_free", None, (_P,)),
    ("lnk_model_layout", ctypes.POINTER(Layout), (_P,)),
    ("lnk_model_n_params", _Z, (_P,)),
    ("lnk_model_init_params", _I, (_P, c_double_p)),
    ("lnk_params_check_finite", _I, (_P, c_double_p, _S)),
    ("lnk_weights_load", _I, (_S, _P, c_double_p)),
    ("lnk_weights_save", _I, (_S, _P, c_double_p)),
    ("lnk_weights_save_meta", _I, (_S, _P, c_double_p, ctypes.POINTER(_S))),
    ("lnk_model_config_save", _I, (_S, _P)),
    ("lnk_vector_load", _I, (_S, _P, c_double_p, ctypes.POINTER(_I))),
    ("lnk_vector_save", _I, (_S, _P, c_double_p, _I)),
    ("lnk_vector_save_meta", _I, (_S, _P, c_double_p, _I, ctypes.POINTER(_S))),
    ("lnk_batch_load", _I, (_S, _P, ctypes.POINTER(Batch))),
    ("lnk_batch_check", _I, (_P, ctypes.POINTER(Batch))),
    ("lnk_batch_slice", _I, (ctypes.POINTER(Batch), _I, _I, ctypes.POINTER(Batch))),
    ("lnk_batch_free", None, (ctypes.POINTER(Batch),)),
    ("lnk_batch_n_scored", _Z, (_P, ctypes.POINTER(Batch))),
    ("lnk_batch_synthetic", _I, (_P, _I, _I, ctypes.c_uint64, ctypes.POINTER(Batch))),
    ("lnk_dataset_eval", _I, (_P, c_double_p, ctypes.POINTER(Batch), _I, c_double_p, c_double_p,
                              ctypes.POINTER(_Z))),
    ("lnk_hessian_alloc", _P, (_P, c_double_p, ctypes.POINTER(Batch), _I, _S)),
    ("lnk_hessian_free", None, (_P,)),
    ("lnk_hessian_operator", Operator, (_P,)),
    ("lnk_hessian_block", ctypes.POINTER(Block), (_P,)),
    ("lnk_hessian_n_products", ctypes.c_long, (_P,)),
    ("lnk_hessian_set_cache", _I, (_P, _Z)),
    ("lnk_hessian_set_kind", _I, (_P, ctypes.c_int)),
    ("lnk_hessian_apply_full", _I, (_P, c_double_p, c_double_p)),
    ("lnk_eigs_opts_default", None, (ctypes.POINTER(EigsOpts),)),
    ("lnk_eigs", _I, (ctypes.POINTER(Operator), ctypes.POINTER(EigsOpts),
                      ctypes.POINTER(EigsResult))),
    ("lnk_eigs_result_free", None, (ctypes.POINTER(EigsResult),)),
    ("lnk_eigs_stop_name", _S, (_I,)),
    ("lnk_slq_opts_default", None, (ctypes.POINTER(SlqOpts),)),
    ("lnk_slq", _I, (ctypes.POINTER(Operator), ctypes.POINTER(SlqOpts),
                     ctypes.POINTER(SlqResult))),
    ("lnk_slq_result_free", None, (ctypes.POINTER(SlqResult),)),
    ("lnk_slq_grid_size", _Z, (ctypes.POINTER(SlqResult), _D, _D, _D)),
    ("lnk_slq_grid", _I, (ctypes.POINTER(SlqResult), _D, _D, _Z, c_double_p)),
    ("lnk_slq_density", _I, (ctypes.POINTER(SlqResult), _D, c_double_p, _Z, c_double_p)),
    ("lnk_sigma_from_fraction", _I, (_D, _D, _D, c_double_p)),
    ("lnk_sigma_from_variance", _I, (_D, _D, _D, c_double_p)),
    ("lnk_sigma_from_kappa", _I, (_D, _I, _D, _D, _D, c_double_p)),
    ("lnk_trace_opts_default", None, (ctypes.POINTER(TraceOpts),)),
    ("lnk_trace", _I, (ctypes.POINTER(Operator), ctypes.POINTER(TraceOpts),
                       ctypes.POINTER(TraceResult))),
    ("lnk_trace_method_name", _S, (_I,)),
    ("lnk_blockstat_opts_default", None, (ctypes.POINTER(BlockstatOpts),)),
    ("lnk_blockstat_compute", _I, (ctypes.POINTER(Operator), ctypes.POINTER(BlockstatOpts),
                                   ctypes.POINTER(Blockstat))),
    ("lnk_blockstat_free", None, (ctypes.POINTER(Blockstat),)),
    ("lnk_blockstat_settle", None, (ctypes.POINTER(ctypes.POINTER(Blockstat)), _I, _D)),
    ("lnk_blockstat_why", None, (ctypes.POINTER(ctypes.POINTER(Blockstat)), _I, _I, _I,
                                 ctypes.POINTER(BlockstatNames), ctypes.c_char_p, _Z)),
    ("lnk_slq_grid_common", _I, (ctypes.POINTER(ctypes.POINTER(SlqResult)), _I, _D, _D, _D, _Z,
                                 ctypes.POINTER(c_double_p), ctypes.POINTER(_Z))),
    ("lnk_js_distance", _I, (c_double_p, c_double_p, c_double_p, _Z, c_double_p)),
    ("lnk_trapezoid", _D, (c_double_p, c_double_p, _Z)),
    ("lnk_block_select", _I, (_P, _S, ctypes.POINTER(Block))),
    ("lnk_block_free", None, (ctypes.POINTER(Block),)),
    ("lnk_hessian_set_block", _I, (_P, _S)),
    ("lnk_blas_threads", _I, ()),
    ("lnk_set_blas_threads", None, (_I,)),
    ("lnk_blas_advice", _S, (_S, _S)),
    ("lnk_blas_kernel", _S, ()),
    ("lnk_version_text", _P, (_S,)),
    ("lnk_version", _S, ()),
    ("lnk_git_commit", _S, ()),
    ("lnk_digest_of", None, (ctypes.c_char_p, _Z, ctypes.POINTER(Digest))),
    ("lnk_memory_set_limit", None, (_Z,)),
]:
    _proto(_name, _res, *_args)

_libc = ctypes.CDLL(None)
_libc.free.restype = None
_libc.free.argtypes = [ctypes.c_void_p]


def free(ptr):
    """free() of memory the library malloc'd for the caller."""
    _libc.free(ptr)


def take_string(ptr):
    """A malloc'd C string as str, freed."""
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        _libc.free(ptr)


def errmsg():
    return lib.lnk_errmsg().decode("utf-8", "replace")


def check(status):
    """Raise Error with the library's message if status is not LNK_OK."""
    if status != 0:
        raise Error(errmsg() or lib.lnk_strerror(status).decode(), status)


def check_ptr(ptr):
    if not ptr:
        raise Error(errmsg() or "lnkit: allocation failed", 2)
    return ptr


def fspath(path, what):
    """A path argument as bytes for the library (str, bytes or os.PathLike)."""
    try:
        p = os.fsencode(path)
    except TypeError:
        raise Error("%s: expected a file path, got %s" % (what, type(path).__name__)) from None
    if not p or b"\0" in p:
        raise Error("%s: expected a file path, got %r" % (what, path))
    return p
