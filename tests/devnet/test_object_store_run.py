"""A solver whose artifact store is an S3 bucket: a verifier fetches through the solver's HTTP API and attests.

One round, tiny preset, on the session's driven anvil and a real S3-compatible server (moto) on loopback. The
solver runs `gradledger solver run --store s3://bucket/prefix` with the endpoint and keys in AWS_* environment
variables only; the verifier keeps its local store and reads the solver's checkpoints over HTTP (served from S3).
"""

from __future__ import annotations

import pytest

from protocol.adapters.keys import get_devnet_account
from protocol.adapters.object_store import S3ArtifactStore
from tests.chain_fixtures import FAST_RULES, events_of, prepare_run, read_log, start_node, stop, wait_until

pytestmark = pytest.mark.e2e

SOLVER, VERIFIER = 17, 18


def test_solver_publishes_to_s3_and_verifier_attests(deployment, corpus, tmp_path, s3_bucket):
    rules = FAST_RULES.with_run(max_rounds=1)
    setup = prepare_run(deployment, corpus, tmp_path / "home", [SOLVER], [VERIFIER], rules)
    protocol, run_id = setup.protocol, setup.run_id
    url = f"s3://{s3_bucket}/solver-{SOLVER}"
    processes = [
        start_node(setup, "solver", SOLVER, "--coordinator", "--store", url),
        start_node(setup, "verifier", VERIFIER, "--exit-when-done"),
    ]
    try:
        setup.create()
        with setup.drive(lambda: [(setup.ports[a], p) for a, p in zip([SOLVER, VERIFIER], processes, strict=True)]):
            wait_until(lambda: protocol.round_times(run_id).finished, 600, "the run to finish")
            wait_until(lambda: processes[1].poll() is not None, 300, "the verifier to exit")
    finally:
        for p in processes:
            stop(p)
    logs = {role: read_log(setup, role, a) for role, a in (("solver", SOLVER), ("verifier", VERIFIER))}
    assert processes[1].returncode == 0, logs

    solver = get_devnet_account(SOLVER).address
    committed = events_of(protocol, "Committed", run_id)
    assert [(e.args["round"], e.args["solver"]) for e in committed] == [(0, solver)], logs
    passes = events_of(protocol, "PassAttested", run_id)
    assert len(passes) == 1 and not events_of(protocol, "FailAttested", run_id), logs
    assert protocol.is_settled(run_id, 0)

    store = S3ArtifactStore(s3_bucket, f"solver-{SOLVER}")
    assert store.has(protocol.theta_of(run_id, 1)), "the coordinator's θ1 is in the bucket"
    local = tmp_path / "home" / "solvers" / solver.lower() / "artifacts"
    assert not local.exists() or not any(local.rglob("*")), "nothing went to the default local store"
