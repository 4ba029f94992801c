#!/usr/bin/python3
"""A pairwise-covering set of model configurations (issue 32): every pair of
values of any two options appears in at least one configuration.

The generator is a deterministic greedy one (in the manner of AETG, Cohen et
al. 1997, without its random candidates): while a pair is uncovered, start a
row from the first uncovered pair (options in FACTORS order, values in their
order) and give each other option, in FACTORS order, the value that covers
the most uncovered pairs with the values chosen so far (ties: the first
value).  No randomness, so the set is the same on every run and machine.

tests/pairwise.conf holds the set, one configuration a line as key=value
words (the FACTORS only; a test adds its sizes), for the C tests to read;
`pairwise.py --check FILE` exits 1 if the file differs from the generator's
output or misses a pair, `pairwise.py` prints the set.
"""
import itertools
import sys

# option -> values, first the default
FACTORS = [
    ("norm_pos", ["post", "pre", "peri", "out", "deepnorm", "mix"]),
    ("pos", ["sinusoidal", "learned", "rope", "none"]),
    ("norm", ["layernorm", "rmsnorm", "none"]),
    ("qk_norm", ["none", "layernorm", "rmsnorm"]),
    ("activation", ["relu", "gelu", "swiglu"]),
    ("task", ["lm", "cls", "seq2seq"]),
    ("init", ["xavier", "xavier_normal", "theorem"]),
    ("bias", ["true", "false"]),
    ("tie_output", ["false", "true"]),
    ("label_smoothing", ["0", "0.1"]),
]


def all_pairs(factors=FACTORS):
    """{((i, a), (j, b)) : i < j} over option indices i, j and value indices a, b."""
    out = set()
    for i, j in itertools.combinations(range(len(factors)), 2):
        for a in range(len(factors[i][1])):
            for b in range(len(factors[j][1])):
                out.add(((i, a), (j, b)))
    return out


def covered(rows, factors=FACTORS):
    """The pairs covered by rows (lists of value indices)."""
    out = set()
    for r in rows:
        for i, j in itertools.combinations(range(len(factors)), 2):
            out.add(((i, r[i]), (j, r[j])))
    return out


def generate(factors=FACTORS):
    """Rows of value indices covering every pair."""
    todo = all_pairs(factors)
    rows = []
    k = len(factors)
    while todo:
        (i, a), (j, b) = min(todo)
        row = [None] * k
        row[i], row[j] = a, b
        for f in range(k):
            if row[f] is not None:
                continue
            best, gain = 0, -1
            for v in range(len(factors[f][1])):
                g = 0
                for o in range(k):
                    if o == f or row[o] is None:
                        continue
                    pair = ((f, v), (o, row[o])) if f < o else ((o, row[o]), (f, v))
                    g += pair in todo
                if g > gain:
                    best, gain = v, g
            row[f] = best
        rows.append(row)
        todo -= covered([row], factors)
    return rows


def configs(factors=FACTORS):
    """The covering set as lists of "key=value" words."""
    return [[f"{factors[f][0]}={factors[f][1][v]}" for f, v in enumerate(r)]
            for r in generate(factors)]


def text():
    return "".join(" ".join(c) + "\n" for c in configs())


def main(argv):
    if len(argv) == 2 and argv[0] == "--check":
        with open(argv[1]) as f:
            got = f.read()
        if got != text():
            print(f"pairwise: {argv[1]} differs from the generator's output "
                  f"(rewrite it: tests/ref/pairwise.py > {argv[1]})", file=sys.stderr)
            return 1
        rows = [[dict(FACTORS)[w.split("=")[0]].index(w.split("=")[1])
                 for w in line.split()] for line in got.splitlines()]
        miss = all_pairs() - covered(rows)
        if miss:
            print(f"pairwise: {len(miss)} pairs uncovered", file=sys.stderr)
            return 1
        return 0
    if argv:
        print("usage: pairwise.py [--check FILE]", file=sys.stderr)
        return 2
    sys.stdout.write(text())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
