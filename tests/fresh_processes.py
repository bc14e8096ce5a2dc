"""Run a Python script in fresh interpreters at 1 and 2 torch threads: the tests' check that bytes or hashes do not
depend on the process or the thread count (the script sets the count from its first argument)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def get_outputs_at_thread_counts(script: str, *args: str) -> set[str]:
    """The stdouts of `script` run from the repository root as `python -c script THREADS *args`, THREADS 1 and 2."""
    return {
        subprocess.run(
            [sys.executable, "-c", script, str(threads), *args], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        for threads in (1, 2)
    }
