"""The test suite's launcher (tests/forked_nodes.py): a forked `gradledger` behaves as a started one would."""

from __future__ import annotations

import os
import subprocess
import threading

from gradledger import __version__
from tests.forked_nodes import ForkedProcess, run_gradledger, start_gradledger


def test_run_gradledger_reports_output_and_exit_status_succeeds(tmp_path):
    done = run_gradledger(["version"], timeout=120, cwd=tmp_path)
    assert (done.returncode, done.stdout.strip()) == (0, __version__)
    assert run_gradledger(["no-such-command"], timeout=120).returncode == 2  # typer's usage error


def test_exit_status_read_by_many_threads_at_once_is_the_real_one_succeeds(tmp_path):
    """Regression: two threads polling one exit (a test and the clock driver) made the second read 255."""
    processes = [start_gradledger(["version"], tmp_path / f"{i}.log") for i in range(4)]
    seen: list[int | None] = []

    def poll_until_exit(process) -> None:
        while process.poll() is None:
            pass
        seen.append(process.poll())

    pollers = [threading.Thread(target=poll_until_exit, args=(p,)) for p in processes for _ in range(3)]
    for poller in pollers:
        poller.start()
    assert [p.wait(120) for p in processes] == [0] * 4
    for poller in pollers:
        poller.join()
    assert seen == [0] * len(pollers)
    assert all(p.returncode == 0 for p in processes)


def test_start_gradledger_with_a_load_time_variable_changed_starts_a_fresh_interpreter_succeeds(tmp_path):
    changed = {
        **os.environ,
        "ATEN_CPU_CAPABILITY": "default" if os.environ.get("ATEN_CPU_CAPABILITY") != "default" else "avx2",
    }
    process = start_gradledger(["version"], tmp_path / "fresh.log", env=changed)
    assert isinstance(process, subprocess.Popen) and process.wait(120) == 0
    forked = start_gradledger(
        ["version"], tmp_path / "forked.log", env={**os.environ, "GRADLEDGER_HOME": str(tmp_path)}
    )
    assert isinstance(forked, ForkedProcess) and forked.wait(120) == 0
    assert (tmp_path / "fresh.log").read_text().strip() == (tmp_path / "forked.log").read_text().strip() == __version__
