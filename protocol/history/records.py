"""The typed, frozen records of a run's history (what `protocol.history.fold.fold_run_history` returns).

Hashes are 0x-hex strings, addresses checksummed, amounts in wei, times in seconds since the epoch
(block timestamps), so a `RunHistory` serialises to the auditor's JSON as it is -- but for the run's
on-chain terms, `RunHistory.terms`, which is `protocol.types.RunTerms` (hashes as bytes, hex at the
edges), and its plant terms, `PlantHistory.terms` (`protocol.types.PlantTerms`).

The run-wide records live here (shares, stakes, slashes, revenue, participants, plants, the run itself); one round's
records and the rules of which commitments count (accepted, paid) are in `protocol.history.rounds`, re-exported here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Generic, Literal, TypeVar, overload

from protocol.history.rounds import (
    Abstention,
    Attestation,
    AttestationStateName,
    ClaimStatusName,
    Commitment,
    Dispute,
    DisputeKind,
    DisputeStatus,
    JurorReward,
    Round,
    Seed,
    ThetaClaim,
)
from protocol.types import PlantTerms, RunTerms

__all__ = [
    "Abstention",
    "Attestation",
    "AttestationStateName",
    "ClaimStatusName",
    "Commitment",
    "Dispute",
    "DisputeKind",
    "DisputeStatus",
    "FaultName",
    "JurorReward",
    "Participant",
    "PlantAnchor",
    "PlantHistory",
    "RevenueFlow",
    "RevenueKind",
    "Round",
    "RunHistory",
    "RunSummary",
    "Seed",
    "ShareClaim",
    "ShareKind",
    "ShareMint",
    "Slash",
    "StakeChange",
    "StakePoint",
    "ThetaClaim",
]

ShareKind = Literal["solver", "verifier", "juror"]
StakeChange = Literal["deposit", "unbond", "withdraw", "slash"]
FaultName = Literal["solver fault", "wrong attestation", "unrevealed plant", "abstention"]
RevenueKind = Literal[
    "reward pool",
    "pool funded",
    "pool released",
    "round reward",
    "round release swept",
    "revenue paid",
    "revenue withdrawn",
    "unowned swept",
]
"""Flows of a run's ETH: "pool released" sets a settled round's part aside for its contributors, "round reward" is
one contributor's credit of it (with its shares), "round release swept" what nobody claimed in time."""


@dataclass(frozen=True)
class ShareClaim:
    """A contribution's shares as the contract that minted them reported them."""

    round: int
    kind: ShareKind
    holder: str
    amount: int
    contribution: str
    block: int
    transaction_hash: str
    solver: str | None = None
    slot: int | None = None
    dispute_id: str | None = None
    seat: int | None = None


@dataclass(frozen=True)
class ShareMint:
    """ModelShares' `SharesMinted` record of one mint."""

    round: int
    kind: ShareKind
    holder: str
    amount: int
    minted_in_round: int
    block: int
    time: int | None
    transaction_hash: str


@dataclass(frozen=True)
class StakePoint:
    """A participant's stake in one role right after a stake event."""

    account: str
    role: str
    block: int
    time: int | None
    bonded: int
    unbonding: int
    change: StakeChange
    amount: int


@dataclass(frozen=True)
class Slash:
    account: str
    role: str
    amount: int
    requested: int
    fault: FaultName
    round: int
    solver: str
    slot: int | None
    fault_key: str
    block: int
    time: int | None
    transaction_hash: str


@dataclass(frozen=True)
class RevenueFlow:
    kind: RevenueKind
    amount: int
    account: str | None
    round: int | None
    block: int
    time: int | None


@dataclass(frozen=True)
class Participant:
    address: str
    label: str
    roles: tuple[str, ...]


@dataclass(frozen=True)
class PlantAnchor:
    """A solver's registered chain anchor (Plants.setAnchor): its rounds from `round` + PLANT_DELAY_ROUNDS on can
    be planted, and must be revealed to be paid; from round 0 if it was registered before the start (`early`) and
    the run's terms were too."""

    solver: str
    anchor: str
    round: int
    block: int
    early: bool = False


@dataclass(frozen=True)
class PlantHistory:
    """A run's planted faults (the Plants contract): its terms (None: never set, so nothing is planted), the plant
    pool after the last event, and every solver's anchor."""

    terms: PlantTerms | None = None
    pool: int = 0
    anchors: tuple[PlantAnchor, ...] = ()
    seed_block: int = 0
    """The run seed block (0: the terms were set after the start, so rounds 0 and 1 are never planted)."""
    run_seed_base: str | None = None
    """Round 0's previous seed base once drawn (Plants.drawRunSeed)."""

    @property
    def rate_bps(self) -> int:
        return 0 if self.terms is None else self.terms.rate_bps

    def anchor_of(self, solver: str) -> PlantAnchor | None:
        return next((a for a in self.anchors if a.solver == solver), None)


T = TypeVar("T")


class FrozenPrefix(Sequence[T], Generic[T]):
    """The first `length` items of a list the fold only ever appends to, frozen without copying them.

    A kept fold (`protocol.history.fold.HistoryFolder`) freezes the history on every new block; copying the run's
    share claims, mints and revenue flows into new tuples each time made a block's freeze grow with the run (issue
    39). Since the fold never edits, removes or reorders what it appended, the list's first `length` items never
    change, and this view of them is as frozen as a tuple: it compares, hashes and prints as the tuple of its items.

    # INVARIANT: `items` is only ever appended to (`FoldState.claims`, `.mints`, `.revenue`; not `.slashes`, whose
    # records `FoldState.name_fault` edits in place).
    """

    __slots__ = ("_items", "_length")

    def __init__(self, items: list[T], length: int | None = None) -> None:
        self._items = items
        self._length = len(items) if length is None else length

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...

    def __getitem__(self, index: int | slice) -> T | tuple[T, ...]:
        if isinstance(index, slice):
            return tuple(self._items[i] for i in range(*index.indices(self._length)))  # the slice alone, no copy
        if not -self._length <= index < self._length:
            raise IndexError("FrozenPrefix index out of range")
        return self._items[index % self._length]

    def __iter__(self) -> Iterator[T]:
        return islice(self._items, self._length)

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, FrozenPrefix | tuple):
            return len(other) == self._length and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))


@dataclass(frozen=True)
class RunHistory:
    run_id: int
    creator: str
    share_token: str
    reward_pool: int
    terms: RunTerms
    created_block: int
    created_time: int | None
    rounds: tuple[Round, ...]
    finished: bool
    share_claims: Sequence[ShareClaim]
    """A tuple, or a `FrozenPrefix` (a kept fold's): the same to every reader; so are `mints` and `revenue`."""
    mints: Sequence[ShareMint]
    share_balances: tuple[tuple[str, int], ...]
    total_supply: int
    stakes: tuple[StakePoint, ...]
    slashes: tuple[Slash, ...]
    revenue: Sequence[RevenueFlow]
    participants: tuple[Participant, ...]
    last_block: int
    plants: PlantHistory = field(default_factory=PlantHistory)

    @property
    def settled_rounds(self) -> tuple[Round, ...]:
        return tuple(r for r in self.rounds if r.settled)

    @property
    def current_round(self) -> int:
        """The round open now (== max_rounds once finished)."""
        return len(self.settled_rounds)

    def label_of(self, address: str | None) -> str:
        if not address:
            return ""
        found = next((p.label for p in self.participants if p.address == address), None)
        return found or address[:10]

    def role_of(self, address: str) -> str:
        found = next((p for p in self.participants if p.address == address), None)
        return found.roles[0] if found and found.roles else "account"

    @property
    def balances(self) -> dict[str, int]:
        return dict(self.share_balances)

    def revenue_total(self, kind: str) -> int:
        return sum(f.amount for f in self.revenue if f.kind == kind)

    @property
    def jackpots(self) -> dict[str, int]:
        """Jackpots earned per verifier (wei), by fails on planted commitments."""
        out: dict[str, int] = {}
        for rnd in self.rounds:
            for a in rnd.attestations:
                if a.jackpot:
                    out[a.verifier] = out.get(a.verifier, 0) + a.jackpot
        return out


@dataclass(frozen=True)
class RunSummary:
    """One line of `gradledger audit` without --run."""

    run_id: int
    creator: str
    created_block: int
    max_rounds: int
    rounds_settled: int
    finished: bool
