"""The records of one round of a run's history, and the rules that say which of its commitments count.

Hashes are 0x-hex strings, addresses checksummed, amounts in wei, times in seconds since the epoch (block
timestamps). `protocol.history.records` holds the run-wide records (`RunHistory`, shares, stakes, revenue, plants)
and re-exports these.

Which commitments count, per round (docs/planted-faults.md; the contracts' rules, each spelled once in
`protocol.types` and applied here to the folded seats):
- tally-accepted (`Round.is_tally_accepted`, `protocol.types.is_tally_accepted`): Verification's
  `passes >= needed && faults == 0` over the round's seats (`needed`: a strict majority of them; `passes`: standing
  passes and fails a jury overturned);
- pay (`Round.pay_of`, Plants.payOf): normal, planted (revealed as planted), or unpaid (planting on and the plant
  not revealed in its window, no anchor old enough, or the plant disproven by a jury);
- accepted (`Round.accepted`, the Δs of θ_(r+1); `protocol.types.is_commitment_accepted`, as the node client):
  tally-accepted and not unpaid (a planted one has no standing pass);
- counted paid (`Round.is_counted_paid`, Verification's `_isPaid`, `protocol.types.is_tally_paid`): attested,
  not marked unpaid (no anchor old enough while planting is on, the plant disproven, or its missing reveal reported:
  Plants.onUnpaid), and planted or tally-accepted;
- the pay denominator (`Round.paid_commitments`, Verification's paidCommitments): the counted-paid commitments (a
  missed reveal nobody reported stays counted: it is simply never minted);
- paid (`Round.paid`, claimSolverShares; `protocol.types.is_commitment_paid`, as the node client): counted paid and
  not unpaid under Plants.payOf; each mints solverBucket // paidCommitments, whatever tokens it declared.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from eth_utils import to_canonical_address

from protocol.types import (
    PlantPay,
    get_needed_seats,
    is_commitment_accepted,
    is_commitment_paid,
    is_tally_accepted,
    is_tally_paid,
)

AttestationStateName = Literal["attested", "challenged", "finalized", "upheld", "overturned", "voided"]
DisputeStatus = Literal["open", "jury drawn", "decided", "executed", "expired"]
ClaimStatusName = Literal["posted", "challenged", "upheld", "rejected", "settled"]


@dataclass(frozen=True)
class Commitment:
    round: int
    solver: str
    root: str
    delta_hash: str
    tokens: int
    num_segments: int
    block: int
    time: int | None
    opening: str = "none"
    """"opened", "unopened" (reported after the deadline, solver slashed), "void" (reported, seed never drawn)."""
    plant_eligible: bool = False
    """The round could be planted: the run plants and the solver's anchor is PLANT_DELAY_ROUNDS old (Plants)."""
    revealed: bool = False
    """The solver revealed the round's plant secret inside the reveal window (PlantRevealed)."""
    planted: bool = False
    """The reveal said the commitment was planted: its passes were overturned, its fails stand."""
    unrevealed_reported: bool = False
    """Reported after the reveal window without a reveal (UnrevealedSlashed): the solver slashed, the work unpaid."""
    disproven: bool = False
    """Revealed as planted, then found by a jury not to be the planted training (PlantDisproven, a plant dispute the
    challenger won): the solver slashed its solverMinStake, the work unpaid; its seats stay as the reveal left them."""


@dataclass(frozen=True)
class Seed:
    seed_base: str
    block_number: int
    verifier_count: int
    block: int
    time: int | None


@dataclass(frozen=True)
class Attestation:
    """One verifier seat's attestation and how it ended (state as the contracts name it)."""

    round: int
    solver: str
    slot: int
    verifier: str
    is_fail: bool
    sample_index: int | None
    segment_index: int | None
    block: int
    time: int | None
    state: AttestationStateName
    ended_block: int | None = None
    bond_returned: int = 0
    bond_forfeited: int = 0
    planted: bool = False
    """Made on a commitment its solver revealed as planted: a pass was overturned by the reveal (its bond and the
    plant penalty slashed from the verifier held by Plants until the round settles), a fail stands and earned
    `jackpot`."""
    jackpot: int = 0
    forfeit: int = 0
    """Of a pass on a planted commitment: its bond + penalty held by Plants (PlantForfeitHeld)."""
    forfeit_release: Literal["pool", "returned"] | None = None
    """How the held forfeit was released after settlement (PlantForfeitReleased): into the plant pool, or returned to
    the verifier because a jury disproved the plant; None while it is still held."""
    forfeit_block: int | None = None

    @property
    def standing(self) -> bool:
        """Counts in the round's checks (`totalChecks`) and earns shares: every state but overturned and voided."""
        return self.state not in ("overturned", "voided")

    @property
    def is_pass_counted(self) -> bool:
        """A standing pass (Verification's `passes`)."""
        return not self.is_fail and self.standing

    @property
    def is_fault_counted(self) -> bool:
        """A fault of the commitment (Verification's `faults`): a fail not overturned (a voided fail keeps
        blocking) or a pass overturned by a jury (a proven fault). A pass overturned by a plant is no fault of the
        solver: the plant made it wrong on purpose, and Verification leaves `faults` as it was."""
        if self.planted:
            return self.is_fail
        return self.is_fail != (self.state == "overturned")

    @property
    def is_cleared(self) -> bool:
        """A fail a jury overturned: the jury replayed its segment and found it right, so Verification counts it in
        `passes`, towards acceptance."""
        return self.is_fail and not self.planted and self.state == "overturned"

    @property
    def is_lazy_plant_pass(self) -> bool:
        """A pass on a planted commitment: wrong by construction, so its verifier did not replay (or replayed wrong)."""
        return self.planted and not self.is_fail

    @property
    def kind(self) -> str:
        return "fail" if self.is_fail else "pass"


@dataclass(frozen=True)
class Abstention:
    """A seat of an opened commitment its assigned verifier left unattested by attestEnd, reported
    (Verification.reportAbstention): the verifier slashed up to the round's attestation bond, all to the run's reward
    pool."""

    round: int
    solver: str
    slot: int
    verifier: str
    reporter: str
    taken: int
    block: int
    time: int | None


@dataclass(frozen=True)
class JurorReward:
    juror: str
    seat: int
    reward: int
    shares: int
    block: int


DisputeKind = Literal["attestation", "claim", "plant"]
"""What a dispute is about: an attestation, a θ claim, or a commitment revealed as planted (KIND_PLANT: is it the
planted training?)."""


@dataclass(frozen=True)
class Dispute:
    """A challenge (of an attestation, a θ claim or a plant), its jury, verdict and payout."""

    dispute_id: str
    kind: DisputeKind
    round: int
    challenger: str
    opened_block: int
    opened_time: int | None
    status: DisputeStatus
    solver: str | None = None
    slot: int | None = None
    segment_index: int | None = None  # of a plant dispute: the segment said not to replay as the planted training
    claim_nonce: int | None = None
    claimer: str | None = None
    jury_size: int | None = None  # seats of the latest jury drawn
    appeals: int = 0  # juries replaced after a silent deadline
    challenger_wins: bool | None = None
    signer_count: int = 0
    winner: str | None = None
    total: int = 0
    to_winner: int = 0
    bond_returned: int = 0
    reward_per_juror: int = 0
    to_pool: int = 0  # of an executed verdict; of an unresolved dispute: the challenger's fee
    ended_block: int | None = None
    juror_rewards: tuple[JurorReward, ...] = ()


@dataclass(frozen=True)
class ThetaClaim:
    round: int
    nonce: int
    claimer: str
    theta_hash: str
    bond: int
    block: int
    time: int | None
    status: ClaimStatusName
    bond_withdrawn: bool = False


@dataclass(frozen=True)
class Round:
    index: int
    start_time: int
    start_block: int
    theta_hash: str
    commitments: tuple[Commitment, ...] = ()
    seed: Seed | None = None
    attestations: tuple[Attestation, ...] = ()
    disputes: tuple[Dispute, ...] = ()
    claims: tuple[ThetaClaim, ...] = ()
    settled: bool = False
    next_theta_hash: str | None = None
    settled_block: int | None = None
    settled_time: int | None = None
    claimer: str | None = None
    pool_released: int = 0
    plants_on: bool = False
    """The round's pay follows the plant rules (`protocol.planting.is_planting_round`)."""
    abstentions: tuple[Abstention, ...] = ()
    verifiers_per_commitment: int = 0
    """The run's seats per commitment (its terms): with the seed's verifier count, the seats a commitment needs."""

    @property
    def needed(self) -> int:
        """Verification's `needed` (`get_needed_seats`): a strict majority of the round's seats."""
        count = self.seed.verifier_count if self.seed is not None else 0
        return get_needed_seats(self.verifiers_per_commitment, count)

    def seat_counts(self, solver: str) -> tuple[int, int]:
        """Verification's (passes, faults) of `solver`'s commitment this round: `passes` counts standing passes and
        cleared fails (a fail a jury overturned counts like a pass)."""
        attestations = self.attestations_of(solver)
        passes = sum(1 for a in attestations if a.is_pass_counted or a.is_cleared)
        faults = sum(1 for a in attestations if a.is_fault_counted)
        return passes, faults

    def commitment_of(self, solver: str) -> Commitment | None:
        return next((c for c in self.commitments if c.solver == solver), None)

    def attestations_of(self, solver: str) -> tuple[Attestation, ...]:
        return tuple(a for a in self.attestations if a.solver == solver)

    def is_tally_accepted(self, solver: str) -> bool:
        """Verification's rule (`is_tally_accepted`) over this round's seats of `solver`."""
        passes, faults = self.seat_counts(solver)
        return is_tally_accepted(passes, faults, self.needed)

    def pay_of(self, solver: str) -> PlantPay:
        """Plants.payOf: normal while the round cannot be planted; else unpaid without an anchor old enough or a
        reveal in the window (skipping either is no way out of planting) or once a jury disproved the plant, planted
        or normal as revealed."""
        if not self.plants_on:
            return PlantPay.NORMAL
        c = self.commitment_of(solver)
        if c is None or not c.plant_eligible or not c.revealed or c.disproven:
            return PlantPay.UNPAID
        return PlantPay.PLANTED if c.planted else PlantPay.NORMAL

    def is_accepted(self, solver: str) -> bool:
        """Whether the Δ of `solver` enters θ_(r+1) (`protocol.types.is_commitment_accepted`, as
        ProtocolClient.is_accepted): tally-accepted and not unpaid. A planted Δ never does (its passes were
        overturned), and neither does one whose plant went unrevealed."""
        passes, faults = self.seat_counts(solver)
        return is_commitment_accepted(passes, faults, self.needed, pay=self.pay_of(solver))

    def is_marked_unpaid(self, solver: str) -> bool:
        """Verification's `unpaid` flag of an attested commitment: no plant anchor old enough while the round can be
        planted (Plants.isPayBlocked, fixed at its first attestation), or Plants.onUnpaid since (the plant disproven
        by a jury, or its missing reveal reported). Attestations end before any reveal or report, so an attested
        commitment's status always exists when Plants marks it."""
        c = self.commitment_of(solver)
        if c is None or not self.plants_on:  # only a plantable round is revealed, reported or disproven
            return False
        return not c.plant_eligible or c.disproven or c.unrevealed_reported

    def tally_of(self, solver: str) -> tuple[int, int, int, bool, bool, bool] | None:
        """Verification's status of `solver`'s commitment as the pay rules read it: (passes, faults, needed,
        attested, planted, unpaid); None without a commitment."""
        c, attestations = self.commitment_of(solver), self.attestations_of(solver)
        if c is None:
            return None
        passes, faults = self.seat_counts(solver)
        attested = bool(attestations)
        planted = self.plants_on and c.planted and attested  # Verification._markPlanted: a status to mark
        return passes, faults, self.needed, attested, planted, self.is_marked_unpaid(solver)

    def is_counted_paid(self, solver: str) -> bool:
        """Verification's `_isPaid` (`protocol.types.is_tally_paid`): counted in the round's paidCommitments."""
        tally = self.tally_of(solver)
        return tally is not None and is_tally_paid(*tally)

    def is_paid(self, solver: str) -> bool:
        """Whether `claimSolverShares` pays the commitment (`protocol.types.is_commitment_paid`, as
        ProtocolClient.is_paid): counted paid (planted and attested at all: the planting solver is paid as if
        accepted; or tally-accepted) and not unpaid under Plants.payOf."""
        tally = self.tally_of(solver)
        return tally is not None and is_commitment_paid(*tally, pay=self.pay_of(solver))

    @property
    def accepted(self) -> tuple[str, ...]:
        """Solvers whose Δ enters θ_(r+1), sorted by address bytes (the outer step's order)."""
        return self._sorted(c.solver for c in self.commitments if self.is_accepted(c.solver))

    @property
    def paid(self) -> tuple[str, ...]:
        """Solvers whose commitment earns solver shares, sorted by address bytes."""
        return self._sorted(c.solver for c in self.commitments if self.is_paid(c.solver))

    @property
    def paid_commitments(self) -> int:
        """Verification's `paidCommitments`, the denominator of every solver's shares: the counted-paid commitments
        (a missed reveal nobody reported included: it simply never mints)."""
        return sum(1 for c in self.commitments if self.is_counted_paid(c.solver))

    @property
    def forfeits_held(self) -> int:
        """Forfeits of passes on planted commitments Plants still holds (released after settlement, by anyone)."""
        return sum(a.forfeit for a in self.attestations if a.forfeit and a.forfeit_release is None)

    @property
    def planted(self) -> tuple[Commitment, ...]:
        """The commitments revealed as planted (disproven ones included: the reveal's effects on the seats stand)."""
        return tuple(c for c in self.commitments if c.planted)

    @property
    def disproven_plants(self) -> tuple[Commitment, ...]:
        """The planted commitments a jury found not to be the planted training (slashed, unpaid; the forfeits of
        their passes go back to the verifiers)."""
        return tuple(c for c in self.commitments if c.disproven)

    @property
    def plant_disputes(self) -> tuple[Dispute, ...]:
        """The round's disputes of a plant (KIND_PLANT), whatever their outcome."""
        return tuple(d for d in self.disputes if d.kind == "plant")

    @property
    def lazy_plant_passes(self) -> tuple[Attestation, ...]:
        """Passes the plants caught: overturned by a reveal, no whistleblower needed."""
        return tuple(a for a in self.attestations if a.is_lazy_plant_pass)

    @property
    def jackpots(self) -> int:
        """Jackpots paid to the fails on this round's planted commitments (wei)."""
        return sum(a.jackpot for a in self.attestations)

    @staticmethod
    def _sorted(solvers: Iterable[str]) -> tuple[str, ...]:
        return tuple(sorted(solvers, key=to_canonical_address))

    @property
    def standing_checks(self) -> int:
        """Verification's `totalChecks`: attestations of the round that were not overturned or voided."""
        return sum(1 for a in self.attestations if a.standing)

    @property
    def juror_votes(self) -> int:
        """Disputes' `jurorVotes`: signatures of the round's executed verdicts."""
        return sum(d.signer_count for d in self.disputes if d.status == "executed")
