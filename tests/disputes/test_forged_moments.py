"""A run that carries AdamW moments (`train.carry_moments`) on a real anvil, with a solver that forges its moments.

Two rounds, 2 solvers and 1 verifier: the honest coordinator, and `--adversary forged-moments` (honest training, but
in every round with something to carry it starts from its carried first moments scaled by 4 instead of the moments
its accepted previous round ended with). Round 0 has nothing to carry: both are accepted. In round 1 the honest
solver starts from its round-0 end moments (c_0 differs from a fresh one) and passes; the forger's first leaf does
not start at the c_0 the moments chain allows, so the verifier fails it at draw 0, the fail finalizes and proves the
fault: slashed and unpaid for round 1. The juror code (node/checker.py) upholds the fail, `gradledger audit` passes
(its start hashes follow the same chain, auditor/audit.py), and θ_2 is the outer step over the honest Δ alone.
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
from protocol.state import compute_state_hash, decode_state
from protocol.training import get_moments, get_params, make_start_checkpoint
from protocol.types import ROLE_SOLVER, AttestationRef
from tests.chain_fixtures import prepare_run, run_audit
from tests.disputes.conftest import address, all_events, assert_balance_matches_events, run_until_paid, start

pytestmark = pytest.mark.e2e

RULES = TINY.with_run(
    max_rounds=2, samples_per_commitment=2, verifiers_per_commitment=1, jury_size=3, commit_window=300,
    attest_window=300, challenge_window=300, dispute_timeout=600,
)  # fmt: skip
HONEST, FORGER, VERIFIER = 5, 6, 7
REASON = "leaf 0 does not start where θ_r's start checkpoint is"


def test_a_solver_that_forges_its_carried_moments_is_failed_and_slashed(fresh_deployment, corpus, tmp_path):
    overrides = {"train": {"carry_moments": True, "round_warmup_steps": 0}}
    setup = prepare_run(
        fresh_deployment, corpus, tmp_path / "home", [HONEST, FORGER], [VERIFIER], RULES, overrides=overrides
    )
    protocol, run_id = setup.protocol, setup.run_id
    solver = ["solver", "run", "--no-progress"]
    nodes = [
        start(setup, "honest", solver, HONEST, "--coordinator"),
        start(setup, "forger", solver, FORGER, "--adversary", "forged-moments"),
        start(setup, "verifier", ["verifier", "serve"], VERIFIER, "--exit-when-done"),
    ]
    detail = run_until_paid(setup, nodes, HONEST)
    assert "starting from forged moments" in detail, detail  # round 1: round 0 carries nothing (its pass below)
    events = all_events(protocol)
    honest, forger = address(HONEST), address(FORGER)

    fails = [e for e in events if e.name == "FailAttested"]
    assert [(e.args["round"], e.args["solver"]) for e in fails] == [(1, forger)], detail
    passes = sorted((e.args["round"], e.args["solver"]) for e in events if e.name == "PassAttested")
    assert passes == sorted([(0, honest), (0, forger), (1, honest)]), detail
    proven = [e for e in events if e.name == "SolverFaultProven"]
    assert [e.args["solver"] for e in proven] == [forger] and proven[0].args["taken"] == RULES.run.solver_min_stake
    assert protocol.bonded_of(forger, ROLE_SOLVER) == 0
    assert protocol.bonded_of(honest, ROLE_SOLVER) == RULES.run.solver_min_stake

    # the honest solver's round 1 started from its round-0 end moments, not fresh ones
    ctx = load_run_context(protocol, LocalArtifactStore(setup.home / "creator" / "artifacts"), None, run_id)
    honest_dir = setup.home / "solvers" / honest.lower() / "artifacts"
    sources = ArtifactSources([honest_dir])
    (round0,), _ = sources.find_documents(run_id, 0, honest)
    (round1,), _ = sources.find_documents(run_id, 1, honest)
    theta1 = get_params(decode_state(sources.read(protocol.theta_of(run_id, 1))))
    moments = get_moments(decode_state(sources.read(round0.doc.leaves[-1].end_hash)))
    assert round1.doc.leaves[0].start_hash == compute_state_hash(make_start_checkpoint(theta1, moments))
    assert round1.doc.leaves[0].start_hash != compute_state_hash(make_start_checkpoint(theta1))

    # θ_2 is the outer step over the honest Δ alone
    _, expected, accepted = compute_next_theta(protocol, LocalArtifactStore(honest_dir), None, ctx, 1)
    assert accepted == (honest,) and protocol.theta_of(run_id, 2) == expected

    # the juror's check (node/checker.py) upholds the fail; a pass on the forged commitment would be wrong
    forger_dir = setup.home / "solvers" / forger.lower() / "artifacts"
    documents = {}
    for r in (0, 1):
        found, _ = ArtifactSources([forger_dir]).find_documents(run_id, r, forger)
        documents[r] = encode_commitment_doc(found[0].doc)
    checker = CommitmentChecker(
        ctx, LocalArtifactStore(forger_dir), PeerSet([]), protocol, fetch_document=lambda _run, r, _s: documents[r]
    )
    fail = fails[0].args
    commitment = protocol.get_commitments(run_id, 1, ctx.created_block)[forger]
    ref = AttestationRef(run_id, 1, forger, fail["slot"])
    right, decision, _ = checker.is_attestation_right(ref, commitment, True, fail["sampleIndex"])
    assert right and decision.reason == REASON, decision
    wrong_pass, _, _ = checker.is_attestation_right(ref, commitment, False, -1)
    assert not wrong_pass

    report = run_audit(setup, tmp_path / "audit.json")
    documents_check = next(c for c in report["checks"] if c["name"] == "commitment documents")
    assert documents_check["evidence"]["commitments_checked"] == 3, documents_check  # 2 honest, 1 forger's round 0
    assert any(REASON in p for p in documents_check["evidence"].get("not_accepted_findings", [])), documents_check
    assert_balance_matches_events(protocol)
