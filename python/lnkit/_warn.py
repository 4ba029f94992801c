"""Warnings that point at the user's line: the stacklevel is counted out of
the lnkit package, so a wrapper (the @renamed one of _names.py) or a helper
between the user's call and the warning moves nothing."""
import os
import sys
import warnings

_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _internal(frame):
    # the frames warnings.warn skips without counting them (import machinery)
    name = frame.f_code.co_filename
    return "importlib" in name and "_bootstrap" in name


def outside_level():
    """The stacklevel, for a warnings.warn called by the caller of this
    function, of the first frame outside lnkit (1 = that caller)."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and (_internal(frame) or
                                        os.path.abspath(frame.f_code.co_filename)
                                        .startswith(_HERE)):
        frame = frame.f_back
        if not _internal(frame):
            level += 1
    return level


def warn(message, category=None):
    """warnings.warn at the first line outside lnkit."""
    warnings.warn(message, category, stacklevel=outside_level())
