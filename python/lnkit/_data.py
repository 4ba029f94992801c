"""Data sets: batch files (or arrays of token ids) cut into chunks of rows.

The library's loss over a data set is the token-weighted mean over its chunks
(include/lnkit/hessian.h); its chunks are lnk_batch structures checked against
a model (task, vocabulary).  A Data object holds the sources and the chunk
size; the chunks are made for each model on first use (lnk_batch_load,
lnk_batch_slice, as `lnkit eigs --batch F --chunk N` makes them: rows
[0, N), [N, 2N), ... of each file in turn, trailing all-<pad> columns trimmed)
and kept for models that read batches alike (same task and vocabularies).

Several files (or chunks) are one data set: the loss is the token-weighted
mean over all of them (MODEL.md §4), the gradient, H v, eigs, trace and
density are those of that loss; two files give the numbers of one file
holding both (python/tests/test_dataset.py).

Arrays: from_arrays copies the arrays it is given (any integer dtype, any
layout), so later changes of the caller's arrays never change a result; the
copies are read-only and private.

Ownership: the chunks (lnk_batch, owned by the library's allocations) belong
to one _Chunks object, freed once when nothing uses it; a HessianOperator
holds a reference to the chunks it borrows.  Copies of a Data (copy.copy,
copy.deepcopy) share its (immutable) chunks; a pickled Data holds its sources
(the arrays, or the file paths, read again at first use).

All of the binding to the library's batch functions is in this module, so
that a data-set type in the library can replace it here alone.
"""
import copy
import ctypes
import os
import threading

import numpy as np

from . import _lib
from ._lib import Error, lib, check
from ._names import renamed

__all__ = ["Data"]


class _Chunks:
    """The chunks of one data set for one kind of model (owning lnk_batch)."""

    def __init__(self, n):
        self.arr = (_lib.Batch * max(n, 1))()
        self.n = 0

    def __del__(self):
        free = getattr(lib, "lnk_batch_free", None)
        for i in range(self.n):
            if free is not None:
                free(ctypes.byref(self.arr[i]))
        self.n = 0

    def ptr(self):
        return ctypes.cast(self.arr, ctypes.POINTER(_lib.Batch))

    # immutable once made: copies share it; it is never pickled (a Data is
    # pickled by its sources)
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        raise TypeError("lnkit.Data's chunks are not picklable; pickle the lnkit.Data")


def _int_array(name, a):
    """A private, read-only int64 C-contiguous copy of the token ids a."""
    if a is None:
        return None
    try:
        arr = np.asarray(a)
    except (ValueError, TypeError) as e:  # ragged nested lists
        raise Error("data: '%s': expected a 2-D array of integer token ids [B, len], got %s "
                    "that NumPy cannot make an array of (%s)" % (name, type(a).__name__, e)) \
            from None
    if arr.dtype.kind not in "iu":
        hint = (" (whole numbers stored as floats: convert with .astype(np.int64))"
                if arr.dtype.kind == "f" else "")
        raise Error("data: '%s': expected integer token ids (int8 to int64, uint8 to uint64), "
                    "got dtype %s%s" % (name, arr.dtype, hint))
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise Error("data: '%s': expected a 2-D array [B, len] with B, len >= 1, got shape %s"
                    % (name, arr.shape))
    if arr.shape[0] > 2**31 - 1 or arr.shape[1] > 2**31 - 1:
        raise Error("data: '%s': shape %s is too large" % (name, arr.shape))
    if arr.dtype.kind == "u" and int(arr.max()) > 2**63 - 1:
        raise Error("data: '%s': id %d is out of range" % (name, int(arr.max())))
    out = np.array(arr, dtype=np.int64, order="C", copy=True)
    out.flags.writeable = False
    return out


class Data:
    """A data set: batch files (safetensors, MODEL.md §4 arrays) or arrays of
    token ids, cut into chunks of `chunk` rows (None: one chunk per source).

        Data("b.safetensors")
        Data(["b1.safetensors", "b2.safetensors"], chunk=64)
        Data.from_arrays(tgt=ids)                 # lm: tgt [B, T+1] int
        Data.from_arrays(src=ids, labels=lab)     # cls; seq2seq: src and tgt
        Data.synthetic(model, rows=8, len=16, rng_seed=1)

    The files are read when a model first uses the data (their contents are
    checked against that model: task, ids within the vocabulary); a missing
    file is reported at once.
    """

    def __init__(self, files, chunk=None):
        if isinstance(files, (str, bytes, os.PathLike)):
            files = [files]
        try:
            files = list(files)
        except TypeError:
            raise Error("data: expected a file path or a list of them, got %s"
                        % type(files).__name__) from None
        if not files:
            raise Error("data: no batch file given")
        self._sources = []
        for f in files:
            p = _lib.fspath(f, "data")
            if not os.path.exists(p):
                raise Error("%s: no such file" % os.fsdecode(p))
            if os.path.isdir(p):
                raise Error("%s: is a folder, expected a batch file" % os.fsdecode(p))
            self._sources.append(("file", p))
        self._set_chunk(chunk)

    # ------------------------------------------------------------ copies
    @classmethod
    def _restore(cls, sources, chunk, cache=None):
        self = cls.__new__(cls)
        self._sources = []
        for kind, s in sources:
            if kind == "arrays":
                s = {k: _int_array(k, a) for k, a in s.items()}
            self._sources.append((kind, s))
        self._set_chunk(chunk)
        if cache:
            self._cache = dict(cache)
        return self

    def __copy__(self):
        return Data._restore(self._sources, self.chunk, self._cache)

    def __deepcopy__(self, memo):
        out = Data._restore(copy.deepcopy(self._sources, memo), self.chunk, self._cache)
        memo[id(self)] = out
        return out

    def __reduce__(self):
        return (_restore_data, (self._sources, self.chunk))

    def _set_chunk(self, chunk):
        if chunk is not None:
            if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)):
                raise Error("data: chunk: expected a number of rows (int >= 1) or None, got %r"
                            % (chunk,))
            if not 1 <= int(chunk) <= 2**31 - 1:
                raise Error("data: chunk: expected a number of rows >= 1, got %d" % chunk)
            chunk = int(chunk)
        self.chunk = chunk
        self._cache = {}
        self._lock = threading.Lock()

    @classmethod
    def from_arrays(cls, tgt=None, src=None, labels=None, chunk=None):
        """One batch given as arrays of token ids: lm tgt [B, T+1]; cls src
        [B, S] and labels [B, S]; seq2seq src and tgt.  Any integer dtype
        (int8 to int64, uint8 to uint64) and layout (C, Fortran, strided,
        read-only); floats, bool and object arrays are refused.  The arrays
        are copied here: changing them afterwards changes nothing."""
        self = cls.__new__(cls)
        arrays = {"src": _int_array("src", src), "tgt": _int_array("tgt", tgt),
                  "labels": _int_array("labels", labels)}
        if all(a is None for a in arrays.values()):
            raise Error("data: from_arrays needs tgt, src or both (and labels for cls)")
        rows = {a.shape[0] for a in arrays.values() if a is not None}
        if len(rows) > 1:
            raise Error("data: the arrays have different numbers of rows: %s"
                        % {k: a.shape for k, a in arrays.items() if a is not None})
        if arrays["labels"] is not None and (arrays["src"] is None or
                                             arrays["labels"].shape != arrays["src"].shape):
            raise Error("data: 'labels' must have the shape of 'src'")
        self._sources = [("arrays", arrays)]
        self._set_chunk(chunk)
        return self

    @classmethod
    @renamed("Data.synthetic", batch="rows", length="len", seed="rng_seed")
    def synthetic(cls, model, rows=8, len=16, rng_seed=0, chunk=None):
        """Synthetic token ids for model (lnk_batch_synthetic, as `lnkit batch
        --synthetic --rows R --len T --rng-seed N`, with its names and
        defaults): `rows` rows of `len` positions, ids uniform in [4, V);
        rng_seed in --rng-seed's range, so the program can make the same
        batch.  batch=, length=, seed= are deprecated names of rows=, len=,
        rng_seed=."""
        for name, v, lo in (("rows", rows, 1), ("len", len, 1), ("rng_seed", rng_seed, 0)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo or \
                    v > 2**31 - 1:
                raise Error("data: synthetic: %s: expected an integer from %d to %d, got %r"
                            % (name, lo, 2**31 - 1, v))
        b = _lib.Batch()
        check(lib.lnk_batch_synthetic(model._m, int(rows), int(len), int(rng_seed),
                                      ctypes.byref(b)))
        try:
            arrays = {}
            for name, cols in (("src", b.S), ("tgt", b.T), ("labels", b.S)):
                p = getattr(b, name)
                arrays[name] = (np.ctypeslib.as_array(p, shape=(b.B, cols)).copy()
                                if p and cols > 0 else None)
        finally:
            lib.lnk_batch_free(ctypes.byref(b))
        return cls.from_arrays(chunk=chunk, **arrays)

    @property
    def files(self):
        return [os.fsdecode(s[1]) for s in self._sources if s[0] == "file"]

    def __repr__(self):
        what = ", ".join(repr(f) for f in self.files) or "arrays"
        return "lnkit.Data([%s], chunk=%s)" % (what, self.chunk)

    # -------------------------------------------------------------- binding
    def _chunks(self, model):
        """The chunks for model (made on first use, then kept)."""
        c = model.config
        key = (c.get("task"), c.get("V_src"), c.get("V_tgt"), c.get("n_classes"))
        with self._lock:
            ch = self._cache.get(key)
            if ch is None:
                ch = self._make(model)
                self._cache = {key: ch}  # one kind at a time: memory of one copy
            return ch

    def _per(self, B):
        return self.chunk if self.chunk else B

    def _make(self, model):
        batches = []
        try:
            for kind, s in self._sources:
                b = _lib.Batch()
                if kind == "file":
                    check(lib.lnk_batch_load(s, model._m, ctypes.byref(b)))
                    batches.append((b, None))
                else:
                    keep = {}
                    b.B = next(a.shape[0] for a in s.values() if a is not None)
                    for name in ("src", "tgt", "labels"):
                        a = s[name]
                        if a is not None:
                            keep[name] = a
                            setattr(b, name, a.ctypes.data_as(_lib.c_int64_p))
                    b.S = s["src"].shape[1] if s["src"] is not None else 0
                    b.T = s["tgt"].shape[1] if s["tgt"] is not None else 0
                    b.owns = 0
                    batches.append((b, keep))
                    check(lib.lnk_batch_check(model._m, ctypes.byref(b)))
            n = sum((b.B + self._per(b.B) - 1) // self._per(b.B) for b, _ in batches)
            out = _Chunks(n)
            for b, _ in batches:
                per = self._per(b.B)
                for r in range(0, b.B, per):
                    check(lib.lnk_batch_slice(ctypes.byref(b), r, min(r + per, b.B),
                                              ctypes.byref(out.arr[out.n])))
                    out.n += 1
            return out
        finally:
            for b, _ in batches:
                lib.lnk_batch_free(ctypes.byref(b))

    def n_chunks(self, model):
        """The number of chunks for model."""
        return self._chunks(model).n

    def n_scored(self, model):
        """The number of scored tokens (the weight of the data set's mean loss)."""
        ch = self._chunks(model)
        return sum(lib.lnk_batch_n_scored(model._m, ctypes.byref(ch.arr[i])) for i in range(ch.n))


def _restore_data(sources, chunk):
    """An unpickled Data."""
    return Data._restore(sources, chunk)
