"""The suite's own machinery: ``pytest -n --dist loadgroup`` keeps an ``xdist_group`` on one worker.

tests/conftest.py puts the tests that share a module-scoped fixture (a QEMU recording, a Dask
cluster) in one group, so the fixture is made once; pytest 9.2 with pytest-xdist 3.8 ignored the
groups silently (pyproject.toml pins pytest below 9.2). This runs a real pytest with two workers.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

TESTS = """
import pytest

@pytest.fixture(scope="module")
def shared():
    return object()

def test_shared_0(shared): pass
def test_shared_1(shared): pass
def test_shared_2(shared): pass
def test_shared_3(shared): pass
"""


def test_tests_sharing_a_module_fixture_run_on_one_worker(tmp_path: Path) -> None:
    """Four tests that share a module-scoped fixture, two workers: all four on the same worker."""
    (tmp_path / "test_grouped.py").write_text(TESTS)
    conftest = Path(__file__).with_name("conftest.py")
    (tmp_path / "conftest.py").write_text(conftest.read_text())
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup", "-v"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(conftest.parent), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    workers = re.findall(r"\[(gw\d)\] .*PASSED .*test_shared_\d", done.stdout)
    assert len(workers) == 4 and len(set(workers)) == 1, done.stdout
