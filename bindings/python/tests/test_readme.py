"""The top README's Python example, as it is written there, against a real
cluster (the endpoints of `make run` replaced by the test cluster's)."""
import os
import re
import subprocess
import sys

from conftest import REPO

MAKE_RUN_ENDPOINTS = "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003"


def readme_python_example():
    with open(os.path.join(REPO, "README.md")) as f:
        text = f.read()
    section = text[text.index("## Python and Go"):]
    m = re.search(r"python3 - <<'EOF'\n(.*?)\nEOF\n", section, re.S)
    assert m, "README.md's Python and Go section has no python3 heredoc"
    return m.group(1)


def test_the_readmes_python_example_runs(cluster):
    code = readme_python_example()
    assert MAKE_RUN_ENDPOINTS in code
    code = code.replace(MAKE_RUN_ENDPOINTS, cluster.endpoints)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert re.fullmatch(r"fence [1-9][0-9]*\n", out.stdout), out.stdout
    assert cluster.lock_number("demo", "total_holders") == 0
