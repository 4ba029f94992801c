"""safetensors files, written by hand (8-byte little-endian header length, JSON
header padded with spaces to a multiple of 8, data buffer): the reference reads
and writes lnkit's files without sharing its reader."""
import json
import struct

import numpy as np
import torch

from .base import RefError

_DT = {"F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "I64": np.dtype("<i8"),
       "I32": np.dtype("<i4"), "U8": np.dtype("u1")}
_DT_NAME = {np.dtype("<f8"): "F64", np.dtype("<i8"): "I64",
            np.dtype("<f4"): "F32", np.dtype("<i4"): "I32"}


def st_read(path):
    """Return ({name: numpy array}, metadata dict)."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise RefError(f"{path}: file of {len(raw)} bytes, expected at least 8")
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        raise RefError(f"{path}: header length {n} exceeds file size {len(raw)}")
    try:
        hdr = json.loads(raw[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RefError(f"{path}: header is not valid JSON ({e})")
    if not isinstance(hdr, dict):
        raise RefError(f"{path}: header is not a JSON object")
    buf = raw[8 + n:]
    meta = hdr.pop("__metadata__", None) or {}
    out = {}
    for name, info in hdr.items():
        try:
            dt = _DT[info["dtype"]]
        except KeyError:
            raise RefError(f"{path}: tensor {name}: unsupported dtype {info.get('dtype')!r}")
        shape = [int(s) for s in info["shape"]]
        b, e = (int(x) for x in info["data_offsets"])
        count = int(np.prod(shape)) if shape else 1
        if not (0 <= b <= e <= len(buf)) or e - b != count * dt.itemsize:
            raise RefError(f"{path}: tensor {name}: data_offsets [{b},{e}] do not match "
                           f"shape {shape} x {dt.itemsize} bytes in a buffer of {len(buf)}")
        out[name] = np.frombuffer(buf[b:e], dtype=dt).reshape(shape).copy()
    return out, meta


def st_write(path, tensors, metadata=None):
    """tensors: ordered {name: array-like (float -> F64, int -> I64)}."""
    hdr = {}
    if metadata:
        hdr["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs, off = [], 0
    for name, t in tensors.items():
        if isinstance(t, torch.Tensor):
            t = t.detach().cpu().numpy()
        a = np.asarray(t)
        if a.dtype.kind == "f":
            a = a.astype("<f8")
        elif a.dtype.kind in "iub":
            a = a.astype("<i8")
        else:
            raise RefError(f"{path}: tensor {name}: cannot write dtype {a.dtype}")
        a = np.ascontiguousarray(a)
        data = a.tobytes()
        hdr[name] = {"dtype": _DT_NAME[a.dtype], "shape": list(a.shape),
                     "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(hdr, separators=(",", ":")).encode("utf-8")
    h += b" " * ((-len(h)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
