"""A run with a codec on a real anvil: 2 solvers + 1 verifier, 3 rounds, payloads instead of Δ states, Muon inner
steps and the outer step clipped to the median norm (issue 40's recipe).

Every commitment's Δ hash names a payload document (protocol/payload.py); the verifier checks each payload is
the codec of the replay-verified Δ plus the e the chain allows; the rounds settle; `gradledger audit` passes;
and θ_(r+1) rebuilt from θ_r and the accepted payloads alone equals the settled θ_(r+1) bit for bit, with each
solver's e carried from one accepted round to the next.
"""

from __future__ import annotations

import pytest

from auditor.sources import find_home_stores
from node.payloads import get_accepted_delta_hash
from protocol.adapters.artifacts import ArtifactNotFoundError, LocalArtifactStore
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.runs import RunContext
from protocol.compression import get_dense_fp32_bytes
from protocol.history.fold import fold_run_history
from protocol.outer import compute_outer_step
from protocol.payload import decode_payload_doc, decode_payload_update, make_zero_residual
from protocol.state import compute_state_hash, decode_state
from protocol.training import get_params
from tests.chain_fixtures import FAST_RULES, events_of, prepare_run, read_log, run_audit, start_node, stop, wait_until

pytestmark = pytest.mark.e2e

SOLVERS, VERIFIER = [17, 18], 19
CODEC = "int1-c4096-k56-r30"  # the ~1,000x sign of issue 40's long run (docs/benchmarks.md)
RECIPE = {"codec": CODEC, "inner_optimizer": "muon", "clip_to_median_norm": True}
"""Issue 40's recipe end to end: Muon inner steps (replayed by the verifier), the codec, the median-norm clip."""


def test_three_rounds_with_a_codec_settle_audit_clean_and_rebuild_theta_from_payloads(deployment, corpus, tmp_path):
    rules = FAST_RULES.with_run(max_rounds=3)
    setup = prepare_run(deployment, corpus, tmp_path / "home", SOLVERS, [VERIFIER], rules, overrides={"train": RECIPE})
    protocol, run_id = setup.protocol, setup.run_id
    processes = [
        start_node(setup, "solver", SOLVERS[0], "--coordinator"),
        start_node(setup, "solver", SOLVERS[1]),
        start_node(setup, "verifier", VERIFIER, "--exit-when-done"),
    ]
    accounts = [*SOLVERS, VERIFIER]
    try:
        setup.create()
        with setup.drive(lambda: [(setup.ports[a], p) for a, p in zip(accounts, processes, strict=True)]):
            wait_until(lambda: protocol.round_times(run_id).finished, 900, "the run to finish")
            wait_until(lambda: all(p.poll() is not None for p in processes), 300, "every node to exit")
    finally:
        for p in processes:
            stop(p)
    logs = {a: read_log(setup, role, a) for role, a in (("solver", 17), ("solver", 18), ("verifier", 19))}
    assert all(p.returncode == 0 for p in processes), logs
    assert len(events_of(protocol, "PassAttested", run_id)) == 6 and not events_of(protocol, "FailAttested", run_id)
    assert all(protocol.is_settled(run_id, r) for r in range(3)), logs

    stores = [LocalArtifactStore(path) for path in find_home_stores(setup.home)]

    def read(digest: bytes) -> bytes:
        for store in stores:
            try:
                return store.get(digest)
            except ArtifactNotFoundError:
                continue
        raise AssertionError(f"artifact {digest.hex()} in no store")

    solvers = sorted(get_devnet_account(i).address for i in SOLVERS)
    # acceptance of past rounds from the events (Verification forgets statuses with nothing left to pay)
    history = fold_run_history(protocol.chain.get_events(0), run_id)
    carried = {}
    for r in range(3):
        theta = decode_state(read(protocol.theta_of(run_id, r)))
        zero_hash = compute_state_hash(make_zero_residual(get_params(theta)))
        commitments = protocol.get_commitments(run_id, r, 0)
        assert sorted(commitments) == solvers and sorted(history.rounds[r].accepted) == solvers
        updates = {}
        for solver, commitment in commitments.items():
            doc = decode_payload_doc(read(commitment.delta_hash))
            assert (doc.run_id, doc.round, doc.solver, doc.codec) == (run_id, r, solver.lower(), CODEC)
            # the e-chain: zero in round 0, then the e_(r+1) of the solver's accepted previous round
            assert doc.residual_hash == carried.get(solver, zero_hash)
            assert doc.next_residual_hash != zero_hash  # a lossy codec leaves something to carry
            carried[solver] = doc.next_residual_hash
            payload = read(doc.payload_hash)
            updates[solver] = decode_payload_update(doc, payload)
            assert len(payload) < get_dense_fp32_bytes(updates[solver]) / 2  # what solvers download instead of Δ
        rebuilt = compute_outer_step(theta, updates, setup.config.train)
        assert compute_state_hash(rebuilt) == protocol.theta_of(run_id, r + 1), f"round {r}"
        # the settled θ is the clipped aggregate: the plain mean of the same payloads is another θ
        plain = setup.config.train.model_copy(update={"clip_to_median_norm": False})
        assert compute_state_hash(compute_outer_step(theta, updates, plain)) != protocol.theta_of(run_id, r + 1)

    # the e-chain's acceptance lookups: the run's events are folded once per context, settled rounds kept
    ctx = RunContext(run_id, None, setup.config, None, "", 0)  # type: ignore[arg-type]
    accepted = {r: protocol.get_commitments(run_id, r, 0) for r in range(3)}  # every commitment was accepted
    reads: list[tuple] = []
    real_get_events = protocol.chain.get_events
    protocol.chain.get_events = lambda *a, **k: reads.append(a) or real_get_events(*a, **k)  # type: ignore[method-assign]
    try:
        for r, commitments in accepted.items():
            for solver, commitment in commitments.items():
                assert get_accepted_delta_hash(protocol, ctx, r, solver) == commitment.delta_hash
        assert get_accepted_delta_hash(protocol, ctx, 1, "0x" + "00" * 20) is None
    finally:
        del protocol.chain.get_events  # the class's method again
    assert len(reads) == 1, reads

    report = run_audit(setup, tmp_path / "audit" / "audit.json")
    assert all(c["passed"] for c in report["checks"]), [c for c in report["checks"] if not c["passed"]]
    by_name = {c["name"]: c for c in report["checks"]}
    assert any("re-derived" in c["detail"] for c in by_name.values()), by_name
