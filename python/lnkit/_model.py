"""Models: a configuration (MODEL.md §8), its parameter layout (§6) and the
flat parameter vector, owned by NumPy and handed to the library by pointer.

Ownership: a Model owns its library objects (configuration, lnk_model) and
frees them once, when it is collected; everything that borrows them (a
HessianOperator, Params views) holds a reference to the Model.  A copy
(copy.copy, copy.deepcopy, pickle) is a new Model of the same configuration
with its own copy of the weights."""
import collections.abc
import ctypes
import json
import os
import threading

import numpy as np

from . import _lib, _record
from ._lib import Error, lib, check, check_ptr, c_double_p
from ._data import Data

__all__ = ["Model"]


def _dptr(a):
    return a.ctypes.data_as(c_double_p)


def as_vector(v, n, what, model=None):
    """v as a C-contiguous float64 vector of length n (no copy if it is one),
    or Error: wrong type, dtype, shape, NaN or infinity."""
    if isinstance(v, np.ndarray):
        a = v
    else:
        try:
            a = np.asarray(v)
        except Exception as e:
            raise Error("%s: expected a float64 array, got %s (%s)" % (what, type(v).__name__, e)) \
                from None
    if a.dtype != np.float64:
        raise Error("%s: expected dtype float64, got %s (convert with np.asarray(v, np.float64))"
                    % (what, a.dtype))
    if a.shape != (n,):
        raise Error("%s: expected shape (%d,), got %s" % (what, n, a.shape))
    a = np.ascontiguousarray(a)
    if not a.flags.aligned:
        a = a.copy()
    if model is not None and n == model.n_params:
        check(lib.lnk_params_check_finite(model._m, _dptr(a), what.encode()))
    else:
        bad = np.flatnonzero(~np.isfinite(a))
        if bad.size:
            raise Error("%s: element %d is %r (expected finite values)" % (what, bad[0], a[bad[0]]),
                        6)
    return a


def _describe(v):
    if isinstance(v, np.ndarray):
        return "%s array of shape %s%s" % (v.dtype, v.shape, "" if v.flags.c_contiguous
                                           else ", not contiguous")
    return type(v).__name__


def _block_arg(block):
    if block is None:
        return None
    if not isinstance(block, str):
        raise Error("block: expected comma-separated glob patterns (str), got %s"
                    % type(block).__name__)
    return block.encode()


def _data_arg(data):
    if isinstance(data, Data):
        return data
    if isinstance(data, (str, bytes, os.PathLike, list, tuple)):
        return Data(data)
    raise Error("data: expected an lnkit.Data or batch file path(s), got %s" % type(data).__name__)


class Params(collections.abc.Mapping):
    """The named tensors of the flat vector (MODEL.md §6 order) as writable
    NumPy views: params["dec.0.ffn.w2"] has the tensor's shape ([in, out]
    for matrices) and shares memory with model.theta."""

    def __init__(self, model, vector):
        self._model = model
        self._vector = vector
        self._info = model._tensors

    def __reduce__(self):
        # views of the same vector: a deepcopy or a pickle taken with the model
        # views the copied model's theta (pickle and deepcopy keep identity)
        return (Params, (self._model, self._vector))

    def __getitem__(self, name):
        info = self._info.get(name)
        if info is None:
            raise KeyError("%s (the tensors are listed by model.names)" % name)
        off, size, shape = info
        return self._vector[off:off + size].reshape(shape)

    def __setitem__(self, name, value):
        self[name][...] = value

    def __iter__(self):
        return iter(self._info)

    def __len__(self):
        return len(self._info)

    def __repr__(self):
        return "lnkit.Params(%s)" % ", ".join("%s%s" % (k, list(v[2])) for k, v in
                                              self._info.items())


def _restore_model(cls, config_text, theta):
    """A Model of the configuration (JSON text) with weights theta: adopted
    when it is a fresh float64 vector of the layout (a deepcopy's or an
    unpickled one), else copied."""
    m = cls.__new__(cls)
    Model.__init__(m, json.loads(config_text), _init=False)
    t = as_vector(theta, m.n_params, "theta", m)
    if t.flags.writeable and t.flags.c_contiguous and t.flags.aligned and t.flags.owndata:
        m._theta = t
    else:
        m._theta[...] = t
    return m


class Model:
    """A transformer of docs/MODEL.md and its weights.

        m = lnkit.Model({"d": 64, "h": 4, "L": 6, "V": 100, "norm_pos": "pre"}, seed=0)
        m = lnkit.Model.load("w.json", "w.safetensors")

    A configuration is a dict of MODEL.md §8 keys (missing keys take their
    defaults; seed= sets the "seed" key); the weights are initialised from it
    (MODEL.md §5: the same values as `lnkit init`).  m.theta is the flat
    parameter vector (float64, MODEL.md §6 order), m.params its named views.
    copy.copy(m), copy.deepcopy(m) and pickle give an independent model (its
    own weights, the same configuration).
    """

    def __init__(self, config=None, seed=None, _init=True):
        if config is None:
            config = {}
        if not isinstance(config, collections.abc.Mapping):
            raise Error("config: expected a dict of MODEL.md §8 keys, got %s (use Model.load for "
                        "files)" % type(config).__name__)
        try:
            text = json.dumps(dict(config), allow_nan=False)
        except (TypeError, ValueError) as e:
            raise Error("config: not representable as JSON: %s" % e) from None
        self._cfg = ctypes.create_string_buffer(_lib.CONFIG_BYTES)
        self._m = None
        lib.lnk_config_default(self._cfg)
        check(lib.lnk_config_parse_json(self._cfg, text.encode(), b"config"))
        if seed is not None:
            # the configuration's "seed" key (MODEL.md §8): saved files hold it as a
            # signed 64-bit JSON integer
            if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or \
                    not 0 <= int(seed) <= 2**63 - 1:
                raise Error("seed: expected an integer in [0, 2**63 - 1], got %r" % (seed,))
            check(lib.lnk_config_set(self._cfg, b"seed", str(int(seed)).encode()))
        self._build(_init)

    @classmethod
    def load(cls, config, weights):
        """The configuration file (JSON, as `lnkit init` writes) and the weights
        (safetensors, every tensor of the layout, finite)."""
        self = cls.__new__(cls)
        self._cfg = ctypes.create_string_buffer(_lib.CONFIG_BYTES)
        self._m = None
        lib.lnk_config_default(self._cfg)
        check(lib.lnk_config_load_json(self._cfg, _lib.fspath(config, "config")))
        self._build(False)
        self.load_weights(weights)
        return self

    def _build(self, init):
        check(lib.lnk_config_finalize(self._cfg))
        self._m = check_ptr(lib.lnk_model_alloc(self._cfg))
        lay = lib.lnk_model_layout(self._m).contents
        self.n_params = int(lay.n_params)
        self._tensors = {}
        end = 0
        for i in range(lay.n_tensors):
            t = lay.t[i]
            shape = tuple(t.shape[:t.ndim])
            if t.offset != end or int(np.prod(shape)) != t.size:
                raise Error("lnkit: the library's layout does not match this package (tensor %s); "
                            "are liblnkit.so and the Python package the same version?"
                            % t.name.decode())
            self._tensors[t.name.decode()] = (int(t.offset), int(t.size), shape)
            end += t.size
        if end != self.n_params:
            raise Error("lnkit: layout sums to %d of %d parameters" % (end, self.n_params))
        self._theta = np.zeros(self.n_params)
        self._lock = threading.Lock()
        if init:
            check(lib.lnk_model_init_params(self._m, _dptr(self._theta)))

    # ------------------------------------------------------------ copies
    def __copy__(self):
        return _restore_model(type(self), self._config_text(), self._theta.copy())

    def __reduce__(self):
        # deepcopy goes through this too: theta is then copied (and shared with
        # the copies of Params views taken in the same deepcopy or pickle)
        return (_restore_model, (type(self), self._config_text(), self._theta))

    def _config_text(self):
        if not self._m:
            raise Error("lnkit.Model: the model was freed")
        return _lib.take_string(lib.lnk_config_to_json(self._cfg, self.n_params, None, 0))

    def __del__(self):
        try:
            if getattr(self, "_m", None):
                lib.lnk_model_free(self._m)
            if getattr(self, "_cfg", None) is not None:
                lib.lnk_config_clear(self._cfg)
        except Exception:  # interpreter shutdown: the library may be gone
            pass
        self._m = self._cfg = None

    # ------------------------------------------------------------ parameters
    @property
    def theta(self):
        """The flat parameter vector (float64, C-contiguous, MODEL.md §6 order;
        writes change the model)."""
        return self._theta

    @theta.setter
    def theta(self, value):
        self._theta[...] = as_vector(value, self.n_params, "theta", self)

    @property
    def params(self):
        """The named tensors of m.theta as writable views (MODEL.md §6 names)."""
        return Params(self, self._theta)

    def named(self, vector):
        """The named tensors of any flat vector of the layout (a gradient, H v)
        as views into it: the one call whose result follows later changes of
        the array given, so the array must be one it can view (float64,
        C-contiguous, shape (n_params,)); anything else is refused."""
        v = vector
        if not (isinstance(v, np.ndarray) and v.dtype == np.float64 and
                v.shape == (self.n_params,) and v.flags.c_contiguous and v.flags.aligned):
            raise Error("named: gives views into the vector, so it must be a C-contiguous float64 "
                        "array of shape (%d,), got %s (np.ascontiguousarray(v, np.float64) makes "
                        "one)" % (self.n_params, _describe(v)))
        return Params(self, v)

    @property
    def names(self):
        """The tensor names in MODEL.md §6 order."""
        return list(self._tensors)

    def offset(self, name):
        """(offset, size, shape) of a tensor in the flat vector."""
        if name not in self._tensors:
            raise Error("no tensor '%s' (model.names lists them)" % name)
        return self._tensors[name]

    @property
    def config(self):
        """The resolved configuration (every key of MODEL.md §8) as a dict."""
        return json.loads(_lib.take_string(lib.lnk_config_to_json(self._cfg, self.n_params,
                                                                  None, 0)))

    def load_weights(self, path):
        """Read weights (safetensors) into theta; on error theta is unchanged."""
        tmp = np.empty(self.n_params)
        check(lib.lnk_weights_load(_lib.fspath(path, "weights"), self._m, _dptr(tmp)))
        self._theta[...] = tmp

    def save(self, weights, config=None):
        """Write the weights (safetensors, named tensors) and, if given, the
        configuration (JSON) as `lnkit init` does; each file appears whole.
        The weights file carries its record (docs/MODEL.md section 9): this
        call, the configuration's SHA-256, and the seed "init" when the
        weights are, bit for bit, the configuration's initialisation
        (computed again for the comparison: one more vector of n_params while
        the call runs)."""
        self._save("python: lnkit.Model.save", None, weights, config)

    def _save(self, command, content, weights, config):
        check(lib.lnk_params_check_finite(self._m, _dptr(self._theta), b"parameters"))
        md = _record.metadata(_record.weights_record(self, self._theta, command, content))
        check(lib.lnk_weights_save_meta(_lib.fspath(weights, "weights"), self._m,
                                        _dptr(self._theta), md))
        if config is not None:
            check(lib.lnk_model_config_save(_lib.fspath(config, "config"), self._m))

    def load_vector(self, path):
        """A vector file (one tensor 'v' or the named tensors) as a flat array."""
        v = np.empty(self.n_params)
        kind = ctypes.c_int()
        check(lib.lnk_vector_load(_lib.fspath(path, "vector"), self._m, _dptr(v),
                                  ctypes.byref(kind)))
        return v

    def save_vector(self, path, v, named=False):
        """Write a vector of the layout (safetensors): one tensor 'v', or the
        named tensors; with its record (docs/MODEL.md section 9)."""
        v = as_vector(v, self.n_params, "vector", self)
        content = "a vector given to save_vector, as %s" % (
            "the named tensors (docs/MODEL.md section 6)" if named else "one tensor 'v'")
        md = _record.metadata(_record.text(self, "python: lnkit.Model.save_vector", content, {}))
        check(lib.lnk_vector_save_meta(_lib.fspath(path, "vector"), self._m, _dptr(v),
                                       _lib.LNK_VEC_NAMED if named else _lib.LNK_VEC_FLAT, md))

    def __repr__(self):
        c = self.config
        return "lnkit.Model(task=%s, norm_pos=%s, d=%d, h=%d, L=%d, n_params=%d)" % (
            c["task"], c["norm_pos"], c["d"], c["h"], c["L"], self.n_params)

    # ------------------------------------------------------------ products
    def loss_grad(self, data):
        """(loss, gradient): the token-weighted mean loss over the data set's
        chunks and its exact gradient (float64 [n_params])."""
        data = _data_arg(data)
        ch = data._chunks(self)
        g = np.empty(self.n_params)
        loss = ctypes.c_double()
        check(lib.lnk_dataset_eval(self._m, _dptr(self._theta), ch.ptr(), ch.n,
                                   ctypes.byref(loss), _dptr(g), None))
        check(lib.lnk_params_check_finite(self._m, _dptr(g), b"gradient"))
        return loss.value, g

    def loss(self, data):
        """The mean loss over the data set (no gradient)."""
        data = _data_arg(data)
        ch = data._chunks(self)
        loss = ctypes.c_double()
        check(lib.lnk_dataset_eval(self._m, _dptr(self._theta), ch.ptr(), ch.n,
                                   ctypes.byref(loss), None, None))
        return loss.value

    def hvp(self, data, v, block=None, operator="hessian"):
        """H v, the exact product of the data-set loss Hessian (or the block
        Hessian of `block`, then v has the block's size) with v (float64);
        operator="ggn" or "functional": G v or F v instead, as `lnkit hvp
        --operator` (see hessian)."""
        from ._operator import HessianOperator
        H = HessianOperator(self, _data_arg(data), block=block, _copy=False, _once=True,
                            operator=operator)
        try:
            return H._matvec(v)
        finally:
            H.close()

    def hessian(self, data, block=None, operator="hessian", cache_mb=None):
        """The Hessian of the data-set loss at the current weights (or its
        block `block`: comma-separated globs on the tensor names) as a
        scipy.sparse.linalg.LinearOperator of exact products.  The weights are
        copied: later changes to m.theta do not change the operator.

        operator: "hessian" (H), "ggn" (the Gauss-Newton part G = J^T H_out J,
        symmetric positive semidefinite) or "functional" (F = H - G), as
        `lnkit eigs --operator`.
        cache_mb: memory for the kept primal passes (None: the library's
        default, half the available memory; 0: recompute them every product).
        """
        from ._operator import HessianOperator
        return HessianOperator(self, _data_arg(data), block=block, cache_mb=cache_mb,
                               operator=operator)
