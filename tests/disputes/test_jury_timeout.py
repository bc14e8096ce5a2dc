"""Jury safety and liveness on a real anvil: forged votes and aggregates are rejected; no quorum -> appeals,
then an unresolved end in which the disputed pass does not stand.

A cheater's commitment is passed by a lazy verifier (the only run verifier) and challenged by the
whistleblower. The registry holds three jurors but only one runs a service; the other two were
registered by the test, which holds their keys. The test then:
- offers the online juror votes that must not count (from a non-juror, for a seat outside the jury,
  with a signature by the wrong key): each gets a 403 and is not stored;
- submits forged aggregates (one juror's signature claimed for two seats; two signatures of the
  other verdict): the contract rejects them with InvalidSignature;
kills the whistleblower (SIGKILL) with its challenge open and restarts it, and lets the dispute
time out: each silent jury is replaced by a larger one (two appeals; the online juror votes again in
each), then `expire` ends it unresolved: nobody is slashed, the attestation bond comes back, the
challenger loses UNRESOLVED_CHALLENGE_FEE_BPS of its bond to the pool, and the disputed pass is voided,
so the cheater's work is not paid -- a silent jury never decides by default (docs/contracts.md).
"""

from __future__ import annotations

import re
import signal

import httpx
import pytest

from node.disputes import JurorRegistryReader, get_drawn_jury
from protocol import bls
from protocol.adapters.chain import ContractRevertError
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.nodestate import NodeState
from protocol.constants import JUROR_MIN_STAKE, UNRESOLVED_CHALLENGE_FEE_BPS
from protocol.jury import (
    DisputeSubject,
    compute_eligible_aggregate,
    compute_vote,
    derive_juror_key,
    get_non_signers,
)
from protocol.run_presets import TINY
from protocol.types import ROLE_SOLVER, ROLE_VERIFIER, AttestationState, DisputeStatus
from tests.chain_fixtures import prepare_run, wait_until
from tests.disputes.conftest import (
    address,
    all_events,
    assert_balance_matches_events,
    handles,
    logs,
    nodes_running,
    start,
    wait_for_exits,
)

pytestmark = pytest.mark.e2e

RULES = TINY.with_run(
    max_rounds=1, samples_per_commitment=2, verifiers_per_commitment=1, jury_size=3, commit_window=300,
    attest_window=300, challenge_window=300, dispute_timeout=600,
)  # fmt: skip
"""Chain seconds on a driven devnet (tests/clock.py): windows close when every node is idle."""
HONEST, CHEATER, LAZY, ONLINE_JUROR, OFFLINE_A, OFFLINE_B, WHISTLEBLOWER, OUTSIDER = 1, 2, 3, 4, 5, 6, 7, 8


def _key(account: int) -> bls.BlsKeyPair:
    return derive_juror_key(bytes(get_devnet_account(account).key))


def test_forged_votes_and_aggregates_rejected_and_no_quorum_times_out(fresh_deployment, corpus, tmp_path):
    setup = prepare_run(
        fresh_deployment, corpus, tmp_path / "home", [HONEST, CHEATER], [LAZY, ONLINE_JUROR, OFFLINE_A, OFFLINE_B],
        RULES,
    )  # fmt: skip
    protocol, run_id = setup.protocol, setup.run_id
    for offline in (OFFLINE_A, OFFLINE_B):  # registered jurors that never show up (no node, no port)
        setup.ports.pop(offline)
        registration = bls.compute_juror_registration(_key(offline), address(offline))
        protocol.register_juror(
            get_devnet_account(offline), registration.public_key_g1, registration.proof_of_possession_g2
        )
    solver, verifier = ["solver", "run", "--no-progress"], ["verifier", "serve"]
    nodes = [
        start(setup, "honest", solver, HONEST, "--coordinator"),
        start(setup, "cheater", solver, CHEATER, "--adversary", "cheat", "--behaviour", "wrong-data"),
        start(setup, "lazy", verifier, LAZY, "--adversary", "lazy"),
        start(setup, "juror", verifier, ONLINE_JUROR, "--juror-only", "--exit-when-done"),
        start(setup, "whistleblower", ["whistleblower", "watch"], WHISTLEBLOWER, "--exit-when-done"),
    ]
    with nodes_running(setup, nodes):
        setup.create()
        with setup.drive(lambda: handles(setup, nodes)) as driver:

            def drawn():
                for e in protocol.chain.get_events(protocol.chain.manifest.deployed_block, names=["JuryDrawn"]):
                    return e
                return None

            # The clock stops once the jury is drawn, while the test offers forged votes and aggregates.
            gate = driver.pause_when(drawn)
            gate.wait(600, "the whistleblower's challenge and its jury")
            jury_event = drawn()
            dispute_id = jury_event.args["disputeId"]
            record = protocol.dispute_of(dispute_id)
            challenge = next(
                e
                for e in protocol.chain.get_events(
                    protocol.chain.manifest.deployed_block, names=["AttestationChallenged"]
                )
                if e.args["disputeId"] == dispute_id
            )
            subject = DisputeSubject(1, run_id, 0, challenge.args["solver"], challenge.args["slot"], 0)
            jury = get_drawn_jury(JurorRegistryReader(protocol.chain), record)
            seats = {jury.pool[s].account: s for s in jury.eligible_seats}
            assert set(seats) == {address(a) for a in (ONLINE_JUROR, OFFLINE_A, OFFLINE_B)}
            disputes, chain_id = protocol.chain.contract("Disputes").address, protocol.chain.chain_id

            # Votes that must not count, offered to the online juror over HTTP.
            url = f"http://127.0.0.1:{setup.ports[ONLINE_JUROR]}/jury/votes"
            seat_a = seats[address(OFFLINE_A)]
            outsider = compute_vote(_key(OUTSIDER), disputes, chain_id, dispute_id, seat_a, address(OUTSIDER), True)
            wrong_key = compute_vote(_key(OUTSIDER), disputes, chain_id, dispute_id, seat_a, address(OFFLINE_A), True)
            outside_seat = compute_vote(_key(OFFLINE_A), disputes, chain_id, dispute_id, 7, address(OFFLINE_A), True)
            for vote, why in (
                (outsider, "belongs to"),
                (wrong_key, "signature does not verify"),
                (outside_seat, "seat 7"),
            ):
                response = httpx.post(url, json=vote.to_json(), timeout=30)
                assert response.status_code == 403 and why in response.text, response.text
            assert httpx.post(url, json={"seat": 1}, timeout=10).status_code == 400
            held = httpx.get(f"{url}/0x{dispute_id.hex()}", timeout=10).json()
            assert all(v["juror"] == address(ONLINE_JUROR) for v in held), held

            # Forged aggregates: rejected on-chain by the BLS check.
            seat_b = seats[address(OFFLINE_B)]
            message = bls.compute_verdict_message(disputes, chain_id, dispute_id, True)
            signers = bls.compute_signer_bitmap(sorted([seat_a, seat_b]), len(jury.pool))
            one_signature = bls.compute_signature(_key(OFFLINE_A), message)
            other_verdict = bls.compute_verdict_message(disputes, chain_id, dispute_id, False)
            wrong_message = bls.compute_aggregate_signature(
                [bls.compute_signature(_key(a), other_verdict) for a in (OFFLINE_A, OFFLINE_B)]
            )
            for forged in (one_signature, wrong_message):
                try:
                    protocol.submit_verdict(
                        get_devnet_account(OUTSIDER), subject, True, signers, bls.compute_eip2537_g2(forged),
                        compute_eligible_aggregate(jury), list(get_non_signers(jury, signers)),
                    )  # fmt: skip
                except ContractRevertError as exc:
                    assert exc.error == "InvalidSignature", exc
                else:
                    raise AssertionError("a forged aggregate was accepted")
            assert protocol.dispute_of(dispute_id).status == DisputeStatus.JURY_DRAWN

            # The whistleblower is killed with its challenge open and restarted: its SQLite state has the challenge.
            watcher = next(n for n in nodes if n.label == "whistleblower")
            watcher.process.send_signal(signal.SIGKILL)
            watcher.process.wait()
            nodes.remove(watcher)
            nodes.append(start(setup, "whistleblower", ["whistleblower", "watch"], WHISTLEBLOWER, "--exit-when-done"))

            # No quorum (one juror of three online): appealed twice, then unresolved.
            gate.release()
            wait_until(lambda: protocol.round_times(run_id).finished, 900, "the run to finish after the timeout")
            wait_for_exits(nodes, ("juror", "whistleblower"), "the juror and the whistleblower to exit")
    detail = logs(setup, nodes)
    events = all_events(protocol)
    appealed = [e for e in events if e.name == "DisputeAppealed"]
    assert [(e.args["appeals"], e.args["jurySize"]) for e in appealed] == [(1, 7), (2, 15)], detail
    drawn = [e.args["appeals"] for e in events if e.name == "JuryDrawn"]
    assert drawn == [0, 1, 2], detail  # a new jury after each appeal (the registry's three eligible jurors)
    assert set(re.findall(r"\bvoted\b.*?appeals=(\d+)", detail)) == {"0", "1", "2"}, detail  # the juror re-voted
    expired = [e for e in events if e.name == "DisputeExpired"]
    assert [(e.args["disputeId"], e.args["challenger"]) for e in expired] == [(dispute_id, address(WHISTLEBLOWER))]
    fee = RULES.run.challenge_bond * UNRESOLVED_CHALLENGE_FEE_BPS // 10_000
    assert (expired[0].args["bondReturned"], expired[0].args["fee"]) == (RULES.run.challenge_bond - fee, fee)
    assert not [e for e in events if e.name in ("VerdictSubmitted", "DisputeExecuted", "StakeSlashed")], detail
    withdrawn = [e for e in events if e.name == "Withdrawn" and e.args["account"] == address(WHISTLEBLOWER)]
    assert [e.args["amount"] for e in withdrawn] == [RULES.run.challenge_bond - fee]
    state = NodeState(setup.home / "whistleblowers" / address(WHISTLEBLOWER).lower() / "state.sqlite")
    records = [value for _, value in state.list("challenge")]
    assert [(r["dispute_id"], r["status"], r["outcome"]) for r in records] == [
        ("0x" + dispute_id.hex(), "closed", "expired")
    ], records
    resolved = [e for e in events if e.name == "AttestationResolved"]
    assert [(e.args["verifier"], e.args["state"], e.args["bond"]) for e in resolved] == [
        (address(LAZY), AttestationState.VOIDED, RULES.run.attestation_bond)
    ]
    # No default pass: the disputed pass was the cheater's only one, so its work is not paid; nobody lost stake.
    assert not protocol.is_accepted(run_id, 0, address(CHEATER))
    assert protocol.bonded_of(address(CHEATER), ROLE_SOLVER) == RULES.run.solver_min_stake
    assert protocol.bonded_of(address(LAZY), ROLE_VERIFIER) == RULES.run.verifier_min_stake + JUROR_MIN_STAKE
    assert_balance_matches_events(protocol)
