"""One name, one meaning (issue 31.2, docs/cli.md): every keyword of a
Python function that mirrors an lnkit command is an option of that command,
its long name with '_' for '-' (rng_seed= is --rng-seed), read here from the
command's --help, which the command's option table generates; the options
before the model configuration's flags, which are the model's (set through
lnkit.Model).  The few keywords the programs have no option for are listed
below with the reason.  A keyword's default is the one --help shows.  The
names a keyword had before keep working for one release: a
DeprecationWarning naming the old and the new name, the same result; both
given are refused, naming both."""
import inspect
import re
import subprocess
import warnings

import numpy as np
import pytest

import lnkit
from conftest import lnkit_bin

FUNCTIONS = {"eigs": lnkit.eigs, "density": lnkit.density, "trace": lnkit.trace,
             "blocks": lnkit.blocks, "hvp": lnkit.Model.hvp, "batch": lnkit.Data.synthetic,
             "hessian": lnkit.Model.hessian}
# the command whose options a function's keywords are, where it is not the name:
# m.hessian's are the operator's, as every curvature command takes them
COMMAND = {"hessian": "eigs"}

# Keywords with no option of that name, and why (any of the functions).
PYTHON_ONLY = {
    "m": "the model (or a HessianOperator) as an object; the programs read --config and "
         "--weights",
    "data": "an lnkit.Data or batch file paths: the programs' --batch (repeated) and --chunk",
    "progress": "a function called with the run's progress; the programs print it",
}
PYTHON_ONLY_OF = {
    "hessian": {"self": "the model whose m.hessian it is (--config, --weights)"},
    "hvp": {"self": "the model whose m.hvp it is (--config, --weights)",
            "v": "the vector as an array; --vector names a file holding it"},
    "batch": {"model": "the model whose task and vocabulary the ids are drawn for (--config)",
              "chunk": "rows per chunk of the data set made: the curvature commands' --chunk, "
                       "applied when they read the file lnkit batch writes"},
}
# Keywords whose option a program does not take yet: allowed with or without it.
def help_options(cmd):
    """{option (long name): its help text, joined} of `lnkit CMD --help`,
    the sections before the model configuration's."""
    text = subprocess.run([lnkit_bin(), cmd, "--help"], capture_output=True, text=True,
                          check=True).stdout
    own, sep, _ = text.partition("\nModel configuration")
    assert sep, "lnkit %s --help has no model configuration section" % cmd
    opts, cur = {}, None
    for line in own.splitlines():
        m = re.match(r"  (?:-\w, )?--([a-z0-9-]+)(?: \S+)?(?:\s{2,}(.*))?$", line)
        if m:
            cur = m.group(1)
            opts[cur] = m.group(2) or ""
        elif cur and line.startswith(" " * 10) and line.strip():
            opts[cur] += " " + line.strip()
        else:
            cur = None
    assert len(opts) >= 4, (cmd, opts)
    return opts


def help_default(text):
    """The default --help shows at the end of an option's text: '(1e-06)';
    of `lnkit batch --rows`, '(synthetic 8, text 0)', the synthetic one."""
    m = re.search(r"\(([^()]*)\)\s*$", text)
    if not m:
        return None
    s = re.search(r"synthetic (\S+),", m.group(1))
    return s.group(1) if s else m.group(1)


def same(py, shown):
    if isinstance(py, str):
        return py == shown
    try:
        return float(shown) == py
    except ValueError:
        return False


def keywords(f):
    return list(inspect.signature(f).parameters)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_keywords_are_the_options(name):
    cmd = COMMAND.get(name, name)
    opts = help_options(cmd)
    only = dict(PYTHON_ONLY, **PYTHON_ONLY_OF.get(name, {}))
    strange = [k for k in keywords(FUNCTIONS[name])
               if k not in only and k.replace("_", "-") not in opts]
    assert not strange, "%s: keywords that are no option of `lnkit %s` (%s): %s" % (
        FUNCTIONS[name].__qualname__, cmd, ", ".join("--" + o for o in opts), strange)
    # the list stays true: a keyword called Python-only is no option of the command
    clash = [k for k in keywords(FUNCTIONS[name]) if k in only and k.replace("_", "-") in opts]
    assert not clash, "%s: listed as Python-only, but `lnkit %s` has %s" % (name, cmd, clash)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_defaults_are_the_options(name):
    """A keyword's default (a number or a name; None stands for the library's,
    see test_parity) is the default `lnkit CMD --help` shows; so are
    lnkit.defaults()'s, whose keys are the keywords."""
    cmd = COMMAND.get(name, name)
    opts = help_options(cmd)
    pairs = [(k, p.default) for k, p in inspect.signature(FUNCTIONS[name]).parameters.items()
             if isinstance(p.default, (int, float, str)) and not isinstance(p.default, bool)]
    pairs += list(lnkit.defaults().get(name, {}).items())
    assert pairs
    for k, v in pairs:
        o = k.replace("_", "-")
        assert o in opts, "lnkit.defaults()[%r][%r]: `lnkit %s` has no --%s" % (cmd, k, cmd, o)
        shown = help_default(opts[o])
        assert same(v, shown), "%s=%r, but `lnkit %s --help` shows --%s (%s)" % (
            k, v, cmd, o, shown)


# ---------------------------------------------------------------- old names

@pytest.fixture(scope="module")
def small():
    m = lnkit.Model({"d": 8, "h": 2, "L": 1, "V": 12, "norm_pos": "pre"}, seed=1)
    return m, lnkit.Data.synthetic(m, rows=3, len=5, rng_seed=2)


BLOCKS = dict(block="dec.0.ffn.w1", probes=2, runs=1, steps=4)


def _blocks(m, d, **kw):
    if "eig_steps" not in kw:
        kw.setdefault("max_steps", 8)
    b = lnkit.blocks(m, d, **dict(BLOCKS, **kw))
    return b.names, b.frob, b.top, b.bottom, b.eig_steps, b.t, b.density


# function, the old keyword and a value, the new keyword and that value in its meaning
CASES = [
    ("eigs", lambda m, d, **kw: lnkit.eigs(m, d, k=1, max_steps=30, **kw).values,
     ("seed", 5), ("rng_seed", 5)),
    ("density", lambda m, d, **kw: lnkit.density(m, d, runs=2, steps=6, **kw).density,
     ("seed", 5), ("rng_seed", 5)),
    ("density", lambda m, d, **kw: lnkit.density(m, d, runs=2, steps=6, **kw).t,
     ("per_sigma", 6), ("grid_per_sigma", 6)),
    ("trace", lambda m, d, **kw: lnkit.trace(m, d, probes=4, **kw).trace,
     ("seed", 5), ("rng_seed", 5)),
    ("blocks", _blocks, ("seed", 5), ("rng_seed", 5)),
    ("blocks", _blocks, ("per_sigma", 6), ("grid_per_sigma", 6)),
    ("blocks", _blocks, ("eig_steps", 3), ("max_steps", 3)),
    ("blocks", _blocks, ("groups", ["*.ffn.b1"]), ("group", ["*.ffn.b1"])),
    ("blocks", lambda m, d, **kw: _blocks(m, d, group="*.ffn.b*", **kw),
     ("tensors", False), ("no_tensors", True)),
    ("Data.synthetic", lambda m, d, **kw: m.loss(lnkit.Data.synthetic(m, **kw)),
     ("batch", 3), ("rows", 3)),
    ("Data.synthetic", lambda m, d, **kw: m.loss(lnkit.Data.synthetic(m, **kw)),
     ("length", 7), ("len", 7)),
    ("Data.synthetic", lambda m, d, **kw: m.loss(lnkit.Data.synthetic(m, **kw)),
     ("seed", 5), ("rng_seed", 5)),
]


def _equal(a, b):
    if isinstance(a, tuple):
        return all(_equal(x, y) for x, y in zip(a, b)) and len(a) == len(b)
    return np.array_equal(np.asarray(a), np.asarray(b))


def _quiet(call):
    """call(), its DeprecationWarnings (ConvergenceWarnings of the small
    runs ignored)."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", lnkit.ConvergenceWarning)
        out = call()
    return out, [w for w in rec if issubclass(w.category, DeprecationWarning)]


@pytest.mark.parametrize("what,f,old,new", CASES,
                         ids=["%s-%s" % (c[0], c[2][0]) for c in CASES])
def test_old_name_warns_and_means_the_new(small, what, f, old, new):
    m, d = small
    ref, dep = _quiet(lambda: f(m, d, **{new[0]: new[1]}))
    assert not dep, [str(w.message) for w in dep]
    got, dep = _quiet(lambda: f(m, d, **{old[0]: old[1]}))
    assert len(dep) == 1, [str(w.message) for w in dep]
    msg = str(dep[0].message)
    assert msg.startswith("lnkit.%s: %s= is deprecated, use %s=" % (what, old[0], new[0])), msg
    assert dep[0].filename == __file__          # the caller's line, not lnkit's
    assert _equal(got, ref)
    default, _ = _quiet(lambda: f(m, d))
    assert not _equal(default, ref), "the value makes no difference: the test tests nothing"
    with pytest.raises(lnkit.Error) as e:
        f(m, d, **{old[0]: old[1], new[0]: new[1]})
    assert isinstance(e.value, TypeError)
    assert "%s= and %s= (its deprecated name) both given" % (new[0], old[0]) in str(e.value)


def test_every_old_name_is_tested():
    tested = {(c[0].split(".")[-1], c[2][0], c[3][0]) for c in CASES}
    have = {(k.split(".")[-1], old, new) for k, f in (("eigs", lnkit.eigs),
                                                       ("density", lnkit.density),
                                                       ("trace", lnkit.trace),
                                                       ("blocks", lnkit.blocks),
                                                       ("synthetic", lnkit.Data.synthetic))
            for old, new in f.renamed.items()}
    assert tested == have
    for k, f in FUNCTIONS.items():         # an old name is not a keyword any more
        assert not set(getattr(f, "renamed", {})) & set(keywords(f)), k


def test_trace_stderr_and_old_defaults_keys(small):
    """Trace's standard error is .stderr, as the column and JSON key of
    `lnkit trace`; .std_error and defaults()'s old keys warn for one release."""
    m, d = small
    t = lnkit.trace(m, d, probes=4)
    with pytest.warns(DeprecationWarning, match=r"Trace\.std_error is deprecated, use \.stderr"):
        assert t.std_error == t.stderr > 0
    dd = lnkit.defaults()
    for cmd, old, new in (("eigs", "seed", "rng_seed"), ("density", "per_sigma",
                                                         "grid_per_sigma"),
                          ("blocks", "eig_steps", "max_steps")):
        assert old not in dd[cmd]
        for read in (lambda: dd[cmd][old], lambda: dd[cmd].get(old)):
            with pytest.warns(DeprecationWarning, match=r"\[%r\]\[%r\] is deprecated, use "
                              r"\[%r\]" % (cmd, old, new)) as rec:
                assert read() == dd[cmd][new]
            assert rec[0].filename == __file__
    assert dd["trace"].get("eig_steps", "none") == "none"
    with pytest.raises(KeyError):
        dd["trace"]["eig_steps"]
