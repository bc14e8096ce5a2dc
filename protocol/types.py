"""The contracts' value types, once: every struct and enum the nodes, the auditor and the tests read.

Each dataclass mirrors one Solidity struct (or the named outputs of one view function); its fields
are the Solidity names in snake_case, in Solidity's order. The chain adapter decodes results *by
field name* (`from_fields`), never by position, so a renamed or reordered field fails loudly here
instead of silently shifting values (`decode_struct`, protocol/struct_fields.py). Hashes are `Hash32` bytes; hex
appears only at the edges (JSON, logs, the command line). The run's terms (`RunTerms`, `PlantTerms`) have their own
module, protocol/run_terms.py, and are re-exported here. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from eth_utils import to_checksum_address

from protocol.constants import RANDAO_LAG_BLOCKS, ROLE_SOLVER, ROLE_VERIFIER
from protocol.contract_constants import AttestationState, ClaimStatus, DisputeStatus, Opening, PlantPay
from protocol.hashing import Hash32, to_hash32
from protocol.run_terms import PlantTerms, RunTerms
from protocol.struct_fields import StructError, decode_struct, to_snake_case

__all__ = [
    "ROLE_SOLVER",
    "ROLE_VERIFIER",
    "AttestationInfo",
    "AttestationRef",
    "AttestationState",
    "Claim",
    "ClaimStatus",
    "Commitment",
    "CommitmentStatus",
    "DisputeRecord",
    "DisputeStatus",
    "DisputeTerms",
    "LeafData",
    "Opening",
    "PlantForfeit",
    "PlantPay",
    "PlantStatus",
    "PlantTerms",
    "RoundTimes",
    "RunTerms",
    "StructError",
    "decode_struct",
    "is_commitment_accepted",
    "is_commitment_paid",
    "is_tally_accepted",
    "is_tally_paid",
    "to_snake_case",
]


@dataclass(frozen=True)
class Commitment:
    """What a solver committed for a round (the chain stores only its hash; the event carries it)."""

    root: Hash32
    delta_hash: Hash32
    tokens: int

    def to_abi(self) -> tuple:
        return (self.root, self.delta_hash, self.tokens)


@dataclass(frozen=True)
class AttestationRef:
    """One verifier seat of one commitment."""

    run_id: int
    round: int
    solver: str
    slot: int

    def to_abi(self) -> tuple:
        return (self.run_id, self.round, to_checksum_address(self.solver), self.slot)

    @property
    def id(self) -> str:
        """The seat as text: RUN:ROUND:SOLVER:SLOT (lowercase address), the key nodes store it under."""
        return f"{self.run_id}:{self.round}:{self.solver.lower()}:{self.slot}"


@dataclass(frozen=True)
class LeafData:
    """The fields of a segment leaf that the commitment does not already fix."""

    start_hash: Hash32
    end_hash: Hash32
    sketch_hash: Hash32
    tokens: int

    def to_abi(self) -> tuple:
        return (self.start_hash, self.end_hash, self.sketch_hash, self.tokens)


@dataclass(frozen=True)
class RoundTimes:
    """RunRegistry.roundTimes: the current round, its window ends (seconds, chain time) and its seed block."""

    round: int
    start: int
    commit_end: int
    attest_end: int
    challenge_end: int
    finished: bool
    seed_block: int = 0
    """The round's seed block, fixed when the round started (after every commitment's block); the seed is the RANDAO
    value revealed in it (`randao_block`)."""
    open_end: int = 0
    """commit_end + attestWindow / 2: every commitment's sampled leaves must be opened on-chain before it."""

    @property
    def randao_block(self) -> int:
        """The block whose header (mixHash) `drawSeed` proves: RANDAO_LAG_BLOCKS after the seed block. The seed can
        be drawn once the chain is past it."""
        return get_randao_block(self.seed_block)


def get_randao_block(seed_block: int) -> int:
    """The block whose mixHash is the RANDAO value revealed in `seed_block` (Verification.drawSeed, Plants.drawRunSeed):
    a block's own mixHash is completed by its predecessor's proposer, who could still include commits or anchors."""
    return seed_block + RANDAO_LAG_BLOCKS


@dataclass(frozen=True)
class Claim:
    """RunRegistry.claimOf: the live θ_(r+1) claim of a round."""

    theta_hash: Hash32
    claimer: str
    window_end: int
    nonce: int
    status: ClaimStatus
    bond_paid: bool

    def __post_init__(self) -> None:
        object.__setattr__(self, "theta_hash", to_hash32(self.theta_hash, "claim theta hash"))
        object.__setattr__(self, "status", ClaimStatus(self.status))


@dataclass(frozen=True)
class DisputeTerms:
    """RunRegistry.disputeTerms."""

    challenge_bond: int
    dispute_timeout: int
    jury_size: int


@dataclass(frozen=True)
class PlantStatus:
    """Plants.plantOf: whether the commitment could be planted, whether its secret was revealed in the window,
    and whether it was planted."""

    eligible: bool
    revealed: bool
    planted: bool
    reported: bool


@dataclass(frozen=True)
class RunSeed:
    """Plants.runSeedOf: round 0's plant seed for a run whose terms were set before the start. `seed_block`: the
    block whose RANDAO value it is (0: no run seed, rounds 0 and 1 are never planted); `seed_base`: bytes12 of that
    value, left-aligned (zero until `drawn`)."""

    seed_block: int
    drawn: bool
    seed_base: bytes

    @property
    def randao_block(self) -> int:
        """The block whose header `drawRunSeed` proves (its mixHash: the RANDAO value revealed in the run seed
        block)."""
        return get_randao_block(self.seed_block)


@dataclass(frozen=True)
class JurorRecord:
    """JurorRegistry.jurors: list index + 1 while active, when a juror that left may release its stake reservation,
    and whether it holds one."""

    index_plus_one: int
    exit_at: int
    reserved: bool

    @property
    def active(self) -> bool:
        return self.index_plus_one != 0


@dataclass(frozen=True)
class FaultRewardRecord:
    """FaultRewards.faultRewardOf: the provers' part of a commitment's slash (wei), what was credited of it, when
    the fault was first proven (0: never), the bitmap of seats credited, and whether the rest went to the pool."""

    amount: int
    paid: int
    proven_at: int
    rewarded: int
    swept: bool


@dataclass(frozen=True)
class DisputeRecord:
    """Disputes.disputeOf."""

    challenger: str
    deadline: int
    opened_block: int
    status: DisputeStatus
    kind: int
    appeals: int
    pool_size: int
    seats: int
    eligible: int
    signers: int
    claimed: int
    challenger_wins: bool
    reward_per_juror: int
    aggregate_hash: Hash32
    jury_seed: Hash32

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", DisputeStatus(self.status))
        object.__setattr__(self, "challenger_wins", bool(self.challenger_wins))
        object.__setattr__(self, "aggregate_hash", to_hash32(self.aggregate_hash, "dispute aggregate hash"))
        object.__setattr__(self, "jury_seed", to_hash32(self.jury_seed, "jury seed"))

    @property
    def is_closed(self) -> bool:
        return self.status in (DisputeStatus.EXECUTED, DisputeStatus.EXPIRED)


@dataclass(frozen=True)
class AttestationInfo:
    """Verification.attestationOf."""

    state: AttestationState
    is_fail: bool
    shares_minted: bool
    sample_index: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "state", AttestationState(self.state))


@dataclass(frozen=True)
class CommitmentStatus:
    """Verification.commitmentStatusOf: the tally of one commitment's seats (`passes`: standing passes and fails a jury
    overturned, which count like passes; `needed`: the passes that accept it), whether it was attested at all, revealed
    as planted or found unpaid by Plants (no plant anchor old enough, plant disproven, reveal reported missing)."""

    round_plus_one: int
    passes: int
    faults: int
    solver_minted: bool
    live: bool
    attested: bool
    planted: bool
    unpaid: bool
    needed: int
    seats: int

    @property
    def accepted(self) -> bool:
        """Tally-accepted (`is_tally_accepted`): the plant pay is another contract's (`is_commitment_accepted`)."""
        return is_tally_accepted(self.passes, self.faults, self.needed)

    @property
    def paid(self) -> bool:
        """Counted in the round's `paidCommitments` (Verification._isPaid)."""
        return is_tally_paid(self.passes, self.faults, self.needed, self.attested, self.planted, self.unpaid)


@dataclass(frozen=True)
class PlantForfeit:
    """Plants.forfeitOf: the bond and penalty of a pass on a planted commitment held until its round settles (zero
    once released, or if none)."""

    verifier: str
    amount: int


def get_needed_seats(verifiers_per_commitment: int, verifier_count: int) -> int:
    """Verification's `needed`: the standing passes and cleared fails that accept a commitment, a strict majority of
    the round's seats (min(verifiers per commitment, verifiers listed at the seed block) // 2 + 1)."""
    return min(verifiers_per_commitment, verifier_count) // 2 + 1


def is_tally_accepted(passes: int, faults: int, needed: int) -> bool:
    """Verification's acceptance rule over a commitment's seats alone: passes -- standing passes and *cleared* fails
    (fails a jury overturned: the jury replayed the named segment and found it right) -- on a strict majority of the
    seats (`needed`, `get_needed_seats`), and no standing fault. A seat nobody attested counts against acceptance, so
    late honest verifiers never let a minority of seats accept work (issue 37).

    # INVARIANT: the one Python spelling of Verification's `needed != 0 && passes >= needed && faults == 0` (a status
    never opened has needed == 0 and is never accepted). Whether the Δ enters θ_(r+1) also depends on the plant pay:
    `is_commitment_accepted`.
    """
    return needed > 0 and passes >= needed and faults == 0


def is_tally_paid(passes: int, faults: int, needed: int, attested: bool, planted: bool, unpaid: bool) -> bool:
    """Verification's pay rule (`_isPaid`): counted in the round's `paidCommitments`, the denominator of every solver's
    shares. Not found unpaid by Plants, and either revealed as planted and attested (its passes were overturned by the
    reveal, its fails stand) or tally-accepted. Every paid commitment of a round earns the same solver shares,
    bucket // paidCommitments; the tokens a solver declares play no part.

    # INVARIANT: the one Python spelling of `_isPaid` (`CommitmentStatus.paid`, the history's `Round.is_counted_paid`).
    Whether `claimSolverShares` mints also depends on Plants.payOf: `is_commitment_paid`.
    """
    if unpaid:
        return False
    if planted:
        return attested
    return is_tally_accepted(passes, faults, needed)


def is_commitment_accepted(passes: int, faults: int, needed: int, *, pay: PlantPay) -> bool:
    """Whether a commitment's Δ enters θ_(r+1): tally-accepted (`is_tally_accepted`) and not unpaid under the plant
    rules (Plants.payOf). A planted commitment is never accepted (the reveal overturned its passes, so its tally is not
    accepted), and neither is one whose plant went unrevealed, had no anchor old enough or was disproven.

    # INVARIANT: the one composition of Verification's tally and Plants.payOf for acceptance: the node client
    (`ProtocolClient.is_accepted`, from the chain's views) and the history fold (`Round.is_accepted`, from events)
    both call it, so the coordinator's θ_(r+1), the e-chain links and the auditor agree on which Δs count.
    """
    return pay != PlantPay.UNPAID and is_tally_accepted(passes, faults, needed)


def is_commitment_paid(
    passes: int, faults: int, needed: int, attested: bool, planted: bool, unpaid: bool, *, pay: PlantPay
) -> bool:
    """Whether `claimSolverShares` pays a commitment: counted paid (`is_tally_paid`: planted and attested, or
    tally-accepted, and not marked unpaid) and not unpaid under Plants.payOf. A missed reveal nobody reported stays
    counted in `paidCommitments` (the contract marks nothing) yet is never minted: `pay` is UNPAID.

    # INVARIANT: the one composition of `_isPaid` and Plants.payOf for pay: the node client (`ProtocolClient.is_paid`)
    and the history fold (`Round.is_paid`) both call it.
    """
    return pay != PlantPay.UNPAID and is_tally_paid(passes, faults, needed, attested, planted, unpaid)
