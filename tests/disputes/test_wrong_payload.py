"""Solvers whose payload is not the codec of their verified Δ plus the e_r the e-chain allows, on a real anvil.

One round, `train.codec` set, 3 solvers: the honest coordinator; `--adversary wrong-payload` (honest training, a
payload over Δ + e_r + u with a self-consistent document); `--adversary wrong-residual` (honest training and codec,
but over e_r + u where the e-chain allows only e_r = 0 in round 0). 1 verifier. The verifier rebuilds C(Δ + e_r) from
the replay-verified Δ, fails both cheaters at draw 0, the fails finalize and prove the faults: both are slashed and
unpaid, the honest solver accepted and paid, and θ_1 is the outer step over the honest payload alone. The juror
code (the same checker every juror and whistleblower runs) agrees each fail was right and a pass would be wrong.
"""

from __future__ import annotations

import pytest

from auditor.sources import ArtifactSources
from node.checker import CommitmentChecker
from node.theta import compute_next_theta
from protocol.adapters.artifacts import LocalArtifactStore
from protocol.adapters.http import PeerSet
from protocol.adapters.runs import load_run_context
from protocol.commitment import encode_commitment_doc
from protocol.run_presets import TINY
from protocol.types import ROLE_SOLVER, AttestationRef
from tests.chain_fixtures import prepare_run
from tests.disputes.conftest import address, all_events, assert_balance_matches_events, run_until_paid, start

pytestmark = pytest.mark.e2e

RULES = TINY.with_run(
    max_rounds=1, samples_per_commitment=2, verifiers_per_commitment=1, jury_size=3, commit_window=300,
    attest_window=300, challenge_window=300, dispute_timeout=600,
)  # fmt: skip
CODEC = "int8-b256-top50%"
HONEST, CHEATER, VERIFIER, E_CHEATER = 1, 2, 3, 4
REASONS = {
    CHEATER: "payload P_r is not the codec of the verified Δ plus e_r",
    E_CHEATER: "e_r does not follow from the previous round: it is neither the e_(r+1) of the solver's accepted "
    "commitment of round r - 1 nor zero",
}


def test_a_payload_that_is_not_the_codec_of_the_verified_delta_is_failed_and_slashed(
    fresh_deployment, corpus, tmp_path
):
    overrides = {"train": {"codec": CODEC}}
    setup = prepare_run(
        fresh_deployment,
        corpus,
        tmp_path / "home",
        [HONEST, CHEATER, E_CHEATER],
        [VERIFIER],
        RULES,
        overrides=overrides,
    )
    protocol, run_id = setup.protocol, setup.run_id
    solver = ["solver", "run", "--no-progress"]
    nodes = [
        start(setup, "honest", solver, HONEST, "--coordinator"),
        start(setup, "cheater", solver, CHEATER, "--adversary", "wrong-payload"),
        start(setup, "e-cheater", solver, E_CHEATER, "--adversary", "wrong-residual"),
        start(setup, "verifier", ["verifier", "serve"], VERIFIER, "--exit-when-done"),
    ]
    detail = run_until_paid(setup, nodes, HONEST)
    assert "injecting an update into the payload" in detail and "injecting an update through e" in detail
    events = all_events(protocol)

    fails = [e for e in events if e.name == "FailAttested"]
    cheaters = {address(CHEATER), address(E_CHEATER)}
    assert {e.args["solver"] for e in fails} == cheaters and len(fails) == 2, detail
    assert all(e.args["verifier"] == address(VERIFIER) for e in fails)
    passes = [e for e in events if e.name == "PassAttested"]
    assert [e.args["solver"] for e in passes] == [address(HONEST)], detail
    proven = [e for e in events if e.name == "SolverFaultProven"]
    assert {e.args["solver"] for e in proven} == cheaters and len(proven) == 2, detail
    assert all(e.args["taken"] == RULES.run.solver_min_stake for e in proven)
    for cheater in cheaters:
        assert protocol.bonded_of(cheater, ROLE_SOLVER) == 0 and protocol.shares_of(run_id, cheater) == 0
    assert protocol.bonded_of(address(HONEST), ROLE_SOLVER) == RULES.run.solver_min_stake
    assert protocol.shares_of(run_id, address(HONEST)) > 0

    # θ_1 is the outer step over the honest payload only (solvers' stores hold what they fetched and served)
    ctx = load_run_context(protocol, LocalArtifactStore(setup.home / "creator" / "artifacts"), None, run_id)
    honest_store = LocalArtifactStore(setup.home / "solvers" / address(HONEST).lower() / "artifacts")
    _, expected, accepted = compute_next_theta(protocol, honest_store, None, ctx, 0)
    assert accepted == (address(HONEST),) and protocol.theta_of(run_id, 1) == expected

    # The juror's check (node/checker.py, as the verifier service and the whistleblower run it) upholds each fail
    commitments = protocol.get_commitments(run_id, 0, ctx.created_block)
    fail_of = {e.args["solver"]: e.args for e in fails}
    for account, reason in REASONS.items():
        cheater = address(account)
        cheater_dir = setup.home / "solvers" / cheater.lower() / "artifacts"
        found, _ = ArtifactSources([cheater_dir]).find_documents(run_id, 0, cheater)
        document = encode_commitment_doc(found[0].doc)
        checker = CommitmentChecker(
            ctx, LocalArtifactStore(cheater_dir), PeerSet([]), protocol, fetch_document=lambda *_, d=document: d
        )
        ref = AttestationRef(run_id, 0, cheater, fail_of[cheater]["slot"])
        right, decision, _ = checker.is_attestation_right(
            ref, commitments[cheater], True, fail_of[cheater]["sampleIndex"]
        )
        assert right and decision.reason == reason, decision
        wrong_pass, decision, _ = checker.is_attestation_right(ref, commitments[cheater], False, -1)
        assert not wrong_pass  # a pass on it would be overturned by a jury
    assert_balance_matches_events(protocol)
