"""Nodes killed with SIGKILL and restarted: no double commit, no double attestation, no lost round."""

from __future__ import annotations

import signal

import pytest

from protocol.adapters.artifacts import LocalArtifactStore
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.nodestate import NodeState
from protocol.commitment import decode_commitment_doc
from protocol.hashing import to_hash32
from protocol.run_presets import TINY
from protocol.state import compute_state_hash, decode_state
from tests.chain_fixtures import events_of, prepare_run, read_log, start_node, stop, wait_until

pytestmark = pytest.mark.e2e

RULES = TINY.with_run(
    max_rounds=1,
    commit_window=300,
    attest_window=300,
    challenge_window=300,
    dispute_timeout=600,
)
"""Chain seconds on a driven devnet (tests/clock.py): a window closes only once every live node is idle."""
LONG_ROUND = {"train": {"inner_steps": 60, "steps_per_segment": 2}}


def _artifact_count(setup, account: int) -> int:
    directory = setup.home / "solvers" / get_devnet_account(account).address.lower() / "artifacts"
    return sum(1 for p in directory.rglob("*") if p.is_file() and not p.name.startswith(".tmp"))


def test_killed_solvers_and_verifier_resume_without_double_actions(deployment, corpus, tmp_path):
    mid_training, after_commit, verifier = 14, 15, 16
    setup = prepare_run(
        deployment, corpus, tmp_path / "home", [mid_training, after_commit], [verifier], RULES, LONG_ROUND
    )
    protocol, run_id = setup.protocol, setup.run_id
    addresses = {a: get_devnet_account(a).address for a in (mid_training, after_commit, verifier)}
    nodes = {
        mid_training: start_node(setup, "solver", mid_training, "--coordinator"),
        after_commit: start_node(setup, "solver", after_commit),
        verifier: start_node(setup, "verifier", verifier, "--exit-when-done"),
    }
    try:
        setup.create()
        with setup.drive(lambda: [(setup.ports[a], p) for a, p in nodes.items()]):
            # Solver 14: SIGKILL once some, not all, of its 31 checkpoints are on disk.
            wait_until(lambda: _artifact_count(setup, mid_training) >= 5, 300, "solver 14 to store checkpoints", 0.02)
            nodes[mid_training].send_signal(signal.SIGKILL)
            nodes[mid_training].wait()
            assert not [
                e for e in events_of(protocol, "Committed", run_id) if e.args["solver"] == addresses[mid_training]
            ]
            nodes[mid_training] = start_node(setup, "solver", mid_training, "--coordinator")

            # Solver 15: SIGKILL right after its commitment is on-chain.
            def committed() -> list:
                return [
                    e for e in events_of(protocol, "Committed", run_id) if e.args["solver"] == addresses[after_commit]
                ]

            wait_until(committed, 300, "solver 15 to commit", 0.05)
            nodes[after_commit].send_signal(signal.SIGKILL)
            nodes[after_commit].wait()
            nodes[after_commit] = start_node(setup, "solver", after_commit)
            # Verifier: SIGKILL after its first attestation, then restart.
            wait_until(lambda: events_of(protocol, "PassAttested", run_id), 300, "a first attestation", 0.05)
            nodes[verifier].send_signal(signal.SIGKILL)
            nodes[verifier].wait()
            nodes[verifier] = start_node(setup, "verifier", verifier, "--exit-when-done")
            wait_until(lambda: protocol.round_times(run_id).finished, 900, "the run to finish")
            # every node exits once nothing is left: a solver after claiming its shares (waiting for the verifier's
            # exit alone stopped a solver before its claim now and then)
            wait_until(lambda: all(p.poll() is not None for p in nodes.values()), 300, "every node to exit")
    finally:
        for process in nodes.values():
            stop(process)
    logs = {a: read_log(setup, "solver" if a != verifier else "verifier", a) for a in nodes}
    commitments = events_of(protocol, "Committed", run_id)
    assert sorted(e.args["solver"] for e in commitments) == sorted(
        [addresses[mid_training], addresses[after_commit]]
    ), logs
    passes = events_of(protocol, "PassAttested", run_id)
    seats = [(e.args["solver"], e.args["slot"]) for e in passes]
    assert len(seats) == len(set(seats)) == 2, "each seat attested exactly once across the restart"
    assert protocol.is_settled(run_id, 0)
    for solver in (mid_training, after_commit):
        assert protocol.is_accepted(run_id, 0, addresses[solver])
        assert protocol.shares_of(run_id, addresses[solver]) > 0
        # Every checkpoint of the committed round is still in the solver's store, intact.
        node_dir = setup.home / "solvers" / addresses[solver].lower()
        record = NodeState(node_dir / "state.sqlite").get("round", f"{run_id}:0")
        store = LocalArtifactStore(node_dir / "artifacts")
        doc = decode_commitment_doc(store.get(to_hash32(record["doc_hash"])))
        for leaf in doc.leaves:
            assert compute_state_hash(decode_state(store.get(leaf.start_hash))) == leaf.start_hash
            assert store.has(leaf.end_hash)
