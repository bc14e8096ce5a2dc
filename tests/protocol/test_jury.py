"""protocol/jury.py: registry replay, jury drawing, votes, verdict assembly and dispute actions.

Property tests check the drawing rules against a direct transcription of `JurorRegistry.seatOf` and
`Disputes._drawSeats`;
the on-chain behaviour (drawJury accepting these pools, submitVerdict accepting these aggregates)
is exercised on a real anvil by tests/disputes/.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import pytest
from eth_abi import encode as abi_encode
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import bls
from protocol.constants import MAX_APPEALS, MIN_JURY_SIZE, get_quorum
from protocol.hashing import keccak256
from protocol.jury import (
    KIND_ATTESTATION,
    KIND_CLAIM,
    DisputeSubject,
    JurorEntry,
    JuryError,
    Vote,
    assemble_verdict,
    build_juror_registry,
    check_drawn_jury,
    check_vote,
    compute_dispute_id,
    compute_eligible_aggregate,
    compute_jury_seed,
    compute_vote,
    decode_eip2537_g1,
    derive_juror_key,
    draw_jury,
    get_dispute_action,
    get_non_signers,
    get_pool_index,
)

DISPUTES = "0x" + "d1" * 20
CHAIN_ID = 31337


@dataclass(frozen=True)
class FakeEvent:
    name: str
    args: dict
    block_number: int = 0


@cache
def _key(i: int) -> bls.BlsKeyPair:
    return bls.compute_key_pair(keccak256(f"juror {i}".encode()))


@cache
def _g1(i: int) -> bytes:
    return bls.compute_eip2537_g1(_key(i).public_key)


def _account(i: int) -> str:
    return "0x" + f"{i + 1:040x}"


def _registry(n: int) -> list[JurorEntry]:
    return [JurorEntry(i, _account(i), _g1(i) if i < 8 else b"") for i in range(n)]


def _joined(i: int, index: int, block: int = 0) -> FakeEvent:
    return FakeEvent("JurorRegistered", {"juror": _account(i), "index": index, "publicKey": _g1(i)}, block)


def _left(i: int, index: int, moved: int | None, block: int = 0) -> FakeEvent:
    moved_account = "0x" + "00" * 20 if moved is None else _account(moved)
    return FakeEvent("JurorDeregistered", {"juror": _account(i), "index": index, "moved": moved_account}, block)


def test_derived_juror_key_is_deterministic_and_separate_from_other_accounts():
    a, b = derive_juror_key(b"\x01" * 32), derive_juror_key(b"\x02" * 32)
    assert a.public_key == derive_juror_key(b"\x01" * 32).public_key != b.public_key
    pop = bls.compute_proof_of_possession(a, _account(1))
    assert bls.verify_proof_of_possession(a.public_key, _account(1), pop)
    assert not bls.verify_proof_of_possession(a.public_key, _account(2), pop)  # bound to the registering account
    with pytest.raises(JuryError):
        derive_juror_key(b"short")


def test_eip2537_g1_round_trip_and_rejections():
    assert decode_eip2537_g1(_g1(3)) == _key(3).public_key
    with pytest.raises(bls.InfinityPointError):
        decode_eip2537_g1(bytes(128))
    off_curve = _g1(3)[:-1] + bytes([_g1(3)[-1] ^ 1])
    with pytest.raises(JuryError, match="not a point"):
        decode_eip2537_g1(off_curve)
    with pytest.raises(JuryError):
        decode_eip2537_g1(b"\x01" * 127)


def test_registry_replay_swaps_and_pops_and_reads_past_blocks():
    events = [
        _joined(0, 0, block=1),
        FakeEvent("StakeDeposited", {"amount": 1}, 1),
        _joined(1, 1, block=2),
        _joined(2, 2, block=2),
        _left(0, 0, moved=2, block=3),  # the last entry (2) moves into the hole
        _joined(3, 2, block=4),
        _left(3, 2, moved=None, block=5),  # the last entry leaves: nothing moves
    ]
    accounts = lambda entries: [e.account for e in entries]  # noqa: E731
    assert accounts(build_juror_registry(events)) == [_account(2), _account(1)]
    assert accounts(build_juror_registry(events, at_block=2)) == [_account(0), _account(1), _account(2)]
    assert accounts(build_juror_registry(events, at_block=4)) == [_account(2), _account(1), _account(3)]
    assert build_juror_registry(events, at_block=0) == []
    back = [*events, _joined(0, 2, block=6)]
    assert build_juror_registry(back)[2] == JurorEntry(2, _account(0), _g1(0))
    with pytest.raises(JuryError, match="another key"):
        build_juror_registry([*events, FakeEvent("JurorRegistered", {"juror": _account(0), "index": 2,
                                                                      "publicKey": _g1(5)}, 6)])  # fmt: skip
    with pytest.raises(JuryError, match="incomplete"):
        build_juror_registry([_joined(4, 4)])
    with pytest.raises(JuryError, match="incomplete"):
        build_juror_registry([_joined(0, 0), _joined(1, 1), _left(0, 0, moved=None)])  # 1 must have moved


def test_dispute_id_and_seed_are_the_solidity_encodings():
    subject = DisputeSubject(KIND_ATTESTATION, 7, 2, _account(9), 1, 0)
    expected = keccak256(
        abi_encode(["uint8", "uint256", "uint64", "address", "uint8", "uint16"], [1, 7, 2, _account(9), 1, 0])
    )
    assert compute_dispute_id(subject) == expected == subject.dispute_id
    assert DisputeSubject.from_json(subject.to_json()) == subject
    claim = DisputeSubject(KIND_CLAIM, 7, 2, claim_nonce=3)
    assert claim.dispute_id != subject.dispute_id
    block_hash = keccak256(b"block")
    assert compute_jury_seed(block_hash, expected) == keccak256(block_hash + expected)


def _reference_pool(registry, seed, pool_size) -> list[JurorEntry]:
    """JurorRegistry.seatOf transcribed: the whole registry in order when it fits, else keccak(seed, s) % n."""
    n = len(registry)
    if n <= pool_size:
        return list(registry)
    return [registry[int.from_bytes(keccak256(seed + s.to_bytes(32, "big")), "big") % n] for s in range(pool_size)]


def _reference_eligible(pool, jury_size, parties) -> int:
    """Disputes._drawSeats transcribed: skip parties and jurors already seated, stop at jury_size."""
    eligible, seated = 0, []
    for seat, entry in enumerate(pool):
        if len(seated) == jury_size or entry.account in parties or entry.account in seated:
            continue
        seated.append(entry.account)
        eligible |= 1 << seat
    return eligible


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(1, 60),
    jury_size=st.integers(1, 21),
    seed=st.binary(min_size=32, max_size=32),
    party_indexes=st.lists(st.integers(0, 59), max_size=3),
)
def test_draw_matches_the_contract_rule(size, jury_size, seed, party_indexes):
    registry = _registry(size)
    parties = [_account(i) for i in party_indexes] + ["0x" + "00" * 20]
    jury = draw_jury(registry, seed, jury_size, parties, 0)
    pool = _reference_pool(registry, seed, jury_size + 3)
    eligible = _reference_eligible(pool, jury_size, set(parties))
    assert (list(jury.pool), jury.eligible, jury.pool_size) == (pool, eligible, jury_size + 3)
    assert [get_pool_index(seed, s, jury_size + 3, size) for s in range(len(pool))] == [e.index for e in pool]
    assert jury.seats <= jury_size and jury.quorum == get_quorum(jury.seats, 0)
    seated = [jury.pool[s].account for s in jury.eligible_seats]
    assert len(set(seated)) == len(seated) and not set(seated) & set(parties)
    check_drawn_jury(jury, seed, jury_size + 3, jury.seats, eligible)
    with pytest.raises(JuryError):
        check_drawn_jury(jury, seed, jury_size + 3, jury.seats, eligible ^ 1)


@settings(max_examples=100, deadline=None)
@given(
    honest=st.integers(3, 30),
    sybils=st.integers(1, 40),
    leavers=st.lists(st.integers(0, 29), max_size=10, unique=True),
    seed=st.binary(min_size=32, max_size=32),
)
def test_registering_or_leaving_after_the_snapshot_moves_no_seat(honest, sybils, leavers, seed):
    """Finding 1 of issue 16: the jury comes from the registry of the dispute's block, fixed before the seed
    exists; sybils that join (or jurors that leave) in later blocks cannot move the draw."""
    events = [_joined(i, i, block=1) for i in range(honest)]
    snapshot = build_juror_registry(events, at_block=1)
    size = honest
    later = list(events)
    for k in range(sybils):
        later.append(FakeEvent("JurorRegistered", {"juror": _account(100 + k), "index": size, "publicKey": _g1(0)}, 2))
        size += 1
    current = build_juror_registry(later)
    for leaver in leavers:
        if leaver >= honest:
            continue
        index = next(e.index for e in current if e.account.lower() == _account(leaver))
        moved = current[-1].account if index != len(current) - 1 else None
        later.append(FakeEvent("JurorDeregistered", {"juror": _account(leaver), "index": index,
                                                     "moved": moved or "0x" + "00" * 20}, 3))  # fmt: skip
        current = build_juror_registry(later)
    assert build_juror_registry(later, at_block=1) == snapshot
    before = draw_jury(snapshot, seed, 5, [], 0)
    after = draw_jury(build_juror_registry(later, at_block=1), seed, 5, [], 0)
    assert after == before and all(int(e.account, 16) <= honest for e in after.pool)


def test_draw_needs_jurors():
    with pytest.raises(JuryError, match="empty"):
        draw_jury([], keccak256(b"s"), 3, [], 0)


def _jury(jury_size=3, size=6, parties=(), appeals=0):
    return draw_jury(_registry(size), keccak256(b"seed"), jury_size, [_account(i) for i in parties], appeals)


def _votes(jury, seats, challenger_wins=True, dispute_id=None):
    dispute_id = dispute_id or keccak256(b"dispute")
    return [
        compute_vote(_key(jury.pool[s].index), DISPUTES, CHAIN_ID, dispute_id, s, jury.pool[s].account, challenger_wins)
        for s in seats
    ]


def test_votes_are_checked_against_the_seat_key():
    jury = _jury()
    dispute_id = keccak256(b"dispute")
    seats = jury.eligible_seats
    good = _votes(jury, seats[:1])[0]
    assert check_vote(good, jury, DISPUTES, CHAIN_ID, dispute_id) is None
    assert Vote.from_json(good.to_json()) == good
    forged = Vote(dispute_id, good.seat, good.juror, True, bls.compute_signature(_key(7), b"x"))
    assert "does not verify" in check_vote(forged, jury, DISPUTES, CHAIN_ID, dispute_id)
    flipped = Vote(dispute_id, good.seat, good.juror, False, good.signature)  # signed "true", claims "false"
    assert "does not verify" in check_vote(flipped, jury, DISPUTES, CHAIN_ID, dispute_id)
    stranger = Vote(dispute_id, good.seat, _account(29), True, good.signature)
    assert "belongs to" in check_vote(stranger, jury, DISPUTES, CHAIN_ID, dispute_id)
    outside = Vote(dispute_id, 30, good.juror, True, good.signature)
    assert "not an eligible seat" in check_vote(outside, jury, DISPUTES, CHAIN_ID, dispute_id)
    assert "another dispute" in check_vote(good, jury, DISPUTES, CHAIN_ID, keccak256(b"other"))
    with pytest.raises(JuryError):
        Vote.from_json({"seat": 1})


def test_a_jury_below_the_minimum_never_decides_and_other_jurors_votes_do_not_count():
    small = _jury(jury_size=3, size=4, parties=(0, 1))  # two seats left
    assert small.seats == 2 < MIN_JURY_SIZE and not small.can_decide
    assert assemble_verdict(small, _votes(small, small.eligible_seats)) is None
    jury = _jury(jury_size=3)
    # votes of another juror at the same seats (an earlier jury of an appealed dispute) do not count
    other = draw_jury(list(reversed(_registry(6))), keccak256(b"seed"), 3, [], 0)
    stale = [v for v in _votes(other, other.eligible_seats) if jury.pool[v.seat].account != v.juror]
    assert stale and assemble_verdict(jury, stale) is None


def test_no_verdict_below_quorum_and_an_aggregate_that_verifies_at_quorum():
    jury = _jury(jury_size=3)
    quorum = get_quorum(3, 0)
    seats = jury.eligible_seats
    assert assemble_verdict(jury, _votes(jury, seats[: quorum - 1])) is None
    split = _votes(jury, seats[:1], True) + _votes(jury, seats[1:2], False)
    assert assemble_verdict(jury, split) is None
    verdict = assemble_verdict(jury, _votes(jury, seats[:quorum]))
    assert verdict is not None and verdict.challenger_wins and verdict.signer_count == quorum
    # The contract's check: the aggregate signature verifies under (eligible sum - non-signers).
    signers = [s for s in seats if verdict.signers >> s & 1]
    non_signers = get_non_signers(jury, verdict.signers)
    assert [n[0] for n in non_signers] == [s for s in seats if s not in signers]
    message = bls.compute_verdict_message(DISPUTES, CHAIN_ID, keccak256(b"dispute"), True)
    signature = _votes(jury, signers)
    aggregate = bls.compute_aggregate_signature([v.signature for v in signature])
    assert bls.compute_eip2537_g2(aggregate) == verdict.signature_g2
    assert bls.verify_aggregate_signature([jury.pool[s].public_key for s in signers], message, aggregate)
    assert verdict.eligible_aggregate_g1 == compute_eligible_aggregate(jury)


def test_the_last_appeal_level_decides_by_a_simple_majority():
    """Issue 36, finding 5: at appeals == MAX_APPEALS a verdict needs seats // 2 + 1 signers, not two thirds."""
    first, last = _jury(jury_size=5, size=8), _jury(jury_size=5, size=8, appeals=MAX_APPEALS)
    assert first.seats == last.seats == 5 and (first.quorum, last.quorum) == (4, 3)
    majority = _votes(last, last.eligible_seats[:3])
    assert assemble_verdict(first, majority) is None
    verdict = assemble_verdict(last, majority)
    assert verdict is not None and verdict.signer_count == 3


def test_one_vote_per_seat_and_ineligible_seats_ignored():
    jury = _jury(jury_size=3, parties=())
    seats = jury.eligible_seats
    twice = _votes(jury, seats[:1]) * 3
    assert assemble_verdict(jury, twice) is None
    non_eligible = [s for s in range(len(jury.pool)) if s not in seats]
    extra = _votes(jury, non_eligible[:2]) if non_eligible else []
    assert assemble_verdict(jury, _votes(jury, seats[:1]) + extra) is None


def test_non_signers_reject_bits_outside_the_jury():
    jury = _jury(jury_size=2)
    outside = next(s for s in range(len(jury.pool)) if not jury.eligible >> s & 1)
    with pytest.raises(JuryError):
        get_non_signers(jury, 1 << outside)


@pytest.mark.parametrize(
    ("status", "now", "latest", "expected"),
    [
        (1, 10, 100, "wait_seed_block"),  # opened in block 100: the seed block 101 is not mined
        (1, 10, 101, "draw_jury"),
        (1, 10, 100 + 256, "wait"),  # too late for blockhash: appealed at the deadline
        (1, 50, 101, "expire"),
        (2, 10, 200, "wait"),
        (2, 50, 200, "expire"),
        (3, 50, 200, "execute"),
        (4, 50, 200, "done"),
        (5, 50, 200, "done"),
    ],
)
def test_dispute_actions(status, now, latest, expected):
    assert get_dispute_action(status, now, 50, latest, 100) == expected
