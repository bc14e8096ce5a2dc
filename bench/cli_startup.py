"""CPU seconds of `gradledger --help` (and of a few sub-commands' `--help`): the start-up every command pays.

    python bench/cli_startup.py [--reps N] [--quick]

Why (issue 38): every `gradledger` command used to import torch, web3 and eth_account to declare its options, so
`--help` cost 3-4 s of CPU, and so did every node process and every CLI test before doing anything. Commands now
import heavy modules inside the function that runs (tests/gradledger/test_cli_imports.py checks which modules load;
this script measures what that costs).

Each sample is one fresh `python -m gradledger ... --help` process; its CPU time (user + system, from the kernel's
rusage of the child, so the load of other jobs on the machine does not count, only what the process itself burns)
is one sample. The commands take turns (all of them once, then all again in reverse order, ...), after one untimed
warm-up round that fills the page cache. The bare interpreter (`python -c pass`) is measured the same way as the
floor no command can go below. Human lines go to stderr; the last stdout line is one JSON object: per command, the
median CPU seconds and their spread (min, quartiles, max: bench/interleaved.py), and `help_cpu_s`, the median of
`gradledger --help`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from protocol.adapters.execution_env import pin_execution_environment

pin_execution_environment()  # as every benchmark: the children inherit the profile's pins (docs/determinism.md)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.interleaved import compute_spread

COMMANDS: dict[str, list[str]] = {
    "python -c pass": ["-c", "pass"],
    "gradledger --help": ["-m", "gradledger", "--help"],
    "gradledger run create --help": ["-m", "gradledger", "run", "create", "--help"],
    "gradledger solver run --help": ["-m", "gradledger", "solver", "run", "--help"],
    "gradledger audit --help": ["-m", "gradledger", "audit", "--help"],
    "gradledger calibrate --help": ["-m", "gradledger", "calibrate", "--help"],
}
"""What is measured: the interpreter floor, the top-level help and the sub-commands that import the most when they
run (training, the chain, the auditor)."""


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def measure_cpu_seconds(args: list[str]) -> float:
    """User + system CPU seconds of one `python ARGS` process, from its own rusage (os.wait4)."""
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read().decode() if proc.stderr is not None else ""
    if proc.returncode != 0:
        raise SystemExit(f"`python {' '.join(args)}` exited {proc.returncode}: {stderr[-2000:]}")
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=9, help="timed processes per command (default 9)")
    parser.add_argument("--quick", action="store_true", help="3 processes per command")
    args = parser.parse_args()
    reps = 3 if args.quick else args.reps
    if reps < 1:
        parser.error("--reps must be at least 1")
    names = list(COMMANDS)
    for name in names:  # warm-up: page cache, .pyc files
        measure_cpu_seconds(COMMANDS[name])
    samples: dict[str, list[float]] = {name: [] for name in names}
    for rep in range(reps):
        for name in names if rep % 2 == 0 else reversed(names):
            samples[name].append(measure_cpu_seconds(COMMANDS[name]))
    spreads = {name: compute_spread(values) for name, values in samples.items()}
    for name, spread in spreads.items():
        say(f"{name:<32} median {spread.median:.3f} s CPU (min {spread.min:.3f}, max {spread.max:.3f}, n {spread.n})")
    result = {
        "help_cpu_s": round(spreads["gradledger --help"].median, 3),
        "commands": {name: spread.as_json(3) for name, spread in spreads.items()},
        "reps": reps,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
