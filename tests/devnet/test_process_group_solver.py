"""`gradledger solver run --nproc 2` on a real anvil: a 2-process solver's commitment passes a 1-process verifier.

The run splits each step into 2 micro-batches; the solver's two ranks compute one each and fold both in index order,
the verifier replays the sampled segments alone, computing both in sequence, and attests exact equality."""

from __future__ import annotations

import json
import os

import pytest

from protocol.adapters.keys import get_devnet_account
from tests.chain_fixtures import (
    FAST_RULES,
    events_of,
    prepare_run,
    read_log,
    run_to_the_end,
    start_node,
)

pytestmark = pytest.mark.e2e

SOLVER, VERIFIER = 14, 15


def _worker_pids(log: str) -> list[int]:
    for line in log.splitlines():
        if "process group started" in line and "workers=" in line:
            return json.loads(line.split("workers=", 1)[1].split(" ", 1)[0])
    return []


def test_a_two_process_solver_is_verified_exactly_by_one_process(deployment, corpus, tmp_path):
    rules = FAST_RULES.with_run(max_rounds=1)
    setup = prepare_run(
        deployment, corpus, tmp_path / "home", [SOLVER], [VERIFIER], rules,
        overrides={"train": {"micro_batches": 2}},
    )  # fmt: skip
    protocol, run_id = setup.protocol, setup.run_id
    processes = [
        start_node(setup, "solver", SOLVER, "--coordinator", "--nproc", "2"),
        start_node(setup, "verifier", VERIFIER, "--exit-when-done"),
    ]
    run_to_the_end(setup, list(zip([SOLVER, VERIFIER], processes, strict=True)), finish_s=600)
    solver_log = read_log(setup, "solver", SOLVER)
    logs = {"solver": solver_log, "verifier": read_log(setup, "verifier", VERIFIER)}
    assert all(p.returncode == 0 for p in processes), logs
    workers = _worker_pids(solver_log)
    assert len(workers) == 1, solver_log
    assert "round trained rank=1 round=0" in solver_log, "rank 1 trained the round with rank 0"
    assert "training alone" not in solver_log, solver_log
    for pid in workers:  # rank 0 exited: so did its worker
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)

    solver = get_devnet_account(SOLVER).address
    assert [(e.args["round"], e.args["solver"]) for e in events_of(protocol, "Committed", run_id)] == [(0, solver)]
    assert len(events_of(protocol, "PassAttested", run_id)) == 1, logs
    assert not events_of(protocol, "FailAttested", run_id)
    assert [e.args["round"] for e in events_of(protocol, "RoundSettled", run_id)] == [0]
