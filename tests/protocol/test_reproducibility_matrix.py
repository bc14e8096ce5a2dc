"""The reproducibility matrix: the pinned profile gives one hash per golden model, whatever the process started with.

Each cell is a separate `gradledger profile check` process (the pins must be set before torch loads), started with
another thread count, another CPU code path asked for in its environment (ATen's portable and AVX-512 kernels, MKL's
COMPATIBLE and AVX-512 branches, oneDNN limited to SSE4.1), with and without torch's deterministic-algorithms flag,
and once with the micro-batch golden trained by a 2-process gloo group (the path of `solver run --nproc 2`). Every
cell must compute the same hashes; on the machine the goldens were measured on (protocol/goldens.json) they must be
the goldens. The control cell switches the pins off: there the same request for the portable kernels changes the
bits, which is what the pins are for, and `profile check` says so and exits 3.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from protocol.adapters.execution_env import get_unpinned_environment, read_execution_environment
from protocol.adapters.goldens import load_goldens
from protocol.execution_pins import CURRENT_PROFILE
from protocol.goldens import GOLDEN_NAMES

pytestmark = pytest.mark.slow

CELLS: dict[str, tuple[dict[str, str], list[str]]] = {
    "1 thread": ({}, ["--threads", "1"]),
    "2 threads": ({}, ["--threads", "2"]),
    "4 threads, 2-process group": ({}, ["--threads", "4", "--nproc", "2"]),
    "portable kernels asked for, 2 threads": (
        {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "SSE41"},
        ["--threads", "2"],
    ),
    "AVX-512 asked for, 4 threads": (
        {"ATEN_CPU_CAPABILITY": "avx512", "MKL_CBWR": "AVX512"},
        ["--threads", "4"],
    ),
    "deterministic algorithms off, 2 threads": ({}, ["--threads", "2", "--no-deterministic"]),
}
CONTROL = (None, ["--threads", "1"])
"""The control cell's environment is `get_unpinned_environment(..., ATEN_CPU_CAPABILITY="default")`."""


def _check(environment: dict[str, str] | None, args: list[str]) -> tuple[int, dict]:
    if environment is None:
        env = get_unpinned_environment(os.environ, ATEN_CPU_CAPABILITY="default")
    else:
        env = {**os.environ, **environment}
    command = [sys.executable, "-m", "gradledger", "profile", "check", "--json", "--no-cache", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode in (0, 3), done.stderr[-3000:]
    return done.returncode, json.loads(done.stdout)


@pytest.fixture(scope="module")
def matrix() -> dict[str, tuple[int, dict]]:
    cells = {**CELLS, "control: pins off, portable kernels": CONTROL}
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(_check, *cell) for name, cell in cells.items()}
        return {name: future.result() for name, future in futures.items()}


def _computed(report: dict) -> dict[str, str]:
    return {name: segment["computed"] for name, segment in report["segments"].items()}


def test_every_cell_computes_one_hash_per_golden_model(matrix):
    hashes = {name: _computed(report) for name, (_, report) in matrix.items() if name in CELLS}
    first = next(iter(hashes.values()))
    assert set(first) == set(GOLDEN_NAMES)
    for name, computed in hashes.items():
        assert computed == first, f"cell {name!r} differs: {computed} vs {first}"
        assert matrix[name][1]["environment"]["aten_capability"] == "AVX2", name


def test_the_goldens_are_what_this_machine_computes(matrix):
    goldens = load_goldens(CURRENT_PROFILE)
    assert goldens is not None
    here = read_execution_environment()
    reference = goldens.measured_on
    if (here.cpu_vendor, here.mkl_mode) != (reference["cpu_vendor"], reference["mkl_mode"]):
        pytest.skip(
            f"the goldens were measured on {reference['cpu_vendor']} with MKL {reference['mkl_mode']}; this machine is "
            f"{here.cpu_vendor} with MKL {here.mkl_mode}, a BLAS path the goldens do not cover (docs/determinism.md)"
        )
    for name, (code, report) in matrix.items():
        if name in CELLS:
            assert code == 0 and report["reproduces"], (name, report["reason"])
            assert _computed(report) == goldens.segments, name


def test_without_the_pins_the_code_path_changes_the_bits_and_the_check_says_so(matrix):
    code, report = matrix["control: pins off, portable kernels"]
    assert report["environment"]["aten_capability"] == "DEFAULT"
    pinned = _computed(matrix["1 thread"][1])
    assert all(_computed(report)[name] != pinned[name] for name in GOLDEN_NAMES)
    assert code == 3 and report["reproduces"] is False
    assert "pins are switched off" in report["reason"]
