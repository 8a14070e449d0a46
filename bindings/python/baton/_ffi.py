"""libbaton through cffi's ABI mode: no compiler is needed to install or
import the package, only libbaton.so.4 at run time.

The library is found as $BATON_LIBRARY (a path), else as "libbaton.so.4"
by the dynamic loader (installed by `make install` or the .deb). The
declarations are the public headers' own (baton/_cdef.py, generated and
checked against them by tests/test_drift.py).
"""
import os

import cffi

from ._cdef import CDEF

SONAME = "libbaton.so.4"

ffi = cffi.FFI()
ffi.cdef(CDEF)


def _load():
    path = os.environ.get("BATON_LIBRARY") or SONAME
    try:
        return ffi.dlopen(path)
    except OSError as e:
        raise ImportError(
            "baton: cannot load %s (%s); install libbaton (make install, or the "
            "baton .deb) or set BATON_LIBRARY to its path" % (path, e)) from e


lib = _load()


def cstr(s):
    """A Python str or bytes as a NUL-terminated char[] cffi keeps alive."""
    if isinstance(s, str):
        s = s.encode()
    return ffi.new("char[]", s)
