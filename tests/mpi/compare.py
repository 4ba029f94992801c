#!/usr/bin/env python3
"""Compare two lnkit outputs numerically (tests/mpi/run.sh).

  compare.py csv A B --rtol R [--cols c1,c2] [--key c]   numeric columns of two CSVs
  compare.py st  A B --rtol R                            every tensor of two safetensors

Relative error = max |a - b| / max |a| over each column, or over the whole file for
safetensors (so values near zero are judged against the scale of the whole column or vector).  Non-numeric columns must be equal.
Prints one line with the largest relative error; exit 1 if it exceeds R or the shapes
or names differ."""
import csv, json, struct, sys

def fail(msg):
    print("compare: " + msg)
    sys.exit(1)

def read_st(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        hdr = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in hdr.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        if t["dtype"] != "F64":
            continue
        out[name] = struct.unpack("<%dd" % ((b - a) // 8), data[a:b])
    return out

def rel(xs, ys):
    scale = max((abs(x) for x in xs), default=0.0)
    err = max((abs(x - y) for x, y in zip(xs, ys)), default=0.0)
    return err / scale if scale > 0 else err

def main():
    kind, A, B = sys.argv[1:4]
    opts = dict(zip(sys.argv[4::2], sys.argv[5::2]))
    rtol = float(opts.get("--rtol", "1e-12"))
    worst, where = 0.0, ""
    if kind == "st":
        ta, tb = read_st(A), read_st(B)
        if sorted(ta) != sorted(tb):
            fail("%s and %s hold different tensors" % (A, B))
        # one scale for the whole vector: a tensor whose entries are all
        # rounding noise (e.g. key biases, to which softmax is blind) is
        # judged against the vector, not against itself
        scale = max((abs(x) for k in ta for x in ta[k]), default=0.0) or 1.0
        for k in ta:
            if len(ta[k]) != len(tb[k]):
                fail("tensor %s: %d vs %d values" % (k, len(ta[k]), len(tb[k])))
            r = max((abs(x - y) for x, y in zip(ta[k], tb[k])), default=0.0) / scale
            if r >= worst:
                worst, where = r, k
    else:
        ra = list(csv.DictReader(open(A)))
        rb = list(csv.DictReader(open(B)))
        if len(ra) != len(rb) or (ra and list(ra[0]) != list(rb[0])):
            fail("%s and %s differ in rows or columns (%d vs %d rows)" % (A, B, len(ra), len(rb)))
        cols = opts["--cols"].split(",") if "--cols" in opts else (list(ra[0]) if ra else [])
        for c in cols:
            try:
                xa = [float(r[c]) for r in ra]
                xb = [float(r[c]) for r in rb]
            except ValueError:
                if [r[c] for r in ra] != [r[c] for r in rb]:
                    fail("column %s differs (non-numeric)" % c)
                continue
            r = rel(xa, xb)
            if r >= worst:
                worst, where = r, c
    print("max relative difference %.3g (%s)" % (worst, where))
    sys.exit(0 if worst <= rtol else 1)

main()
