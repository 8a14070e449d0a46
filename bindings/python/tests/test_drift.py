"""The binding cannot drift from libbaton's public headers:
(a) baton/_cdef.py as installed is what gen_cdef.py makes from include/;
(b) every struct's size and field offsets and every BATON_* constant, as
    cffi sees them, equal what a C compiler says from the headers;
(c) every baton_errno_t entry's name is the library's baton_err_name."""
import importlib.util
import os
import re
import subprocess

from baton import _cdef
from baton._ffi import ffi, lib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
INCLUDE = os.path.join(REPO, "include")
HEADERS = ("baton_defs.h", "baton.h", "baton_async.h")


def header_text():
    return "".join(open(os.path.join(INCLUDE, "baton", h)).read() for h in HEADERS)


def test_cdef_is_generated_from_the_headers():
    spec = importlib.util.spec_from_file_location(
        "gen_cdef", os.path.join(REPO, "bindings", "python", "gen_cdef.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    with open(_cdef.__file__) as f:
        shipped = f.read()
    assert gen.generate(INCLUDE) == shipped, \
        "baton/_cdef.py is stale: run gen_cdef.py > bindings/python/baton/_cdef.py"


def struct_names():
    """Every struct the headers define with a body (typedef struct X {...} X;)."""
    return sorted(set(re.findall(r"typedef struct (\w+) \{", header_text())))


def int_constants():
    return sorted(n for n in dir(lib) if n.startswith("BATON_") and isinstance(getattr(lib, n), int))


def c_layout(tmp_path):
    """What cc says: {"sizeof T": n, "offsetof T.f": n, "NAME": value}."""
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "baton/baton.h"',
             '#include "baton/baton_async.h"', 'int main(void) {']
    for t in struct_names():
        lines.append('printf("sizeof %s %%zu\\n", sizeof(%s));' % (t, t))
        for f, _ in ffi.typeof(t).fields:
            lines.append('printf("offsetof %s.%s %%zu\\n", offsetof(%s, %s));' % (t, f, t, f))
    for n in int_constants():
        lines.append('printf("%s %%lld\\n", (long long)(%s));' % (n, n))
    lines += ["return 0;", "}"]
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "layout"
    # Neither the compiler nor the program needs a sanitizer's runtime,
    # which run-python.sh preloads into python under make SAN=...
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", "-I", INCLUDE, "-o", str(exe), str(src)],
                   check=True, env=env)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True, env=env).stdout
    return {k: int(v) for k, v in (line.rsplit(" ", 1) for line in out.splitlines())}


def test_struct_layouts_and_constants_match_the_c_compiler(tmp_path):
    names = struct_names()
    # The structs a caller fills in or reads are all there (the regex found them).
    for t in ("baton_opts", "baton_lock_args", "baton_holder", "baton_waiter",
              "baton_lock_state", "baton_event", "baton_async_hooks"):
        assert t in names
    c = c_layout(tmp_path)
    mine = {}
    for t in names:
        mine["sizeof " + t] = ffi.sizeof(t)
        for f, _ in ffi.typeof(t).fields:
            mine["offsetof %s.%s" % (t, f)] = ffi.offsetof(t, f)
    for n in int_constants():
        mine[n] = getattr(lib, n)
    assert len(int_constants()) > 40
    assert {k: v for k, v in mine.items() if c.get(k) != v} == {}, \
        {k: (v, c.get(k)) for k, v in mine.items() if c.get(k) != v}


def test_error_names_are_the_librarys():
    elements = ffi.typeof("baton_errno_t").elements
    assert len(elements) >= 27
    for code, name in elements.items():
        assert ffi.string(lib.baton_err_name(code)).decode() == name, (code, name)
