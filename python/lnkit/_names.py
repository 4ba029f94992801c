"""Keyword names: a keyword of a function that mirrors an `lnkit` command is
that command's option, its long name with '_' for '-' (rng_seed= is
--rng-seed, grid_per_sigma= is --grid-per-sigma), so that one name means one
thing in the programs and in Python (docs/cli.md).  A keyword renamed to
that rule keeps its old name for one release: given, it warns
(DeprecationWarning naming both) and means what the new name means; given
beside the new name it is refused (KeywordError, naming both)."""
import functools

from ._lib import Error
from ._warn import warn

__all__ = ["renamed", "KeywordError", "DeprecatedKeys"]


class KeywordError(Error, TypeError):
    """A keyword given twice, under its name and its deprecated one: an
    lnkit.Error, and a TypeError as Python's own 'got multiple values'."""


def _message(what, old, new, note):
    return ("lnkit.%s: %s= is deprecated, use %s= (the program's --%s)%s; %s= will be "
            "removed in the next release" % (what, old, new, new.replace("_", "-"), note, old))


def renamed(what, **old_to_new):
    """Decorator: the deprecated keywords of function `what` (old=new, or
    old=(new, convert) when the value changes meaning too, as tensors=True
    is no_tensors=False).  The wrapper's signature is the function's (new
    names only); wrapper.renamed maps old to new."""
    table = {old: (v if isinstance(v, tuple) else (v, None, "")) for old, v in old_to_new.items()}

    def deco(f):
        @functools.wraps(f)
        def wrapper(*args, **kw):
            for old, (new, convert, note) in table.items():
                if old not in kw:
                    continue
                if new in kw:
                    raise KeywordError("lnkit.%s: %s= and %s= (its deprecated name) both given; "
                                       "give %s= alone" % (what, new, old, new))
                warn(_message(what, old, new, note), DeprecationWarning)
                value = kw.pop(old)
                kw[new] = convert(value) if convert else value
            return f(*args, **kw)

        wrapper.renamed = {old: new for old, (new, _, _) in table.items()}
        return wrapper

    return deco


class DeprecatedKeys(dict):
    """A dict whose renamed keys are still read for one release, with a
    DeprecationWarning (lnkit.defaults()["eigs"]["seed"] is ["rng_seed"])."""

    def __init__(self, what, old_to_new, items):
        super().__init__(items)
        self._what, self._old = what, dict(old_to_new)

    def __missing__(self, key):
        new = self._old.get(key)
        if new is None or new not in self:
            raise KeyError(key)
        warn("lnkit.defaults()[%r][%r] is deprecated, use [%r] (the keyword %s=, the "
             "program's --%s); the old key will be removed in the next release"
             % (self._what, key, new, new, new.replace("_", "-")), DeprecationWarning)
        return self[new]

    def get(self, key, default=None):
        if key in self:
            return self[key]
        try:
            return self.__missing__(key)
        except KeyError:
            return default
