"""The tests import the installed package, not the source tree."""
import os
import sys
import sysconfig

import baton

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def test_imported_from_the_venv_not_the_source_tree():
    path = os.path.realpath(baton.__file__)
    site = os.path.realpath(sysconfig.get_paths()["purelib"])
    assert sys.prefix != sys.base_prefix, "not running in a venv"
    assert path.startswith(site + os.sep), (path, site)
    assert not path.startswith(os.path.realpath(SRC) + os.sep), path


def test_the_library_is_the_builds():
    assert os.environ.get("BATON_LIBRARY", "").endswith("libbaton.so.4")
    assert baton.Client and baton.Hold and baton.Cancel and baton.Watch
