"""Object lifetimes and copies, for every public class of lnkit (issue 30.4):
copy.copy, copy.deepcopy and pickle give a working, independent object (or
a clear refusal), and deleting the original and its copies in every order,
with the garbage collector, never frees memory another object still uses.
Each class runs in a child process (lifetimes_child.py), so that a crash is
this test's failure; the classes come from lnkit's namespace, so a new one
is covered (or fails until lifetimes_child.py can make one)."""
import os
import subprocess
import sys

import pytest

import lnkit
from conftest import HERE


def public_classes():
    names = {n for n in dir(lnkit) if not n.startswith("_") and isinstance(getattr(lnkit, n), type)}
    return sorted(names | {n for n in lnkit.__all__ if isinstance(getattr(lnkit, n), type)})


def test_public_classes_are_exported():
    """Every public class is in lnkit.__all__ (the list the test below covers)."""
    missing = [n for n in public_classes() if n not in lnkit.__all__]
    assert not missing, "public classes missing from lnkit.__all__: %s" % missing


@pytest.mark.parametrize("name", public_classes())
def test_copy_pickle_del_every_order(name, pre):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(HERE), HERE] +
                                                      sys.path))
    r = subprocess.run([sys.executable, os.path.join(HERE, "lifetimes_child.py"), name,
                        pre.config, pre.weights, pre.batch], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, "lnkit.%s: exit %d\n%s%s" % (name, r.returncode, r.stdout,
                                                           r.stderr[-3000:])
    assert r.stdout.splitlines()[-1] == "ok %s 24" % name or "refused" in r.stdout, r.stdout


def test_closed_operator_copy_refused(pre):
    """The one refusal: an operator closed by H.close() has nothing to copy."""
    import copy
    import pickle
    m = lnkit.Model.load(pre.config, pre.weights)
    H = m.hessian(pre.batch)
    H.close()
    for f in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(lnkit.Error, match=r"HessianOperator.*closed.*model\.hessian"):
            f(H)
