"""baton's errors as exceptions: one class per BATON_E* code, named after it
(BATON_ELOST is baton.ELOST), all subclasses of BatonError. The classes are
made from the header's table (baton_errno_t in baton/_cdef.py, which
tests/test_drift.py checks against include/baton/baton_defs.h and the
library's baton_err_name), so no code is missing here.

    try:
        ...
    except baton.EWOULDBLOCK:
        ...
    except baton.BatonError as e:
        print(e.code, e.name, e)
"""
from ._ffi import ffi, lib


class BatonError(Exception):
    """A libbaton call failed. code is the negative BATON_E* value, name its
    name ("BATON_ELOST"), and str(e) the library's detailed message."""

    code = 0
    name = "BATON_E?"

    def __init__(self, message=None, code=None):
        if code is not None:
            self.code = code
        super().__init__(message or self.strerror(self.code))

    @staticmethod
    def strerror(code):
        return ffi.string(lib.baton_strerror(code)).decode()


_BY_CODE = {}

# The Python exceptions some codes also are, so that generic handlers work:
# a wait that timed out is a TimeoutError, a refusal a PermissionError.
_ALSO = {"BATON_ETIMEDOUT": (TimeoutError,), "BATON_EPERM": (PermissionError,)}


def _make_classes():
    for code, name in sorted(ffi.typeof("baton_errno_t").elements.items(), reverse=True):
        short = name[len("BATON_"):]
        cls = type(short, (BatonError,) + _ALSO.get(name, ()), {
            "code": code, "name": name,
            "__doc__": "%s: %s" % (name, BatonError.strerror(code))})
        cls.__module__ = "baton"
        _BY_CODE[code] = cls
        globals()[short] = cls


_make_classes()


def error_class(code):
    """The class of a BATON_E* code (BatonError for one outside the table)."""
    return _BY_CODE.get(code, BatonError)


def make_error(code, message=None):
    """An exception for code, with the library's message if given."""
    cls = error_class(code)
    err = cls(message or None)
    if cls is BatonError:
        err.code = code
    return err


def check(rv, message=None):
    """Raise the exception of a negative return value; pass others through."""
    if rv < 0:
        raise make_error(rv, message() if callable(message) else message)
    return rv


__all__ = ["BatonError", "error_class", "make_error", "check"] + sorted(
    cls.__name__ for cls in _BY_CODE.values())
