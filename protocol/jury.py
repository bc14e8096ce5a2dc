"""Juries, exactly as `Disputes.sol` draws and checks them: pure functions, no chain, no clock.

A dispute's jury comes from the JurorRegistry as it was in the dispute's own block (`openedBlock`,
the challenge's or the last appeal's), replayed from `JurorRegistered` / `JurorDeregistered` events
(active jurors only; a leaver's index is filled by the last entry, swap-and-pop):

    seed      = keccak256(abi.encode(blockhash(openedBlock + 1), disputeId))
    jurySize  = the run's, then min(2 * previous + 1, MAX_JURY_SIZE) after each appeal
    poolSize  = jurySize + JURY_PARTY_SLACK;  n = registry size at openedBlock
    seat s    = registry[s] if n <= poolSize (s < n), else registry[uint256(keccak256(abi.encode(seed, s))) % n]
    eligible  = the first jurySize seats whose juror is not the challenger, the defendant (attester or
                claimer) or the solver, and does not already hold an earlier seat
    quorum    = ceil(2 * seats / 3) signers, seats = the eligible seats; at the last appeal level
                (appeals == MAX_APPEALS) a simple majority, seats // 2 + 1 (`get_quorum`); fewer than
                MIN_JURY_SIZE seats cannot decide (the dispute waits for its deadline and is appealed)

`drawJury` takes every pool seat's (account, key) and stores the hash of the sum of the eligible
keys; `submitVerdict` takes the signer bitmap, that sum and the keys of the eligible seats that
did not sign (in increasing seat order), and verifies the aggregate signature against
sum - non-signers. Everything here builds exactly those arguments, so a node that calls them
with what this module returns cannot be rejected for a wrong pool, bitmap or key.

A juror's BLS key is derived from its account key (`derive_juror_key`): one secret to keep, and a
node that restarts re-derives the key it registered. The derivation hashes a versioned domain
tag with the account's private key (keccak256), which is then the IKM of the IETF KeyGen in
`protocol.bls.compute_key_pair`; the BLS key reveals nothing about the account key (a one-way
hash of it), and the tag keeps it apart from any other key derived from the same secret.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from eth_abi import encode as abi_encode
from eth_utils import to_canonical_address, to_checksum_address
from py_ecc.bls.g2_primitives import G1_to_pubkey
from py_ecc.fields import optimized_bls12_381_FQ as FQ
from py_ecc.optimized_bls12_381 import b as _G1_B
from py_ecc.optimized_bls12_381 import is_on_curve

from protocol import bls
from protocol.constants import JURY_PARTY_SLACK, MIN_JURY_SIZE, get_quorum
from protocol.contract_constants import DisputeStatus
from protocol.errors import GradledgerError
from protocol.hashing import Hash32, keccak256, to_hash32
from protocol.sampling import compute_sample

JUROR_KEY_DOMAIN = b"gradledger.juror-bls-key.v1"
KIND_ATTESTATION = 1
KIND_CLAIM = 2
KIND_PLANT = 3
"""A commitment revealed as planted, disputed as not being the planted training (docs/planted-faults.md)."""
ZERO_ADDRESS = "0x" + "00" * 20


class JuryError(GradledgerError):
    """A jury, vote or verdict does not fit the registry or the dispute."""


@dataclass(frozen=True)
class JurorEntry:
    """One registry entry: its list index, account and key (EIP-2537 G1, 128 bytes)."""

    index: int
    account: str
    public_key_g1: bytes

    @property
    def public_key(self) -> bytes:
        """The key as py_ecc's 48-byte compressed point."""
        return decode_eip2537_g1(self.public_key_g1)


@dataclass(frozen=True)
class DisputeSubject:
    """What a dispute is about (the Solidity struct); its id is keccak256(abi.encode(subject))."""

    kind: int
    run_id: int
    round: int
    solver: str = ZERO_ADDRESS
    slot: int = 0
    claim_nonce: int = 0
    """A θ claim's nonce; for a plant dispute (KIND_PLANT), the disputed segment (one dispute per segment)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "solver", to_checksum_address(self.solver))

    def to_abi(self) -> tuple:
        return (self.kind, self.run_id, self.round, to_checksum_address(self.solver), self.slot, self.claim_nonce)

    @property
    def dispute_id(self) -> Hash32:
        return compute_dispute_id(self)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "run_id": self.run_id,
            "round": self.round,
            "solver": to_checksum_address(self.solver),
            "slot": self.slot,
            "claim_nonce": self.claim_nonce,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DisputeSubject:
        return cls(
            int(data["kind"]),
            int(data["run_id"]),
            int(data["round"]),
            str(data["solver"]),
            int(data["slot"]),
            int(data["claim_nonce"]),
        )


def get_plant_subject(run_id: int, round_index: int, solver: str, segment: int) -> DisputeSubject:
    """The subject of a plant dispute over committed segment `segment` (Disputes.challengePlant): one dispute per
    segment, so the planter cannot use up the check by disputing its own plant over a segment it did train."""
    return DisputeSubject(KIND_PLANT, run_id, round_index, solver, 0, segment)


@dataclass(frozen=True)
class Jury:
    """A drawn jury: pool seats in seat order, the eligible bitmap, the sizes it was drawn with and the dispute's
    appeal level (the last level decides by a simple majority)."""

    seed: Hash32
    jury_size: int
    pool_size: int
    pool: tuple[JurorEntry, ...]
    eligible: int
    appeals: int

    @property
    def seats(self) -> int:
        """Seats the jury actually has (the quorum's base)."""
        return bin(self.eligible).count("1")

    @property
    def quorum(self) -> int:
        return get_quorum(self.seats, self.appeals)

    @property
    def can_decide(self) -> bool:
        """Whether a verdict is possible: at least MIN_JURY_SIZE seats (`submitVerdict` reverts JuryTooSmall)."""
        return self.seats >= MIN_JURY_SIZE

    @property
    def eligible_seats(self) -> tuple[int, ...]:
        return tuple(s for s in range(len(self.pool)) if self.eligible >> s & 1)

    def seat_of(self, account: str) -> int | None:
        """The eligible seat of `account`, if it has one."""
        for seat in self.eligible_seats:
            if self.pool[seat].account.lower() == account.lower():
                return seat
        return None


@dataclass(frozen=True)
class Vote:
    """One juror's signed verdict on one dispute (96-byte compressed G2 signature)."""

    dispute_id: Hash32
    seat: int
    juror: str
    challenger_wins: bool
    signature: bytes

    def to_json(self) -> dict[str, Any]:
        return {
            "dispute_id": "0x" + self.dispute_id.hex(),
            "seat": self.seat,
            "juror": to_checksum_address(self.juror),
            "challenger_wins": self.challenger_wins,
            "signature": "0x" + self.signature.hex(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Vote:
        try:
            signature = bytes.fromhex(str(data["signature"]).removeprefix("0x"))
            return cls(
                to_hash32(data["dispute_id"], "dispute id"),
                int(data["seat"]),
                to_checksum_address(str(data["juror"])),
                bool(data["challenger_wins"]),
                signature,
            )
        except (KeyError, ValueError, TypeError, GradledgerError) as exc:
            raise JuryError(
                f"malformed vote: {exc}; a vote is "
                "{dispute_id, seat, juror, challenger_wins, signature (0x-hex, 96 bytes)}"
            ) from None


@dataclass(frozen=True)
class Verdict:
    """The arguments of `Disputes.submitVerdict` for a quorum of matching votes."""

    challenger_wins: bool
    signers: int
    signature_g2: bytes
    eligible_aggregate_g1: bytes
    non_signers: tuple[tuple[int, str, bytes], ...]

    @property
    def signer_count(self) -> int:
        return bin(self.signers).count("1")


DisputeAction = Literal["draw_jury", "wait_seed_block", "execute", "expire", "wait", "done"]


# ---------------------------------------------------------------------------------------
# Keys


def derive_juror_key(account_private_key: bytes) -> bls.BlsKeyPair:
    """A node's juror BLS key from its account key: KeyGen(keccak256(domain tag || private key))."""
    if not isinstance(account_private_key, (bytes, bytearray)) or len(account_private_key) != 32:
        raise JuryError("a juror key is derived from a 32-byte account private key")
    return bls.compute_key_pair(keccak256(JUROR_KEY_DOMAIN + bytes(account_private_key)))


def decode_eip2537_g1(encoded: bytes) -> bytes:
    """The 48-byte compressed form of a 128-byte EIP-2537 G1 point (as JurorRegistered carries it)."""
    if not isinstance(encoded, (bytes, bytearray)) or len(encoded) != bls.G1_ENCODED_BYTES:
        raise JuryError(f"an EIP-2537 G1 point is {bls.G1_ENCODED_BYTES} bytes")
    if bls.is_infinity_encoding(encoded):
        raise bls.InfinityPointError("juror key is the point at infinity")
    half = bls.FP_ENCODED_BYTES
    if any(encoded[:16]) or any(encoded[half : half + 16]):
        raise JuryError("EIP-2537 Fp elements start with 16 zero bytes")
    point = (FQ(int.from_bytes(encoded[:half], "big")), FQ(int.from_bytes(encoded[half:], "big")), FQ.one())
    if not is_on_curve(point, _G1_B):
        raise JuryError("juror key is not a point of G1")
    return bytes(G1_to_pubkey(point))


# ---------------------------------------------------------------------------------------
# Registry and jury drawing


def build_juror_registry(events: Iterable[Any], at_block: int | None = None) -> list[JurorEntry]:
    """The active registry after chain-ordered JurorRegistered / JurorDeregistered events (others ignored),
    counting only events of blocks <= `at_block` when it is given (the registry "as of" that block)."""
    accounts: list[str] = []
    keys: dict[str, bytes] = {}
    for event in events:
        if at_block is not None and event.block_number > at_block:
            break
        args = event.args
        if event.name == "JurorRegistered":
            account, index, key = to_checksum_address(args["juror"]), int(args["index"]), bytes(args["publicKey"])
            if index != len(accounts):
                raise JuryError(f"registry events are incomplete: juror added at {index}, the list has {len(accounts)}")
            if keys.setdefault(account, key) != key:
                raise JuryError(f"{account} re-registered with another key (the contract forbids it)")
            accounts.append(account)
        elif event.name == "JurorDeregistered":
            account, index = to_checksum_address(args["juror"]), int(args["index"])
            if index >= len(accounts) or accounts[index] != account:
                raise JuryError(f"registry events are incomplete: {account} left index {index} it does not hold")
            last, moved = accounts.pop(), ZERO_ADDRESS
            if index < len(accounts):
                accounts[index] = moved = last
            if moved.lower() != str(args["moved"]).lower():
                raise JuryError(f"registry events are incomplete: the entry moved into {index} is not {args['moved']}")
    return [JurorEntry(i, a, keys[a]) for i, a in enumerate(accounts)]


def compute_dispute_id(subject: DisputeSubject) -> Hash32:
    """keccak256(abi.encode(DisputeSubject)) -- `Disputes.disputeIdOf`."""
    encoded = abi_encode(
        ["(uint8,uint256,uint64,address,uint8,uint16)"],
        [
            (
                subject.kind,
                subject.run_id,
                subject.round,
                to_canonical_address(subject.solver),
                subject.slot,
                subject.claim_nonce,
            )
        ],
    )
    return keccak256(encoded)


def compute_jury_seed(seed_block_hash: bytes | str, dispute_id: bytes | str) -> Hash32:
    """keccak256(abi.encode(blockhash(openedBlock + 1), disputeId))."""
    return keccak256(
        abi_encode(
            ["bytes32", "bytes32"],
            [to_hash32(seed_block_hash, "seed block hash"), to_hash32(dispute_id, "dispute id")],
        )
    )


def get_pool_index(seed: bytes | str, seat: int, pool_size: int, registry_size: int) -> int:
    """Registry index of pool seat `seat` (JurorRegistry.seatOf): the seat itself when the whole registry fits
    the pool, else an independent draw `compute_sample(seed, seat, registry_size)` (Sampling.sample)."""
    if registry_size <= pool_size:
        return seat
    return compute_sample(seed, seat, registry_size)


def draw_jury(
    snapshot: Sequence[JurorEntry],
    seed: bytes | str,
    jury_size: int,
    parties: Iterable[str],
    appeals: int,
) -> Jury:
    """The jury `drawJury` marks for this seed out of the registry `snapshot` (as of the dispute's block), when every
    pool juror's stake covers its reservations: the contract also passes over a juror slashed below them at the moment
    of the draw (not a function of the snapshot), so the `eligible` bitmap the chain records is the jury
    (`node.disputes.get_drawn_jury` reads it); this replay is what the drawer expects.

    `jury_size` is the size at the dispute's appeal level `appeals` (`get_appeal_jury_size`); `parties` are the
    challenger, the defendant and (for an attestation) the solver; the zero address stands for "none".
    """
    if not snapshot:
        raise JuryError("the juror registry was empty in the dispute's block: no jury can be drawn (NoJurors)")
    if jury_size < 1:
        raise JuryError(f"jury size must be positive, got {jury_size}")
    seed = to_hash32(seed, "jury seed")
    pool_size = jury_size + JURY_PARTY_SLACK
    n = len(snapshot)
    pool = tuple(snapshot[get_pool_index(seed, seat, pool_size, n)] for seat in range(min(n, pool_size)))
    excluded = {p.lower() for p in parties if p and p.lower() != ZERO_ADDRESS}
    eligible, seated = 0, set[str]()
    for seat, entry in enumerate(pool):
        account = entry.account.lower()
        if len(seated) == jury_size or account in excluded or account in seated:
            continue
        eligible |= 1 << seat
        seated.add(account)
    return Jury(seed, jury_size, pool_size, pool, eligible, appeals)


def check_drawn_jury(jury: Jury, record_seed: bytes, pool_size: int, seats: int, eligible: int) -> None:
    """Raise JuryError unless the jury matches what the chain recorded at `drawJury`."""
    recorded = (to_hash32(record_seed, "jury seed"), pool_size, seats, eligible)
    computed = (jury.seed, jury.pool_size, jury.seats, jury.eligible)
    if recorded != computed:
        raise JuryError(
            f"jury on chain (seed, pool, seats, eligible) = {recorded} differs from the registry replay "
            f"{computed}; the juror registry events are incomplete"
        )


def compute_eligible_aggregate(jury: Jury) -> bytes:
    """Sum of the eligible seats' keys, EIP-2537 encoded (what `drawJury` hashed)."""
    seats = jury.eligible_seats
    if not seats:
        raise JuryError("the jury has no eligible seat; the dispute is appealed at its deadline")
    return bls.compute_eip2537_g1(bls.compute_aggregate_public_key([jury.pool[s].public_key for s in seats]))


def get_non_signers(jury: Jury, signers: int) -> tuple[tuple[int, str, bytes], ...]:
    """(seat, account, G1 key) of every eligible seat not in `signers`, in increasing seat order."""
    if signers & ~jury.eligible:
        raise JuryError(f"signer bitmap {signers:#x} has seats outside the jury {jury.eligible:#x}")
    return tuple(
        (seat, to_checksum_address(jury.pool[seat].account), jury.pool[seat].public_key_g1)
        for seat in jury.eligible_seats
        if not signers >> seat & 1
    )


# ---------------------------------------------------------------------------------------
# Votes and verdicts


def compute_vote(
    key: bls.BlsKeyPair, disputes: str, chain_id: int, dispute_id: bytes, seat: int, juror: str, challenger_wins: bool
) -> Vote:
    """Sign the verdict message of a dispute."""
    message = bls.compute_verdict_message(disputes, chain_id, dispute_id, challenger_wins)
    signature = bls.compute_signature(key, message)
    return Vote(to_hash32(dispute_id), seat, to_checksum_address(juror), challenger_wins, signature)


def check_vote(vote: Vote, jury: Jury, disputes: str, chain_id: int, dispute_id: bytes) -> str | None:
    """Why `vote` cannot count for this jury (wrong dispute, seat not eligible, bad signature), or None."""
    if vote.dispute_id != to_hash32(dispute_id):
        return "vote is for another dispute"
    if not 0 <= vote.seat < len(jury.pool) or not jury.eligible >> vote.seat & 1:
        return f"seat {vote.seat} is not an eligible seat of this jury (eligible bitmap {jury.eligible:#x})"
    entry = jury.pool[vote.seat]
    if entry.account.lower() != vote.juror.lower():
        return f"seat {vote.seat} belongs to {entry.account}, not to {vote.juror}"
    message = bls.compute_verdict_message(disputes, chain_id, dispute_id, vote.challenger_wins)
    try:
        valid = bls.verify_signature(entry.public_key, message, vote.signature)
    except (bls.BlsError, ValueError, TypeError, AssertionError):
        valid = False
    if not valid:
        return f"signature does not verify under the registered key of seat {vote.seat}"
    return None


def assemble_verdict(jury: Jury, votes: Iterable[Vote]) -> Verdict | None:
    """The verdict of a quorum of matching (already checked) votes, or None while no outcome has a quorum.

    One vote per seat counts (the first seen); a jury of fewer than MIN_JURY_SIZE seats never has a
    verdict (it is appealed at its deadline). Should both outcomes reach a quorum -- only possible
    when some juror signed both -- the one with more votes wins and ties go to "attestation right".
    """
    if not jury.can_decide:
        return None
    by_seat: dict[int, Vote] = {}
    for vote in votes:
        # a vote counts for its seat's juror only: after an appeal, seat numbers belong to a new jury
        if jury.eligible >> vote.seat & 1 and jury.pool[vote.seat].account.lower() == vote.juror.lower():
            by_seat.setdefault(vote.seat, vote)
    best: Verdict | None = None
    for outcome in (False, True):
        chosen = sorted((v for v in by_seat.values() if v.challenger_wins == outcome), key=lambda v: v.seat)
        if len(chosen) < jury.quorum:
            continue
        signers = bls.compute_signer_bitmap([v.seat for v in chosen], len(jury.pool))
        verdict = Verdict(
            outcome,
            signers,
            bls.compute_eip2537_g2(bls.compute_aggregate_signature([v.signature for v in chosen])),
            compute_eligible_aggregate(jury),
            get_non_signers(jury, signers),
        )
        if best is None or verdict.signer_count > best.signer_count:
            best = verdict
    return best


# ---------------------------------------------------------------------------------------
# What anyone does next with a dispute (Disputes.Status: 1 Open, 2 JuryDrawn, 3 Decided, 4 Executed, 5 Expired)

STATUS_NAMES = {status.value: status.name.lower() for status in DisputeStatus}


def get_dispute_action(status: int, now: int, deadline: int, latest_block: int, opened_block: int) -> DisputeAction:
    """The next permissionless step of a dispute, from its status, the time and the chain height."""
    if status in (DisputeStatus.EXECUTED, DisputeStatus.EXPIRED):
        return "done"
    if status == DisputeStatus.DECIDED:
        return "execute"
    if status in (DisputeStatus.OPEN, DisputeStatus.JURY_DRAWN) and now >= deadline:
        return "expire"
    if status == DisputeStatus.OPEN:
        if latest_block <= opened_block:
            return "wait_seed_block"  # the seed block (opened + 1) is not mined yet
        if latest_block - (opened_block + 1) >= 255:
            return "wait"  # the seed block is out of reach of blockhash: the deadline's appeal re-opens it
        return "draw_jury"
    return "wait"
