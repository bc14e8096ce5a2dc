"""`make test` runs pytest-xdist with `--dist loadgroup`: a module's tests that share a module-scoped fixture (one real
run several tests assert different things about) must all run on one worker, so the fixture is made once.

The grouping is our conftest's hook (`tests/xdist_scheduling.py` marks them `xdist_group`); xdist only sees marks added
before its own collection hook, and pytest 9.1 moved the test id xdist appends the group to, either of which once made
the audit's real run three times per suite. This runs a small suite under xdist with that hook and counts how often
its module fixture was made.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SUITE = """
import os
import pytest

@pytest.fixture(scope="module")
def shared_run():
    with open(os.environ["MADE_LOG"], "a") as log:
        log.write(os.environ.get("PYTEST_XDIST_WORKER", "none") + "\\n")
    return 1

@pytest.mark.parametrize("n", range(6))
def test_reads_the_shared_run(shared_run, n):
    assert shared_run == 1

@pytest.mark.parametrize("n", range(6))
def test_alone(n):
    assert n >= 0


@pytest.mark.e2e
def test_starts_nodes():
    pass


@pytest.mark.wall
def test_waits_minutes():
    pass
"""


def _run_small_suite(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """pytest on SUITE in `tmp_path` with the suite's scheduling hook as its conftest."""
    hook = "from tests.xdist_scheduling import pytest_collection_modifyitems  # noqa: F401\n"
    (tmp_path / "conftest.py").write_text(hook)
    (tmp_path / "test_shared.py").write_text(SUITE)
    repo = Path(__file__).resolve().parents[1]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, "--rootdir", str(tmp_path),
         str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(repo), **env},
    )  # fmt: skip


def test_a_module_fixture_is_made_once_under_loadgroup(tmp_path: Path) -> None:
    made = tmp_path / "made.log"
    done = _run_small_suite(tmp_path, "-n", "2", "--dist", "loadgroup", MADE_LOG=str(made))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "14 passed" in done.stdout, done.stdout[-2000:]
    workers = made.read_text().split()
    assert len(workers) == 1, f"the module fixture was made {len(workers)} times, on workers {workers}"


def test_longest_tests_are_handed_out_first(tmp_path: Path) -> None:
    """Tests that wait minutes by design (`wall`) go first, then those that start nodes, then the rest."""
    done = _run_small_suite(tmp_path, "--collect-only")
    names = [line.split("::")[1] for line in done.stdout.splitlines() if "::" in line]
    assert names[:2] == ["test_waits_minutes", "test_starts_nodes"], names
    assert len(names) == 14
