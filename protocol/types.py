"""The contracts' value types, once: every struct and enum the nodes, the auditor and the tests read.

Each dataclass mirrors one Solidity struct (or the named outputs of one view function); its fields
are the Solidity names in snake_case, in Solidity's order. The chain adapter decodes results *by
field name* (`from_fields`), never by position, so a renamed or reordered field fails loudly here
instead of silently shifting values. Hashes are `Hash32` bytes; hex appears only at the edges (JSON,
logs, the command line). Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import astuple, dataclass, fields
from enum import IntEnum
from typing import Any, TypeVar

from eth_utils import to_checksum_address

from protocol.constants import BPS_DENOMINATOR, RANDAO_LAG_BLOCKS, ROLE_SOLVER, ROLE_VERIFIER
from protocol.errors import GradledgerError
from protocol.hashing import Hash32, to_hash32

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
    "PlantForfeit",
    "PlantPay",
    "PlantStatus",
    "PlantTerms",
    "RoundTimes",
    "RunTerms",
    "StructError",
    "is_commitment_accepted",
    "is_commitment_paid",
]


class StructError(GradledgerError):
    """A value from the chain does not have the fields of the struct it should be."""


def to_snake_case(name: str) -> str:
    """Solidity's camelCase field name as the Python attribute: `theta0Hash` -> `theta0_hash`."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


T = TypeVar("T")


def decode_struct(cls: type[T], values: Mapping[str, Any]) -> T:
    """Build dataclass `cls` from a mapping of Solidity field names; every field must be present, no other."""
    wanted = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    given = {to_snake_case(k): v for k, v in values.items()}
    missing, extra = sorted(set(wanted) - set(given)), sorted(set(given) - set(wanted))
    if missing or extra:
        raise StructError(
            f"{cls.__name__}: the chain returned fields {sorted(values)}; missing {missing}, unexpected {extra} "
            "(the contracts and protocol/types.py disagree: update the dataclass to the Solidity struct)"
        )
    return cls(**{name: given[name] for name in wanted})


class AttestationState(IntEnum):
    NONE = 0
    ATTESTED = 1
    CHALLENGED = 2
    FINALIZED = 3
    UPHELD = 4
    OVERTURNED = 5
    VOIDED = 6  # no verdict after every appeal: earns nothing; a voided pass stops counting
    ABSTAINED = 7  # not attested by attestEnd and reported (reportAbstention): its verifier charged the bond


class Opening(IntEnum):
    """IRunRegistry.Opening: whether a commitment's sampled leaves were opened on-chain in time."""

    NONE = 0
    OPENED = 1
    UNOPENED = 2


class ClaimStatus(IntEnum):
    NONE = 0
    POSTED = 1
    CHALLENGED = 2
    UPHELD = 3
    SETTLED = 4


class DisputeStatus(IntEnum):
    NONE = 0
    OPEN = 1
    JURY_DRAWN = 2
    DECIDED = 3
    EXECUTED = 4
    EXPIRED = 5


@dataclass(frozen=True)
class RunTerms:
    """The on-chain `RunConfig` struct a run is created with (RunRegistry.createRun, event RunCreated).

    Hashes in bytes, amounts in wei, windows in seconds. `config_hash`, `dataset_root`, `inner_steps` and
    `steps_per_segment` mirror the published run config; `protocol.adapters.runs.load_run_context` and
    the auditor check them with `protocol.config.verify_run_terms`.
    """

    config_hash: Hash32
    dataset_root: Hash32
    theta0_hash: Hash32
    inner_steps: int
    steps_per_segment: int
    samples_per_commitment: int
    verifiers_per_commitment: int
    jury_size: int
    commit_window: int
    attest_window: int
    challenge_window: int
    dispute_timeout: int
    solver_min_stake: int
    verifier_min_stake: int
    attestation_bond: int
    challenge_bond: int
    solver_share_bps: int
    verifier_share_bps: int
    juror_share_bps: int
    shares_per_round: int
    revenue_release_period: int
    max_rounds: int
    start_delay: int = 0
    """Seconds from createRun to round 0's start (<= MAX_START_DELAY): nodes start, solvers join and anchor their
    plant chains before round 0 (docs/contracts.md, "Start delay"). The struct's last field, so `to_abi` keeps its
    order."""

    def __post_init__(self) -> None:
        for name in ("config_hash", "dataset_root", "theta0_hash"):
            object.__setattr__(self, name, to_hash32(getattr(self, name), f"run terms {name}"))

    @classmethod
    def from_fields(cls, values: Mapping[str, Any]) -> RunTerms:
        return decode_struct(cls, values)

    def to_abi(self) -> tuple:
        return astuple(self)

    @property
    def num_segments(self) -> int:
        return self.inner_steps // self.steps_per_segment

    @property
    def solver_bucket(self) -> int:
        """Solver shares of one round (the RunConfig split, floored as Solidity does)."""
        return self.shares_per_round * self.solver_share_bps // BPS_DENOMINATOR

    @property
    def verifier_bucket(self) -> int:
        return self.shares_per_round * self.verifier_share_bps // BPS_DENOMINATOR

    @property
    def juror_bucket(self) -> int:
        return self.shares_per_round * self.juror_share_bps // BPS_DENOMINATOR


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


class PlantPay(IntEnum):
    """IPlants.Pay: how a commitment is paid under the plant rules."""

    NORMAL = 0  # planting off, rounds before the first plant, or revealed not planted: the usual rules
    PLANTED = 1  # revealed planted: paid as accepted (if attested at all); its Δ is not accepted
    UNPAID = 2  # plant not revealed in its window, disproven by a jury, or no anchor old enough while planting is on


@dataclass(frozen=True)
class PlantStatus:
    """Plants.plantOf: whether the commitment could be planted, whether its secret was revealed in the window,
    and whether it was planted."""

    eligible: bool
    revealed: bool
    planted: bool
    reported: bool


@dataclass(frozen=True)
class PlantTerms:
    """Plants.termsOf: planted commitments per 10,000, the jackpot of a fail and the penalty of a pass on a planted
    commitment (wei). The pool a run starts with is the msg.value of `Plants.setTerms`."""

    rate_bps: int
    jackpot: int
    penalty: int


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
        return is_commitment_accepted(self.passes, self.faults, self.needed)

    @property
    def paid(self) -> bool:
        """Counted in the round's `paidCommitments` (Verification._isPaid)."""
        return is_commitment_paid(self.passes, self.faults, self.needed, self.attested, self.planted, self.unpaid)


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


def is_commitment_accepted(passes: int, faults: int, needed: int) -> bool:
    """Verification's acceptance rule: passes -- standing passes and *cleared* fails (fails a jury overturned: the jury
    replayed the named segment and found it right) -- on a strict majority of the seats (`needed`, `get_needed_seats`),
    and no standing fault. A seat nobody attested counts against acceptance, so late honest verifiers never let a
    minority of seats accept work (issue 37).

    # INVARIANT: the one Python spelling of Verification's `needed != 0 && passes >= needed && faults == 0` (a status
    never opened has needed == 0 and is never accepted); the node client, the history fold and the auditor all call
    this, so they cannot disagree about which work is paid.
    """
    return needed > 0 and passes >= needed and faults == 0


def is_commitment_paid(passes: int, faults: int, needed: int, attested: bool, planted: bool, unpaid: bool) -> bool:
    """Verification's pay rule (`_isPaid`): not found unpaid by Plants, and either revealed as planted and attested
    (its passes were overturned by the reveal, its fails stand) or accepted. Every paid commitment of a round earns
    the same solver shares, bucket // paidCommitments; the tokens a solver declares play no part.

    # INVARIANT: the one Python spelling of `_isPaid`: the node client (`CommitmentStatus.paid`) and the history
    fold (`Round.is_counted_paid`) both call it.
    """
    if unpaid:
        return False
    if planted:
        return attested
    return is_commitment_accepted(passes, faults, needed)
