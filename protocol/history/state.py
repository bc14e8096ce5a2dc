"""The fold's state: one plain mutable builder that the event handlers fill in, then freeze.

`FoldState` holds everything folded so far for one run -- its creation, the rounds being built,
the share claims, disputes, stakes, slashes, ETH flows, share balances and the participants -- and
the small helpers every handler family uses (block time, participant roles, round lookup, "is
this event ours", attestation updates). The handlers (`registry.py`, `disputes.py`,
`accounts.py`, `plants.py`) are plain functions `handler(state, event, args)`; `fold.py` dispatches events to
them and freezes the state into a `RunHistory`. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from protocol.history.events import EventLike, HistoryError, get_tx_hash, share_token_contract
from protocol.history.records import (
    Abstention,
    Attestation,
    Commitment,
    Dispute,
    FaultName,
    PlantAnchor,
    RevenueFlow,
    Seed,
    ShareClaim,
    ShareMint,
    Slash,
    StakePoint,
    ThetaClaim,
)
from protocol.types import PlantTerms, RunTerms

# What a slash's fault key stands for: (fault, round, solver, slot or None for a solver fault).
FaultCause = tuple[FaultName, int, str, int | None]


@dataclass(frozen=True)
class RunCreation:
    """The run's RunCreated event, decoded."""

    creator: str
    token: str
    pool: int
    terms: RunTerms
    block: int


@dataclass
class RoundBuilder:
    """One round while it is being folded (frozen into `rounds.Round` at the end)."""

    index: int
    start_time: int
    start_block: int
    theta_hash: str
    commitments: list[Commitment] = field(default_factory=list)
    seed: Seed | None = None
    attestations: dict[tuple[str, int], Attestation] = field(default_factory=dict)
    disputes: list[str] = field(default_factory=list)
    claims: dict[int, ThetaClaim] = field(default_factory=dict)
    settled: bool = False
    next_theta_hash: str | None = None
    settled_block: int | None = None
    settled_time: int | None = None
    claimer: str | None = None
    pool_released: int = 0
    abstentions: list[Abstention] = field(default_factory=list)


class DisputeMap(dict):
    """`FoldState.disputes`: setting a dispute notes its round as touched (a verdict replaces the round's dispute)."""

    def __init__(self, touched: set[int]) -> None:
        super().__init__()
        self.touched = touched

    def __setitem__(self, key: str, value: Dispute) -> None:
        super().__setitem__(key, value)
        self.touched.add(value.round)


@dataclass
class FoldState:
    """Everything folded so far for run `run_id`, and the helpers the handlers share."""

    run_id: int
    timestamps: Mapping[int, int]
    created: RunCreation | None = None
    rounds: dict[int, RoundBuilder] = field(default_factory=dict)
    finished: bool = False
    claims: list[ShareClaim] = field(default_factory=list)
    fault_keys: dict[str, FaultCause] = field(default_factory=dict)
    disputes: dict[str, Dispute] = field(default_factory=dict)
    stake_state: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    stakes: list[StakePoint] = field(default_factory=list)
    slashes: list[Slash] = field(default_factory=list)
    revenue: list[RevenueFlow] = field(default_factory=list)
    mints: list[ShareMint] = field(default_factory=list)
    balances: dict[str, int] = field(default_factory=dict)
    supply: int = 0
    roles: dict[str, list[str]] = field(default_factory=dict)
    order: dict[str, list[str]] = field(default_factory=lambda: {"solver": [], "verifier": [], "juror": []})
    last_block: int = 0
    plant_terms: PlantTerms | None = None
    plant_pool: int = 0
    anchors: dict[str, PlantAnchor] = field(default_factory=dict)
    plant_seed_block: int = 0
    """The run seed block the terms fixed (0: set after the start, so rounds 0 and 1 are never planted)."""
    run_seed_base: str | None = None
    """Round 0's previous seed base (Plants.drawRunSeed), once drawn."""
    applying_plant: tuple[int, str] | None = None
    """(round, solver) of the last planted reveal: the jackpots that follow in its transaction carry no round."""
    touched: set[int] = field(default_factory=set)
    """Rounds whose builder changed since the last cached freeze (`HistoryFolder`): every change goes through
    `round()` or `start_round()`, which note it."""

    def __post_init__(self) -> None:
        self.disputes = DisputeMap(self.touched)

    @property
    def token_contract(self) -> str:
        """The contract name the run's share token's events come under."""
        return share_token_contract(self.run_id)

    def time(self, block: int) -> int | None:
        return self.timestamps.get(block)

    def role(self, address: str, role: str) -> None:
        """Note that `address` takes part in the run as `role` (first roles first; per-role join order)."""
        roles = self.roles.setdefault(address, [])
        if role not in roles:
            roles.append(role)
        if role in self.order and address not in self.order[role]:
            self.order[role].append(address)

    def round(self, index: int) -> RoundBuilder:
        """Round `index`'s builder, to change it (noted in `touched`)."""
        if index not in self.rounds:
            raise HistoryError(f"run {self.run_id}: event for round {index} before that round started")
        self.touched.add(index)
        return self.rounds[index]

    def start_round(self, builder: RoundBuilder) -> None:
        self.rounds[builder.index] = builder
        self.touched.add(builder.index)

    def ours(self, args: Mapping[str, Any]) -> bool:
        """The event carries this run's id (and the run was created)."""
        return args.get("runId") == self.run_id and self.created is not None

    def set_attestation(self, index: int, solver: str, slot: int, **changes: Any) -> Attestation:
        rnd = self.round(index)
        key = (solver, slot)
        if key not in rnd.attestations:
            raise HistoryError(f"run {self.run_id} round {index}: seat {solver}/{slot} changed before it attested")
        rnd.attestations[key] = replace(rnd.attestations[key], **changes)
        return rnd.attestations[key]

    def name_fault(self, key: str, cause: FaultCause, e: EventLike) -> None:
        """Say what a fault key's slash punished once the event naming it arrives: the contracts slash first, then
        emit their own event in the same transaction (a key shared by several causes, FAULT_SOLVER's, is named by
        the one that actually slashed). Later slashes under the key (none: StakeManager takes a key once) would carry
        `cause` too."""
        self.fault_keys[key] = cause
        tx = get_tx_hash(e)
        for i in range(len(self.slashes) - 1, -1, -1):
            x = self.slashes[i]
            if x.fault_key == key and (x.transaction_hash == tx if tx else x.block == e.block_number):
                self.slashes[i] = replace(x, fault=cause[0])
                return


# A handler folds one event (with its decoded args) into the state.
Handler = Callable[[FoldState, EventLike, Mapping[str, Any]], None]
