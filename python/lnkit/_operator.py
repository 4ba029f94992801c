"""The data-set loss Hessian (or a block of it) as a SciPy LinearOperator over
the library's lnk_hessian (include/lnkit/hessian.h): each product is one
exact H v per chunk, with the chunks' primal passes kept between products
where memory allows (the same bits as recomputing them).

Ownership: the library's workspace (lnk_hessian) borrows the model, the
weights and the data set's chunks; the operator holds references to all
three (its own copy of the weights, read-only), so none is freed while it
lives, and the workspace is freed once, by the operator that made it.  A copy
(copy.copy, copy.deepcopy, pickle) is a new operator with its own workspace
over the same weights, data and block (deepcopy and pickle: over copies of
the model and data)."""
import copy
import ctypes
import threading

import numpy as np
from scipy.sparse.linalg import LinearOperator

from . import _lib
from ._lib import Error, lib, check, check_ptr, c_double_p
from ._model import as_vector, _block_arg

__all__ = ["HessianOperator"]


class HessianOperator(LinearOperator):
    """H (n x n, float64, symmetric): H @ x, H.matvec(x), H.matmat(X) run the
    library's exact products (the GIL is released during each).  Attributes:
    tensors (the block's tensor names), n_products, model, data.
    H.gather(full) / H.scatter(part) map between full and block vectors.
    copy.copy(H), copy.deepcopy(H) and pickle give independent operators
    (their own workspace, the same weights, data, block and operator)."""

    KINDS = {"hessian": 0, "ggn": 1, "functional": 2}  # lnk_op_kind

    def __init__(self, model, data, block=None, cache_mb=None, _copy=True, _once=False,
                 operator="hessian"):
        if not isinstance(operator, str) or operator not in self.KINDS:
            raise Error("operator: expected 'hessian', 'ggn' or 'functional', got %r"
                        % (operator,))
        self._h = None
        self._lock = threading.Lock()
        self.model = model
        self.data = data
        self._chunks = data._chunks(model)
        # the library borrows theta and the chunks for the operator's life;
        # the operator's own theta is read-only (copies may share it)
        if _copy is True:
            self._theta = model.theta.copy()
        elif _copy is False:
            self._theta = model.theta
        else:  # the weights of the operator being copied (or unpickled)
            self._theta = as_vector(_copy, model.n_params, "theta", model)
        if self._theta is not model.theta:
            self._theta.flags.writeable = False
        self._cache_mb = cache_mb
        pat = _block_arg(block)
        self._h = check_ptr(lib.lnk_hessian_alloc(model._m, self._theta.ctypes.data_as(c_double_p),
                                                  self._chunks.ptr(), self._chunks.n, pat))
        if cache_mb is not None:
            if isinstance(cache_mb, bool) or not isinstance(cache_mb, (int, float, np.number)) \
                    or not cache_mb >= 0 or cache_mb > 2**40:
                raise Error("cache_mb: expected a number of MB >= 0, got %r" % (cache_mb,))
            check(lib.lnk_hessian_set_cache(self._h, int(cache_mb * 1048576)))
        elif _once and self._chunks.n > 1:
            check(lib.lnk_hessian_set_cache(self._h, 0))
        check(lib.lnk_hessian_set_kind(self._h, self.KINDS[operator]))
        self.operator = operator
        blk = lib.lnk_hessian_block(self._h).contents
        names = list(model._tensors)
        self.tensors = [names[blk.tensor[i]] for i in range(blk.n_tensors)]
        self.block = block
        n = int(blk.n)
        super().__init__(np.float64, (n, n))

    # ------------------------------------------------------------ copies
    def _clone(self, model, data, block=None, theta=None):
        """A new operator (own workspace) over model and data at this
        operator's weights (or theta), of this kind."""
        return HessianOperator(model, data, block=block, cache_mb=self._cache_mb,
                               _copy=self._theta if theta is None else theta,
                               operator=self.operator)

    def _check_open(self, what):
        if not self._h:
            raise Error("lnkit.HessianOperator: %s of a closed operator (make a new one with "
                        "model.hessian(...))" % what)

    def __copy__(self):
        self._check_open("copy")
        return self._clone(self.model, self.data, self.block)

    def __deepcopy__(self, memo):
        self._check_open("deepcopy")
        model = copy.deepcopy(self.model, memo)
        data = copy.deepcopy(self.data, memo)
        theta = copy.deepcopy(self._theta, memo)
        out = self._clone(model, data, self.block, theta)
        memo[id(self)] = out
        return out

    def __reduce__(self):
        self._check_open("pickle")
        return (_restore, (self.model, self.data, self.block, self._cache_mb, self.operator,
                           np.array(self._theta)))

    def close(self):
        """Free the library's workspace now (else when the operator is collected)."""
        with self._lock:
            if self._h:
                lib.lnk_hessian_free(self._h)
                self._h = None

    def __del__(self):
        try:
            if getattr(self, "_h", None):
                lib.lnk_hessian_free(self._h)
        except Exception:  # interpreter shutdown: the library may be gone
            pass
        self._h = None

    @property
    def n_products(self):
        return int(lib.lnk_hessian_n_products(self._h)) if self._h else 0

    def _matvec(self, x):
        n = self.shape[0]
        if isinstance(x, np.ndarray) and x.shape == (n, 1):
            x = x.reshape(n)
        return self.apply(x)

    def apply(self, x, out=None):
        """H x into out (a float64 C-contiguous array of n, not x) if given,
        else into a new array.  Reusing out saves a large new array's page
        faults in each product (about 10 ms for 6.8e6 parameters)."""
        n = self.shape[0]
        x = as_vector(x, n, "v", self.model if n == self.model.n_params else None)
        if out is None:
            y = np.empty(n)
        else:
            y = out
            if not isinstance(y, np.ndarray) or y.dtype != np.float64 or y.shape != (n,) or \
                    not y.flags.c_contiguous or not y.flags.writeable or not y.flags.aligned:
                raise Error("out: expected a writable C-contiguous float64 array of shape (%d,)"
                            % n)
            if np.shares_memory(x, y):
                raise Error("out: must not share memory with the vector")
        with self._lock:
            if not self._h:
                raise Error("hessian: the operator is closed")
            check(lib.lnk_hessian_apply_full(self._h, x.ctypes.data_as(c_double_p),
                                             y.ctypes.data_as(c_double_p)))
        return y

    _rmatvec = _matvec

    def matvec(self, x):
        """H x for x of shape (n,) or (n, 1) (the same shape back); bad input
        (dtype, shape, NaN) raises lnkit.Error."""
        n = self.shape[0]
        if isinstance(x, np.ndarray) and x.shape == (n, 1):
            return self._matvec(x).reshape(n, 1)
        return self._matvec(x)

    rmatvec = matvec

    def _adjoint(self):
        return self

    def _operator(self):
        """The lnk_operator for the library's curvature routines (kept alive
        by self)."""
        if not self._h:
            raise Error("hessian: the operator is closed")
        return lib.lnk_hessian_operator(self._h)

    def gather(self, full):
        """The block's coordinates of a full vector (n_params) as a block vector."""
        full = np.asarray(full)
        if full.shape != (self.model.n_params,):
            raise Error("gather: expected shape (%d,), got %s" % (self.model.n_params, full.shape))
        return np.concatenate([full[o:o + s] for o, s, _ in
                               (self.model._tensors[t] for t in self.tensors)])

    def scatter(self, part):
        """A block vector as a full vector (zeros outside the block)."""
        part = np.asarray(part)
        if part.shape != (self.shape[0],):
            raise Error("scatter: expected shape (%d,), got %s" % (self.shape[0], part.shape))
        full = np.zeros(self.model.n_params)
        at = 0
        for t in self.tensors:
            o, s, _ = self.model._tensors[t]
            full[o:o + s] = part[at:at + s]
            at += s
        return full

    def __repr__(self):
        return "<lnkit.HessianOperator %dx%d, block %s (%d tensors), %d chunk(s)>" % (
            self.shape[0], self.shape[1], self.block or "*", len(self.tensors), self._chunks.n)


def _restore(model, data, block, cache_mb, operator, theta):
    """An unpickled HessianOperator (at the pickled operator's weights)."""
    theta = np.ascontiguousarray(theta, dtype=np.float64)
    return HessianOperator(model, data, block=block, cache_mb=cache_mb, _copy=theta,
                           operator=operator)
