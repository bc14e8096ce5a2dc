"""What happened to one account's money in one run, and whether its node should say it is unhealthy.

An operator runs a node to earn; what it risks is its stake and its bonds. A node that was failed and slashed
10 ETH used to log nothing about it, and one that missed a window lost its round in silence. This module turns
the run's history -- folded from the contracts' events by the auditor's fold (`protocol.history.fold`), never
decoded a second time here -- into the list of `MoneyEvent`s of one account: committed, missed (a window it was
due in closed without its move), failed (a fail attestation on its commitment, or its attestation overturned),
slashed (amount, the contract event that did it, why) and paid (shares minted, round rewards, jackpots, bonds
returned, juror and fault rewards), and decides which missed windows still make the node unhealthy.

Pure: no I/O, no clock. The node side (node/money_watch.py) reads the events, block timestamps, the seats the
chain assigned to the account and its pending credits, and logs / exposes what this module returns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from protocol.history.events import EventLike, to_address, to_hash_hex
from protocol.history.fold import fold_run_history
from protocol.history.records import RunHistory, Slash

MoneyKind = Literal["committed", "missed", "failed", "slashed", "paid"]

SLASHING_EVENTS = (
    ("Verification", "SolverFaultProven"),
    ("RunRegistry", "UnopenedSlashed"),
    ("Plants", "UnrevealedSlashed"),
    ("Plants", "PlantDisproven"),
    ("Verification", "PlantApplied"),
    ("Verification", "AbstentionReported"),
    ("Disputes", "DisputeExecuted"),
)
"""The events that come with a StakeSlashed in its transaction and name what slashed, most specific first."""


UNATTRIBUTED_MISSES = frozenset({"jury vote"})
"""Misses the chain cannot pin on this node: a juror's vote reaches the chain only inside an aggregate, so a juror
that voted too late for the aggregate, or sat on a jury the others left silent, looks like one that never voted."""


@dataclass(frozen=True)
class Seat:
    """A verifier seat the chain assigned to the account (`assignedVerifier`): it was due to attest it."""

    round: int
    solver: str
    slot: int


@dataclass(frozen=True)
class JurySeat:
    """A seat the account held on a drawn jury (the node rebuilds the jury from JuryDrawn and the registry)."""

    dispute_id: str
    """0x-hex, as the fold names disputes."""
    appeals: int
    seat: int


@dataclass(frozen=True)
class MoneyEvent:
    """One thing that touched the account's money. `key` is unique and stable (a node logs each key once)."""

    kind: MoneyKind
    key: str
    round: int | None
    what: str
    """The sub-kind: "commit window", "attest window", "solver shares", "round reward", "bond returned", ..."""
    reason: str = ""
    amount_wei: int = 0
    shares: int = 0
    by: str = ""
    """For a slash: the contract event that slashed ("Verification.SolverFaultProven"); for a failure: the verifier."""
    block: int = 0
    transaction: str = ""

    def as_fields(self) -> dict[str, object]:
        """The event as structured log fields / JSON (empty fields left out)."""
        out: dict[str, object] = {"kind": self.kind, "round": self.round, "what": self.what}
        for name in ("reason", "amount_wei", "shares", "by", "block", "transaction"):
            value = getattr(self, name)
            if value:
                out[name] = value
        return out


@dataclass(frozen=True)
class MoneyReport:
    """Every money event of the account in the run, and the missed windows that still count against it."""

    events: tuple[MoneyEvent, ...]
    current_misses: tuple[MoneyEvent, ...]

    def of_kind(self, kind: MoneyKind) -> tuple[MoneyEvent, ...]:
        return tuple(e for e in self.events if e.kind == kind)

    @property
    def slashed_wei(self) -> int:
        return sum(e.amount_wei for e in self.of_kind("slashed"))

    @property
    def health_reasons(self) -> list[str]:
        """Why the node is unhealthy because of its money (empty: nothing missed recently)."""
        return [f"missed the {e.what} of round {e.round}: {e.reason}" for e in self.current_misses]


def compute_money_report(
    events: Iterable[EventLike],
    run_id: int,
    address: str,
    timestamps: Mapping[int, int],
    seats: Iterable[Seat],
    now: int,
    history: RunHistory | None = None,
    jury_seats: Iterable[JurySeat] = (),
) -> MoneyReport:
    """The money events of `address` in run `run_id` from the deployment's decoded events up to chain time `now`.

    `timestamps` maps the events' blocks to their timestamps (a solver's join time decides which rounds it was due
    in); `seats` are the verifier seats the chain assigned to the account in rounds whose attest window closed;
    `history` is the run's fold of these same events when the caller has it already; `jury_seats` the seats the
    account held on the juries drawn for the run's disputes.
    """
    ordered = sorted(events, key=lambda e: (e.block_number, e.log_index))
    history = history if history is not None else fold_run_history(ordered, run_id, timestamps)
    me = to_address(address)
    found: list[MoneyEvent] = []
    found += _solver_events(history, ordered, me, timestamps, now)
    found += _verifier_events(history, me, seats, now)
    found += _juror_events(history, ordered, jury_seats)
    found += [_slash_event(history, s, ordered) for s in history.slashes if s.account == me]
    found += _paid_events(history, ordered, me)
    found.sort(key=lambda e: (e.block, e.round if e.round is not None else -1, e.key))
    return MoneyReport(tuple(found), get_current_misses(found))


def get_current_misses(events: Sequence[MoneyEvent]) -> tuple[MoneyEvent, ...]:
    """The missed windows that still make the node unhealthy: those not followed by a later round in which the
    account did a duty (a commitment, an attestation or a jury vote) -- the node is back at work. A miss in the
    run's last round therefore stays until the node is restarted for another run: nothing later can clear it,
    and the operator should look. A missed jury vote is reported but never makes the node unhealthy
    (UNATTRIBUTED_MISSES)."""
    done = {e.round for e in events if e.kind == "committed" and e.round is not None}
    return tuple(
        e
        for e in events
        if e.kind == "missed"
        and e.what not in UNATTRIBUTED_MISSES
        and e.round is not None
        and not any(r > e.round for r in done)
    )


# -- solver ---------------------------------------------------------------------------------------------------


def _membership(
    events: Sequence[EventLike], run_id: int, me: str, timestamps: Mapping[int, int]
) -> list[tuple[int, int | None]]:
    """(joined at, left at or None) time spans of `me` in the run, from SolverJoined / SolverLeft."""
    spans: list[tuple[int, int | None]] = []
    for e in events:
        if e.name not in ("SolverJoined", "SolverLeft") or e.args.get("runId") != run_id:
            continue
        if to_address(e.args["solver"]) != me:
            continue
        at = timestamps.get(e.block_number)
        if at is None:
            continue
        if e.name == "SolverJoined":
            spans.append((at, None))
        elif spans and spans[-1][1] is None:
            spans[-1] = (spans[-1][0], at)
    return spans


def _solver_events(
    history: RunHistory, events: Sequence[EventLike], me: str, timestamps: Mapping[int, int], now: int
) -> list[MoneyEvent]:
    """Commitments, missed commit / open / reveal windows and fails on the solver's commitments.

    A solver is due in every round that started while it was a member (joined before the round's start, not left):
    a solver that joins during a round may sit it out (too little of the commit window left to train), so only a
    round it was a member for from the start counts as missed without a commitment.
    """
    terms = history.terms
    spans = _membership(events, history.run_id, me, timestamps)
    out: list[MoneyEvent] = []
    for rnd in history.rounds:
        commit_end = rnd.start_time + terms.commit_window
        c = rnd.commitment_of(me)
        if c is None:
            due = any(joined <= rnd.start_time and (left is None or left > rnd.start_time) for joined, left in spans)
            if due and now >= commit_end:
                out.append(
                    MoneyEvent(
                        "missed", f"missed:commit:{rnd.index}", rnd.index, "commit window",
                        f"no commitment before the commit window closed at {commit_end} (the node was down, late "
                        "or training too slowly); the round earns nothing",
                        block=rnd.start_block,
                    )
                )  # fmt: skip
            continue
        out.append(
            MoneyEvent(
                "committed", f"committed:{rnd.index}", rnd.index, "commitment", f"{c.tokens} tokens", block=c.block
            )
        )
        if c.opening == "unopened":
            out.append(
                MoneyEvent(
                    "missed", f"missed:open:{rnd.index}", rnd.index, "open window",
                    "the commitment was not opened on-chain before open_end and was reported unopened (slashed)",
                    block=c.block,
                )
            )  # fmt: skip
        if c.unrevealed_reported:
            out.append(
                MoneyEvent(
                    "missed", f"missed:reveal:{rnd.index}", rnd.index, "reveal window",
                    "the round's plant secret was not revealed before the reveal window closed (slashed, unpaid)",
                    block=c.block,
                )
            )  # fmt: skip
        for a in rnd.attestations_of(me):
            if a.is_fail:
                out.append(
                    MoneyEvent(
                        "failed", f"failed:{rnd.index}:{a.slot}", rnd.index, "commitment failed",
                        f"verifier {a.verifier} attested fail on seat {a.slot}: sample {a.sample_index} (segment "
                        f"{a.segment_index}) did not replay to the committed checkpoint; state {a.state}",
                        by=a.verifier, block=a.block,
                    )
                )  # fmt: skip
    return out


# -- verifier -------------------------------------------------------------------------------------------------


def _verifier_events(history: RunHistory, me: str, seats: Iterable[Seat], now: int) -> list[MoneyEvent]:
    out: list[MoneyEvent] = []
    for rnd in history.rounds:
        for a in rnd.attestations:
            if a.verifier != me:
                continue
            out.append(
                MoneyEvent(
                    "committed", f"attested:{rnd.index}:{a.solver}:{a.slot}", rnd.index,
                    "attestation", f"{a.kind} on {a.solver} seat {a.slot}; state {a.state}", block=a.block,
                )
            )  # fmt: skip
            if a.state == "overturned":
                out.append(
                    MoneyEvent(
                        "failed", f"overturned:{rnd.index}:{a.solver}:{a.slot}", rnd.index, "attestation overturned",
                        f"your {a.kind} on {a.solver} seat {a.slot} was overturned"
                        + (" by the solver's plant reveal (a pass on a planted fault)" if a.planted else " by a jury"),
                        block=a.ended_block or a.block,
                    )
                )  # fmt: skip
    by_round = {r.index: r for r in history.rounds}
    for seat in seats:
        seat_round = by_round.get(seat.round)
        if seat_round is None:
            continue
        attest_end = seat_round.start_time + history.terms.commit_window + history.terms.attest_window
        c = seat_round.commitment_of(to_address(seat.solver))
        if c is None or c.opening != "opened" or now < attest_end:
            continue  # nothing was there to attest (never opened: reported, the seat is void)
        if any(a.slot == seat.slot for a in seat_round.attestations_of(c.solver)):
            continue
        out.append(
            MoneyEvent(
                "missed", f"missed:attest:{seat.round}:{c.solver}:{seat.slot}", seat.round, "attest window",
                f"seat {seat.slot} of {c.solver} was assigned to this verifier and not attested before the attest "
                f"window closed at {attest_end}; the seat earns nothing",
                block=c.block,
            )
        )  # fmt: skip
    return out


# -- juror --------------------------------------------------------------------------------------------------


DISPUTE_ENDS = ("VerdictSubmitted", "DisputeAppealed", "DisputeExpired", "DisputeExecuted")


def _juror_events(history: RunHistory, events: Sequence[EventLike], jury_seats: Iterable[JurySeat]) -> list[MoneyEvent]:
    """A vote (the jury's verdict carries the seat's signature) or a missed vote (a verdict without it, or no
    verdict before the jury's deadline: appealed or expired) for each jury seat of the account."""
    round_of = {d.dispute_id: rnd.index for rnd in history.rounds for d in rnd.disputes}
    out: list[MoneyEvent] = []
    for js in jury_seats:
        if js.dispute_id not in round_of:
            continue  # another run's dispute
        mine = [e for e in events if "disputeId" in e.args and to_hash_hex(e.args["disputeId"]) == js.dispute_id]
        drawn = next(
            (i for i, e in enumerate(mine) if e.name == "JuryDrawn" and int(e.args["appeals"]) == js.appeals), None
        )
        end = next((e for e in mine[drawn + 1 :] if e.name in DISPUTE_ENDS), None) if drawn is not None else None
        if end is None:
            continue  # the jury is still deciding
        key, r, where = f"jury:{js.dispute_id}:{js.appeals}:{js.seat}", round_of[js.dispute_id], js.dispute_id[:18]
        if end.name == "VerdictSubmitted" and int(end.args["signers"]) >> js.seat & 1:
            out.append(
                MoneyEvent(
                    "committed", key, r, "jury vote", f"signed the verdict of dispute {where}", block=end.block_number
                )
            )
            continue
        why = (
            "the verdict was submitted without this juror's signature (no juror reward; a vote that came too late "
            "for the aggregate looks the same)"
            if end.name == "VerdictSubmitted"
            else "the jury gave no verdict before its deadline (the dispute was appealed or expired; the chain does "
            "not say which seats voted)"
        )
        out.append(
            MoneyEvent(
                "missed", key, r, "jury vote",
                f"seat {js.seat} of the jury of dispute {where} (appeal {js.appeals}): {why}", block=end.block_number,
            )
        )  # fmt: skip
    return out


# -- slashes --------------------------------------------------------------------------------------------------


def _slash_event(history: RunHistory, s: Slash, events: Sequence[EventLike]) -> MoneyEvent:
    in_tx = [e for e in events if s.transaction_hash and getattr(e, "transaction_hash", "") == s.transaction_hash]
    by = next(
        (f"{c}.{n}" for c, n in SLASHING_EVENTS if any(e.contract == c and e.name == n for e in in_tx)),
        next((f"{e.contract}.{e.name}" for e in in_tx if e.contract != "StakeManager"), "StakeManager.StakeSlashed"),
    )
    return MoneyEvent(
        "slashed", f"slashed:{s.fault_key}:{s.block}", s.round, s.fault, _slash_reason(s, by),
        amount_wei=s.amount, by=by, block=s.block, transaction=s.transaction_hash,
    )  # fmt: skip


def _slash_reason(s: Slash, by: str) -> str:
    if s.fault == "unrevealed plant":
        return "the round's plant secret was not revealed before the reveal window closed"
    if s.fault == "abstention":
        return f"seat {s.slot} of {s.solver}'s opened commitment was not attested by attestEnd (reported): the bond"
    if s.fault == "wrong attestation":
        if by.endswith("PlantApplied"):
            return f"passed {s.solver}'s planted (faulty by design) commitment seat {s.slot}: no replay, or a wrong one"
        return f"a jury overturned this verifier's attestation on {s.solver} seat {s.slot}"
    if by.endswith("UnopenedSlashed"):
        return "the commitment was not opened on-chain before open_end (reported unopened)"
    if by.endswith("PlantDisproven"):
        return "a jury found the revealed plant was not the planted training"
    if by.endswith("DisputeExecuted"):
        return "a jury found the commitment faulty (an overturned pass)"
    return "a fail attestation on the commitment stood: a sampled segment did not replay (or was not served)"


# -- paid -----------------------------------------------------------------------------------------------------


def _paid_events(history: RunHistory, events: Sequence[EventLike], me: str) -> list[MoneyEvent]:
    out: list[MoneyEvent] = []
    for m in history.mints:
        if m.holder == me:
            out.append(
                MoneyEvent(
                    "paid", f"minted:{m.transaction_hash}:{m.kind}:{m.round}", m.round, f"{m.kind} shares minted",
                    shares=m.amount, block=m.block, transaction=m.transaction_hash,
                )
            )  # fmt: skip
    for f in history.revenue:
        if f.kind == "round reward" and f.account == me:
            out.append(
                MoneyEvent(
                    "paid", f"reward:{f.round}:{f.block}", f.round, "round reward", "credited with the shares",
                    amount_wei=f.amount, block=f.block,
                )
            )  # fmt: skip
    for rnd in history.rounds:
        for a in rnd.attestations:
            if a.verifier != me:
                continue
            if a.bond_returned:
                out.append(
                    MoneyEvent(
                        "paid", f"bond:{rnd.index}:{a.solver}:{a.slot}", rnd.index, "attestation bond returned",
                        amount_wei=a.bond_returned, block=a.ended_block or a.block,
                    )
                )  # fmt: skip
            if a.forfeit and a.forfeit_release == "returned":
                out.append(
                    MoneyEvent(
                        "paid", f"forfeit:{rnd.index}:{a.solver}:{a.slot}", rnd.index, "forfeit returned",
                        f"{a.solver}'s plant was disproven: the pass was right, its bond and penalty come back",
                        amount_wei=a.forfeit, block=a.forfeit_block or a.block,
                    )
                )  # fmt: skip
            if a.jackpot:
                out.append(
                    MoneyEvent(
                        "paid", f"jackpot:{rnd.index}:{a.solver}:{a.slot}", rnd.index, "jackpot",
                        f"a fail on {a.solver}'s planted commitment", amount_wei=a.jackpot,
                        block=a.ended_block or a.block,
                    )
                )  # fmt: skip
        for claim in rnd.claims:
            if claim.claimer == me and claim.bond_withdrawn:
                out.append(
                    MoneyEvent(
                        "paid", f"claim-bond:{rnd.index}:{claim.nonce}", rnd.index, "claim bond returned",
                        amount_wei=claim.bond, block=claim.block,
                    )
                )  # fmt: skip
        for d in rnd.disputes:
            if d.bond_returned and (d.winner == me or (d.status == "expired" and d.challenger == me)):
                out.append(
                    MoneyEvent(
                        "paid", f"dispute-bond:{d.dispute_id}", rnd.index, "dispute bond returned",
                        amount_wei=d.bond_returned, block=d.ended_block or d.opened_block,
                    )
                )  # fmt: skip
            if d.winner == me and d.to_winner:
                out.append(
                    MoneyEvent(
                        "paid", f"dispute-win:{d.dispute_id}", rnd.index, "dispute won",
                        amount_wei=d.to_winner, block=d.ended_block or d.opened_block,
                    )
                )  # fmt: skip
            for j in d.juror_rewards:
                if j.juror == me:
                    out.append(
                        MoneyEvent(
                            "paid", f"juror:{d.dispute_id}:{j.seat}", rnd.index, "juror reward",
                            amount_wei=j.reward, shares=j.shares, block=j.block,
                        )
                    )  # fmt: skip
    for e in events:
        if (
            e.name == "FaultRewardClaimed"
            and e.args.get("runId") == history.run_id
            and to_address(e.args["prover"]) == me
        ):
            out.append(
                MoneyEvent(
                    "paid", f"fault-reward:{e.args['round']}:{e.args['solver']}:{e.args['slot']}",
                    int(e.args["round"]), "fault reward", f"a standing fail on {to_address(e.args['solver'])}",
                    amount_wei=int(e.args["amount"]),
                    block=e.block_number, transaction=str(getattr(e, "transaction_hash", "")),
                )
            )  # fmt: skip
    return out
