"""Run by test_lifetimes.py in a child process, so that a crash (a double
free, a use after free: exit 134 or 139) fails that test instead of killing
pytest.  For one public class of lnkit:

  python3 lifetimes_child.py CLASS CONFIG WEIGHTS BATCH

makes an instance (FACTORIES), takes its copy.copy, copy.deepcopy and pickle
round trip, then, for every order of deleting the four (4! = 24), deletes
them one by one with gc.collect() after each and checks that every object
left still works and gives the original's values (value()).  A copy that is
refused must raise lnkit.Error or TypeError naming the class.  Then the
copies' independence (a change to one is not seen by the others, except
where the class documents sharing).  Prints "ok CLASS N" at the end."""
import copy
import gc
import itertools
import pickle
import sys

import numpy as np

import lnkit

NAME, CONFIG, WEIGHTS, BATCH = sys.argv[1:5]
DATA = lnkit.Data(BATCH)
MODEL = lnkit.Model.load(CONFIG, WEIGHTS)
SMALL = dict(probes=2, max_steps=6, runs=1, steps=4)


def model():
    return lnkit.Model.load(CONFIG, WEIGHTS)


def data():
    d = lnkit.Data.from_arrays(**{k: v for k, v in read_batch().items()}, chunk=2)
    d.n_chunks(MODEL)  # its chunks made: copies must not free them twice
    return d


def read_batch():
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from conftest import read_safetensors
    return read_safetensors(BATCH)


def operator():
    return model().hessian(data(), block="*.attn.*")  # the operator holds the only references


def quiet(f, *a, **kw):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", lnkit.ConvergenceWarning)
        return f(*a, **kw)


FACTORIES = {
    "Error": lambda: lnkit.Error("data: 'tgt': a message", 3),
    "ConvergenceWarning": lambda: lnkit.ConvergenceWarning("2 of 5 did not converge", 2, 5, 1e-3,
                                                           1e-6, 200),
    "BlasWarning": lambda: lnkit.BlasWarning("a slower kernel"),
    "Model": model,
    "Params": lambda: model().params,
    "Data": data,
    "HessianOperator": operator,
    "EigsResult": lambda: quiet(lnkit.eigs, operator(), k=2, which="both", vectors=True,
                                max_steps=20),
    "Density": lambda: lnkit.density(operator(), runs=2, steps=5),
    "Trace": lambda: lnkit.trace(operator(), probes=6, method="hutchpp"),
    "BlockStats": lambda: quiet(lnkit.blocks, model(), data(), group=["*.ffn.*"],
                                block="dec.0.attn.w*", **SMALL),
}


def value(x):
    """What x computes or holds, comparable with ==."""
    if isinstance(x, BaseException):
        return (type(x), str(x), sorted((k, repr(v)) for k, v in vars(x).items()))
    if isinstance(x, lnkit.Model):
        return (x.loss(DATA), x.theta.tobytes(), repr(x.config))
    if isinstance(x, lnkit.Params):
        return tuple((k, v.tobytes()) for k, v in x.items())
    if isinstance(x, lnkit.Data):
        return (MODEL.loss(x), x.n_chunks(MODEL), x.n_scored(MODEL))
    if isinstance(x, lnkit.HessianOperator):
        v = np.linspace(-1, 1, x.shape[0])
        return (x.shape, tuple(x.tensors), x.operator, (x @ v).tobytes())
    return tuple(sorted((k, _plain(v)) for k, v in vars(x).items() if k != "elapsed"))


def _plain(v):
    if isinstance(v, np.ndarray):
        return (v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, list):
        return tuple(_plain(e) for e in v)
    return repr(v)


def copies(x):
    """{how: copy} for the copies that work; refusals checked."""
    out = {"original": x}
    for how, f in (("copy", copy.copy), ("deepcopy", copy.deepcopy),
                   ("pickle", lambda o: pickle.loads(pickle.dumps(o)))):
        try:
            out[how] = f(x)
        except (lnkit.Error, TypeError) as e:
            assert type(x).__name__ in str(e), "%s of %s: %s does not name the class" % (
                how, NAME, e)
            print("refused %s: %s" % (how, e))
    return out


def check_orders():
    ref = value(FACTORIES[NAME]())
    n = 0
    hows = list(copies(FACTORIES[NAME]()))
    for order in itertools.permutations(hows):
        objs = copies(FACTORIES[NAME]())
        for how in order:
            del objs[how]
            gc.collect()
            for other, o in objs.items():
                assert value(o) == ref, "%s: %s differs after del of %s (order %s)" % (
                    NAME, other, how, order)
        n += 1
    return n


def check_independent():
    """A change to one copy is not seen by the others (a shallow copy of
    Params views shares the vector: documented)."""
    shared = {("copy", "original"), ("original", "copy")} if NAME == "Params" else set()
    ref = value(FACTORIES[NAME]())
    for how in list(copies(FACTORIES[NAME]())):
        objs = copies(FACTORIES[NAME]())
        o = objs[how]
        if NAME == "Model":
            o.theta[:] = 0.5
        elif NAME == "Params":
            next(iter(o.values()))[...] = 0.5
        elif NAME == "HessianOperator":
            o.close()
        else:
            return
        for other, p in objs.items():
            if other != how and (how, other) not in shared:
                assert value(p) == ref, "%s: changing the %s changed the %s" % (NAME, how, other)


def check_dependents():
    """A model, a data set, an operator over them and views of the model's
    weights, deleted in every order: what is left works."""
    m0 = model()
    ref = {"operator": value(m0.hessian(data())), "params": value(m0.params),
           "model": value(m0), "data": value(data())}
    for order in itertools.permutations(ref):
        m, d = model(), data()
        objs = {"model": m, "data": d, "operator": m.hessian(d), "params": m.params}
        del m, d
        for what in order:
            del objs[what]
            gc.collect()
            for other, o in objs.items():
                assert value(o) == ref[other], "%s after del of %s" % (other, what)


if __name__ == "__main__":
    if NAME not in FACTORIES:
        sys.exit("no factory for lnkit.%s in %s: add one" % (NAME, __file__))
    n = check_orders()
    check_independent()
    if NAME == "HessianOperator":
        check_dependents()
    print("ok %s %d" % (NAME, n))
