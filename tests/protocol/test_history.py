"""protocol.history.fold: a run's history folded from hand-built contract events (planted faults:
test_history_plants.py)."""

from __future__ import annotations

import pytest

from protocol.history import accounts, disputes, plants, registry
from protocol.history.events import (
    EVENT_FIELDS,
    ChainEvent,
    HistoryError,
    compute_solver_fault_key,
    find_missing_event_fields,
    share_token_contract,
)
from protocol.history.fold import HANDLERS, fold_run_history, get_round_phase, list_runs
from protocol.types import RunTerms
from tests.history_builder import (
    CHALLENGER,
    CONFIG,
    CREATOR,
    ETH,
    JUROR,
    SOLVER_A,
    SOLVER_B,
    TOKEN,
    VERIFIER,
    ZERO,
    RunEvents,
    attested_pass,
    honest_two_rounds,
    theta,
    time_of,
    with_args,
)


def _hex(raw: bytes) -> str:
    return "0x" + raw.hex()


def test_honest_run_rounds_thetas_and_acceptance():
    ev = honest_two_rounds()
    h = fold_run_history(ev.events, 1, ev.timestamps)
    assert (h.run_id, h.creator, h.share_token, h.reward_pool) == (1, CREATOR, TOKEN, 10 * ETH)
    assert h.finished and h.current_round == 2 and len(h.settled_rounds) == 2
    assert [r.theta_hash for r in h.rounds] == [_hex(theta(0)), _hex(theta(1))]
    assert [r.next_theta_hash for r in h.rounds] == [_hex(theta(1)), _hex(theta(2))]
    for rnd in h.rounds:
        assert [c.solver for c in rnd.commitments] == [SOLVER_A, SOLVER_B]
        assert rnd.accepted == tuple(sorted((SOLVER_A, SOLVER_B), key=lambda a: bytes.fromhex(a[2:])))
        assert rnd.paid_commitments == 2 and rnd.standing_checks == 2
        assert {a.state for a in rnd.attestations} == {"finalized"}
        assert all(a.bond_returned == ETH for a in rnd.attestations)
        assert rnd.claims[0].status == "settled" and rnd.claimer == SOLVER_A
        assert rnd.pool_released == 5 * ETH
        assert rnd.start_time == time_of(rnd.start_block)
    assert h.terms.solver_bucket == 800 * ETH and h.terms.verifier_bucket == 150 * ETH
    assert h.terms.juror_bucket == 50 * ETH


def test_shares_balances_and_labels():
    ev = honest_two_rounds()
    h = fold_run_history(ev.events, 1, ev.timestamps)
    assert h.balances == {SOLVER_A: 800 * ETH, SOLVER_B: 800 * ETH, VERIFIER: 300 * ETH}
    assert h.total_supply == 1900 * ETH
    assert len(h.mints) == len(h.share_claims) == 8
    assert {(c.kind, c.holder) for c in h.share_claims if c.round == 0} == {
        ("solver", SOLVER_A),
        ("solver", SOLVER_B),
        ("verifier", VERIFIER),
    }
    assert [m.minted_in_round for m in h.mints if m.round == 1] == [400 * ETH, 475 * ETH, 875 * ETH, 950 * ETH]
    labels = {p.address: p.label for p in h.participants}
    # numbered by address within a role (SOLVER_B's is the lower), not by who joined first
    assert labels == {CREATOR: "creator", SOLVER_B: "solver-1", SOLVER_A: "solver-2", VERIFIER: "verifier-1"}
    assert [p.address for p in h.participants] == [CREATOR, SOLVER_B, SOLVER_A, VERIFIER]
    renamed = fold_run_history(ev.events, 1, ev.timestamps, labels={VERIFIER.lower(): "alice"})
    assert renamed.label_of(VERIFIER) == "alice" and renamed.label_of(SOLVER_A) == "solver-2"


def test_labels_and_participant_order_do_not_depend_on_who_joined_first():
    first, swapped = honest_two_rounds(), honest_two_rounds()
    joins = [i for i, e in enumerate(swapped.events) if e.name == "SolverJoined"]
    a, b = swapped.events[joins[0]], swapped.events[joins[1]]
    swapped.events[joins[0]], swapped.events[joins[1]] = (
        with_args(a, solver=b.args["solver"]),
        with_args(b, solver=a.args["solver"]),
    )
    assert [e.args["solver"] for e in swapped.events if e.name == "SolverJoined"] == [SOLVER_B, SOLVER_A]
    one, other = fold_run_history(first.events, 1), fold_run_history(swapped.events, 1)
    assert one.participants == other.participants


def test_share_transfer_moves_balance():
    ev = honest_two_rounds()
    ev.step()
    ev.emit(share_token_contract(1), "Transfer", **{"from": SOLVER_A, "to": JUROR, "value": 100 * ETH})
    ev.emit("RunShares#2", "Transfer", **{"from": ZERO, "to": JUROR, "value": 5 * ETH})  # another run's token
    h = fold_run_history(ev.events, 1, ev.timestamps)
    assert h.balances[SOLVER_A] == 700 * ETH and h.balances[JUROR] == 100 * ETH
    assert h.total_supply == 1900 * ETH
    assert h.label_of(JUROR) == "holder-1"


def test_finalized_fail_slashes_the_solver_and_blocks_acceptance():
    ev = RunEvents()
    ev.deposit(SOLVER_A, 1)
    ev.deposit(SOLVER_B, 1)
    ev.create()
    ev.commit(0, SOLVER_A)
    ev.commit(0, SOLVER_B)
    ev.seed(0)
    ev.attest(0, SOLVER_A)
    ev.attest(0, SOLVER_B, fail=True)
    ev.finalize(0, SOLVER_A)
    ev.finalize(0, SOLVER_B, fail=True)
    h = fold_run_history(ev.events, 1, ev.timestamps)
    rnd = h.rounds[0]
    assert rnd.accepted == (SOLVER_A,) and rnd.paid_commitments == 1
    fail = rnd.attestations_of(SOLVER_B)[0]
    assert fail.is_fail and fail.state == "finalized" and (fail.sample_index, fail.segment_index) == (1, 2)
    assert len(h.slashes) == 1
    slash = h.slashes[0]
    assert (slash.account, slash.role, slash.amount, slash.fault, slash.round) == (
        SOLVER_B,
        "solver",
        10 * ETH,
        "solver fault",
        0,
    )
    assert slash.fault_key == compute_solver_fault_key(1, 0, SOLVER_B)
    stake = [p for p in h.stakes if p.account == SOLVER_B]
    assert [(p.change, p.bonded) for p in stake] == [("deposit", 10 * ETH), ("slash", 0)]
    assert h.revenue_total("pool funded") == 5 * ETH


def test_overturned_pass_dispute_slashes_both_and_pays_jurors():
    ev = attested_pass()
    dispute = ev.overturn_pass(0, SOLVER_A)
    ev.claim_theta(0, claimer=SOLVER_B, value=theta(0))
    ev.settle(0, claimer=SOLVER_B)
    ev.claim_juror(0, dispute, 50 * ETH)
    h = fold_run_history(ev.events, 1, ev.timestamps)
    rnd = h.rounds[0]
    assert rnd.accepted == () and rnd.standing_checks == 0 and rnd.juror_votes == 1
    attestation = rnd.attestations[0]
    assert attestation.state == "overturned" and attestation.bond_forfeited == ETH and not attestation.standing
    (d,) = rnd.disputes
    assert (d.kind, d.status, d.challenger, d.winner, d.challenger_wins) == (
        "attestation",
        "executed",
        CHALLENGER,
        CHALLENGER,
        True,
    )
    assert d.juror_rewards[0].juror == JUROR and d.signer_count == 1 and d.total == 21 * ETH
    assert {(s.account, s.fault) for s in h.slashes} == {(VERIFIER, "wrong attestation"), (SOLVER_A, "solver fault")}
    (claim,) = h.share_claims
    assert (claim.kind, claim.holder, claim.dispute_id, claim.round) == ("juror", JUROR, dispute, 0)
    roles = {p.address: p.roles for p in h.participants}
    assert roles[CHALLENGER] == ("challenger",) and "juror" in roles[JUROR]


def test_unresolved_dispute_voids_the_pass_and_slashes_nobody():
    ev = attested_pass()
    dispute = ev.challenge_pass(0, SOLVER_A)
    ev.leave_unresolved(0, SOLVER_A, dispute)
    h = fold_run_history(ev.events, 1, ev.timestamps)
    rnd = h.rounds[0]
    (attestation,) = rnd.attestations
    assert attestation.state == "voided" and attestation.bond_returned == ETH and not attestation.standing
    assert not attestation.is_pass_counted and not attestation.is_fault_counted
    assert rnd.accepted == () and rnd.standing_checks == 0 and h.slashes == ()
    (d,) = rnd.disputes
    assert (d.status, d.appeals, d.bond_returned, d.to_pool) == ("expired", 2, 2 * ETH * 8 // 10, 2 * ETH // 5)


def test_other_runs_are_ignored_and_missing_run_is_an_error():
    first = honest_two_rounds()
    second = RunEvents(run_id=2)
    second.block = first.block
    second.create()
    second.commit(0, SOLVER_B)
    second.deposit(JUROR, 2)
    merged = sorted(first.events + second.events, key=lambda e: (e.block_number, e.log_index))
    h = fold_run_history(merged, 1, {**first.timestamps, **second.timestamps})
    assert all(c.solver in (SOLVER_A, SOLVER_B) for r in h.rounds for c in r.commitments)
    assert len(h.rounds[0].commitments) == 2
    assert JUROR not in {p.account for p in h.stakes}  # only the run's participants' stakes
    h2 = fold_run_history(merged, 2, {})
    assert [c.solver for c in h2.rounds[0].commitments] == [SOLVER_B] and h2.created_time is None
    with pytest.raises(HistoryError, match="run 3 does not exist"):
        fold_run_history(merged, 3)
    runs = list_runs(merged)
    assert [(r.run_id, r.rounds_settled, r.finished, r.max_rounds) for r in runs] == [(1, 2, True, 2), (2, 0, False, 2)]


def test_event_for_a_round_that_never_started_is_an_error():
    ev = RunEvents()
    ev.create()
    ev.commit(3, SOLVER_A)
    with pytest.raises(HistoryError, match="round 3 before that round started"):
        fold_run_history(ev.events, 1)


def test_round_phases_follow_the_windows():
    ev = RunEvents()
    ev.create()
    h = fold_run_history(ev.events, 1, ev.timestamps)
    start = h.rounds[0].start_time
    assert get_round_phase(h, 0, start) == "commit window"
    assert get_round_phase(h, 0, start + 30) == "attest window"
    assert get_round_phase(h, 0, start + 45) == "challenge window"
    assert get_round_phase(h, 0, start + 49) == "awaiting θ claim"
    assert get_round_phase(h, 5, start) == "not started"
    ev.block += 5  # past the challenge window (10 s per block)
    ev.claim_theta(0)
    h = fold_run_history(ev.events, 1, ev.timestamps)
    claimed = h.rounds[0].claims[0].time
    assert get_round_phase(h, 0, claimed) == "claim window"
    assert get_round_phase(h, 0, claimed + 4) == "awaiting settlement"
    ev.settle(0)
    assert get_round_phase(fold_run_history(ev.events, 1, ev.timestamps), 0, claimed) == "settled"


def test_stake_series_follows_deposit_unbond_withdraw():
    ev = RunEvents()
    ev.deposit(SOLVER_A, 1, 10 * ETH)
    ev.deposit(SOLVER_A, 1, 5 * ETH)
    ev.create()
    ev.join(SOLVER_A)
    ev.step()
    ev.emit(
        "StakeManager", "UnbondingRequested", account=SOLVER_A, role=1, amount=4 * ETH, unbonding=4 * ETH, releaseTime=0
    )
    ev.step()
    ev.emit("StakeManager", "StakeWithdrawn", account=SOLVER_A, role=1, amount=4 * ETH)
    h = fold_run_history(ev.events, 1, ev.timestamps)
    assert [(p.change, p.bonded, p.unbonding) for p in h.stakes] == [
        ("deposit", 10 * ETH, 0),
        ("deposit", 15 * ETH, 0),
        ("unbond", 11 * ETH, 4 * ETH),
        ("withdraw", 11 * ETH, 0),
    ]
    assert all(p.time == time_of(p.block) for p in h.stakes)


def test_event_order_is_chain_order_not_list_order():
    ev = honest_two_rounds()
    shuffled = list(reversed(ev.events))
    assert fold_run_history(shuffled, 1, ev.timestamps) == fold_run_history(ev.events, 1, ev.timestamps)


def test_abi_drift_is_reported_by_event_and_field():
    abi = {name: list(fields) for name, fields in EVENT_FIELDS.items()}
    assert find_missing_event_fields(abi) == []
    abi["Committed"] = [f for f in abi["Committed"] if f != "tokens"]
    del abi["RoundSettled"]
    assert find_missing_event_fields(abi) == ["Committed.tokens", "RoundSettled"]


def test_run_terms_decoded_by_field_name():
    ev = honest_two_rounds()
    h = fold_run_history(ev.events, 1, ev.timestamps)
    assert h.terms == RunTerms.from_fields(CONFIG)
    assert h.terms.shares_per_round == 1000 * ETH and h.terms.theta0_hash == theta(0)
    assert h.terms.num_segments == 3
    config_fields = [f.removeprefix("config.") for f in EVENT_FIELDS["RunCreated"] if f.startswith("config.")]
    assert config_fields == list(CONFIG)  # RunConfig's components, in Solidity's order


def test_tuple_config_is_refused_not_read_by_position():
    ev = RunEvents()
    ev.create()
    created = ev.events[0]
    as_tuple = ChainEvent(
        created.contract,
        created.name,
        {**created.args, "config": tuple(ev.config.values())},
        created.block_number,
        created.log_index,
    )
    with pytest.raises(HistoryError, match="by field name"):
        fold_run_history([as_tuple, *ev.events[1:]], 1)
    renamed = with_args(created, config={**{k: v for k, v in ev.config.items() if k != "jurySize"}, "jurors": 3})
    with pytest.raises(HistoryError, match="jury_size"):
        list_runs([renamed])


def test_every_handled_event_is_declared_once():
    assert set(HANDLERS) <= set(EVENT_FIELDS)
    families = [registry.HANDLERS, disputes.HANDLERS, accounts.HANDLERS, plants.HANDLERS]
    assert sum(len(f) for f in families) == len(HANDLERS)
