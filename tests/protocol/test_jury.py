"""protocol/jury.py: registry replay, jury drawing, votes, verdict assembly and dispute actions.

Property tests check the drawing rules against a direct transcription of `Disputes._eligibleSeats`;
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
from protocol.constants import get_quorum
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
)

DISPUTES = "0x" + "d1" * 20
CHAIN_ID = 31337


@dataclass(frozen=True)
class FakeEvent:
    name: str
    args: dict


@cache
def _key(i: int) -> bls.BlsKeyPair:
    return bls.compute_key_pair(keccak256(f"juror {i}".encode()))


@cache
def _g1(i: int) -> bytes:
    return bls.compute_eip2537_g1(_key(i).public_key)


def _account(i: int) -> str:
    return "0x" + f"{i + 1:040x}"


def _registry(n: int, inactive: frozenset[int] = frozenset()) -> list[JurorEntry]:
    return [JurorEntry(i, _account(i), _g1(i) if i < 8 else b"", i not in inactive) for i in range(n)]


def test_derived_juror_key_is_deterministic_and_separate_from_other_accounts():
    a, b = derive_juror_key(b"\x01" * 32), derive_juror_key(b"\x02" * 32)
    assert a.public_key == derive_juror_key(b"\x01" * 32).public_key != b.public_key
    assert bls.verify_proof_of_possession(a.public_key, bls.compute_proof_of_possession(a))
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


def test_registry_replay_keeps_order_and_activity():
    events = [
        FakeEvent("JurorRegistered", {"juror": _account(0), "index": 0, "publicKey": _g1(0)}),
        FakeEvent("StakeDeposited", {"amount": 1}),
        FakeEvent("JurorRegistered", {"juror": _account(1), "index": 1, "publicKey": _g1(1)}),
        FakeEvent("JurorDeregistered", {"juror": _account(0), "index": 0}),
        FakeEvent("JurorRegistered", {"juror": _account(2), "index": 2, "publicKey": _g1(2)}),
    ]
    registry = build_juror_registry(events)
    assert [(e.index, e.active) for e in registry] == [(0, False), (1, True), (2, True)]
    back = [*events, FakeEvent("JurorRegistered", {"juror": _account(0), "index": 0, "publicKey": _g1(0)})]
    assert build_juror_registry(back)[0].active
    with pytest.raises(JuryError, match="another key"):
        build_juror_registry([*events, FakeEvent("JurorRegistered", {"juror": _account(0), "index": 0,
                                                                      "publicKey": _g1(5)})])  # fmt: skip
    with pytest.raises(JuryError, match="incomplete"):
        build_juror_registry([FakeEvent("JurorRegistered", {"juror": _account(4), "index": 4, "publicKey": _g1(4)})])


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


def _reference_eligible(registry, offset, jury_size, parties) -> tuple[int, int]:
    """Disputes._eligibleSeats transcribed (pool from the offset, skip inactive and parties)."""
    size = len(registry)
    pool_size = min(jury_size + 3, size)
    eligible, seats = 0, jury_size
    for seat in range(pool_size):
        entry = registry[(offset + seat) % size]
        if seats == 0 or not entry.active or entry.account in parties:
            continue
        seats -= 1
        eligible |= 1 << seat
    return pool_size, eligible


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(1, 30),
    jury_size=st.integers(1, 21),
    seed=st.binary(min_size=32, max_size=32),
    inactive=st.frozensets(st.integers(0, 29), max_size=10),
    party_indexes=st.lists(st.integers(0, 29), max_size=3),
)
def test_draw_matches_the_contract_rule(size, jury_size, seed, inactive, party_indexes):
    registry = _registry(size, inactive)
    parties = [_account(i) for i in party_indexes] + ["0x" + "00" * 20]
    jury = draw_jury(registry, seed, jury_size, parties)
    offset = int.from_bytes(seed, "big") % size
    pool_size, eligible = _reference_eligible(registry, offset, jury_size, set(parties))
    assert (jury.offset, jury.registry_size, len(jury.pool), jury.eligible) == (offset, size, pool_size, eligible)
    assert bin(jury.eligible).count("1") <= jury_size
    assert all(jury.pool[s].account not in parties and jury.pool[s].active for s in jury.eligible_seats)
    check_drawn_jury(jury, offset, size, pool_size, eligible)
    with pytest.raises(JuryError):
        check_drawn_jury(jury, offset, size + 1, pool_size, eligible)


def test_draw_needs_jurors():
    with pytest.raises(JuryError, match="empty"):
        draw_jury([], keccak256(b"s"), 3, [])


def _jury(jury_size=3, size=6, parties=()):
    return draw_jury(_registry(size), keccak256(b"seed"), jury_size, [_account(i) for i in parties])


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


def test_no_verdict_below_quorum_and_an_aggregate_that_verifies_at_quorum():
    jury = _jury(jury_size=3)
    quorum = get_quorum(3)
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
        (1, 10, 100 + 256, "wait"),  # too late for blockhash: only expiry is left
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
