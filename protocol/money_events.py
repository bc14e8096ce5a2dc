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
from protocol.history.records import RevenueFlow, RunHistory, ShareMint, Slash
from protocol.history.rounds import Round

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
    spans = get_membership(ordered, history.run_id, me, timestamps)
    seats_of: dict[int, list[Seat]] = {}
    for seat in seats:
        seats_of.setdefault(seat.round, []).append(seat)
    found: list[MoneyEvent] = []
    for rnd in history.rounds:
        found += get_round_money_events(history, rnd, me, spans, seats_of.get(rnd.index, ()), now)
    round_of = {d.dispute_id: rnd.index for rnd in history.rounds for d in rnd.disputes}
    for js in jury_seats:
        if js.dispute_id in round_of:  # else another run's dispute
            mine = [e for e in ordered if "disputeId" in e.args and to_hash_hex(e.args["disputeId"]) == js.dispute_id]
            found += filter(None, [get_jury_event(js, round_of[js.dispute_id], mine)])
    for s in history.slashes:
        if s.account == me:
            found.append(
                get_slash_event(s, [e for e in ordered if s.transaction_hash and _tx_of(e) == s.transaction_hash])
            )
    found += filter(None, [get_mint_event(m, me) for m in history.mints])
    found += filter(None, [get_revenue_event(f, me) for f in history.revenue])
    found += filter(None, [get_fault_reward_event(e, history.run_id, me) for e in ordered])
    return sort_money_report(found)


def sort_money_report(found: Iterable[MoneyEvent]) -> MoneyReport:
    """The report of these events, in the order an operator reads them (by block, round, key)."""
    ordered = sorted(found, key=lambda e: (e.block, e.round if e.round is not None else -1, e.key))
    return MoneyReport(tuple(ordered), get_current_misses(ordered))


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


# -- one round ------------------------------------------------------------------------------------------------

Span = tuple[int, int | None]
"""(joined at, left at or None): a time span of a solver's membership in the run."""


def get_membership(
    events: Iterable[EventLike], run_id: int, me: str, timestamps: Mapping[int, int], spans: Sequence[Span] = ()
) -> list[Span]:
    """The time spans of `me` in the run from SolverJoined / SolverLeft, continuing `spans` (those of earlier
    events) with `events` (chain order)."""
    out = list(spans)
    for e in events:
        if e.name not in ("SolverJoined", "SolverLeft") or e.args.get("runId") != run_id:
            continue
        if to_address(e.args["solver"]) != me:
            continue
        at = timestamps.get(e.block_number)
        if at is None:
            continue
        if e.name == "SolverJoined":
            out.append((at, None))
        elif out and out[-1][1] is None:
            out[-1] = (out[-1][0], at)
    return out


def get_round_money_events(
    history: RunHistory, rnd: Round, me: str, spans: Sequence[Span], seats: Iterable[Seat], now: int
) -> list[MoneyEvent]:
    """Everything of round `rnd` that touched `me`'s money: as a solver, a verifier (its `seats` of the round) and
    the bonds, jackpots and dispute money the round's records pay it. A pure function of the frozen round, the
    membership, the seats and which of the round's windows `now` has passed (`get_round_deadlines`): a reader that
    keeps the frozen rounds computes a round again only when one of these changed (`protocol.money_reporter`)."""
    return [
        *_solver_events(history, rnd, me, spans, now),
        *_verifier_events(history, rnd, me, seats, now),
        *_round_paid_events(rnd, me),
    ]


def get_round_deadlines(history: RunHistory, rnd: Round) -> tuple[int, int]:
    """The times at which `get_round_money_events` of the round may change with `now` alone: its commit window's
    end (a solver due in it missed it) and its attest window's end (a seat not attested was missed)."""
    commit_end = rnd.start_time + history.terms.commit_window
    return commit_end, commit_end + history.terms.attest_window


def _solver_events(history: RunHistory, rnd: Round, me: str, spans: Sequence[Span], now: int) -> list[MoneyEvent]:
    """The commitment, missed commit / open / reveal windows and fails on the solver's commitment of `rnd`.

    A solver is due in every round that started while it was a member (joined before the round's start, not left):
    a solver that joins during a round may sit it out (too little of the commit window left to train), so only a
    round it was a member for from the start counts as missed without a commitment.
    """
    commit_end, _ = get_round_deadlines(history, rnd)
    c = rnd.commitment_of(me)
    if c is None:
        due = any(joined <= rnd.start_time and (left is None or left > rnd.start_time) for joined, left in spans)
        if not (due and now >= commit_end):
            return []
        return [
            MoneyEvent(
                "missed", f"missed:commit:{rnd.index}", rnd.index, "commit window",
                f"no commitment before the commit window closed at {commit_end} (the node was down, late "
                "or training too slowly); the round earns nothing",
                block=rnd.start_block,
            )
        ]  # fmt: skip
    out = [
        MoneyEvent("committed", f"committed:{rnd.index}", rnd.index, "commitment", f"{c.tokens} tokens", block=c.block)
    ]
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


def _verifier_events(history: RunHistory, rnd: Round, me: str, seats: Iterable[Seat], now: int) -> list[MoneyEvent]:
    out: list[MoneyEvent] = []
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
    _, attest_end = get_round_deadlines(history, rnd)
    for seat in seats:
        c = rnd.commitment_of(to_address(seat.solver))
        if c is None or c.opening != "opened" or now < attest_end:
            continue  # nothing was there to attest (never opened: reported, the seat is void)
        if any(a.slot == seat.slot for a in rnd.attestations_of(c.solver)):
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


def _round_paid_events(rnd: Round, me: str) -> list[MoneyEvent]:
    """Bonds returned, forfeits returned, jackpots, claim and dispute bonds, dispute wins and juror rewards."""
    out: list[MoneyEvent] = []
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
    return out


# -- run-wide items: a jury seat, a slash, a mint, a revenue flow, a fault reward -----------------------------


DISPUTE_ENDS = ("VerdictSubmitted", "DisputeAppealed", "DisputeExpired", "DisputeExecuted")


def get_jury_event(js: JurySeat, round_index: int, dispute_events: Sequence[EventLike]) -> MoneyEvent | None:
    """A vote (the jury's verdict carries the seat's signature) or a missed vote (a verdict without it, or no
    verdict before the jury's deadline: appealed or expired) for a jury seat of the account, from the events of its
    dispute (chain order); None while the jury is still deciding. Once an event, always that event."""
    drawn = next(
        (i for i, e in enumerate(dispute_events) if e.name == "JuryDrawn" and int(e.args["appeals"]) == js.appeals),
        None,
    )
    end = next((e for e in dispute_events[drawn + 1 :] if e.name in DISPUTE_ENDS), None) if drawn is not None else None
    if end is None:
        return None
    key, where = f"jury:{js.dispute_id}:{js.appeals}:{js.seat}", js.dispute_id[:18]
    if end.name == "VerdictSubmitted" and int(end.args["signers"]) >> js.seat & 1:
        return MoneyEvent(
            "committed", key, round_index, "jury vote", f"signed the verdict of dispute {where}", block=end.block_number
        )
    why = (
        "the verdict was submitted without this juror's signature (no juror reward; a vote that came too late "
        "for the aggregate looks the same)"
        if end.name == "VerdictSubmitted"
        else "the jury gave no verdict before its deadline (the dispute was appealed or expired; the chain does "
        "not say which seats voted)"
    )
    return MoneyEvent(
        "missed", key, round_index, "jury vote",
        f"seat {js.seat} of the jury of dispute {where} (appeal {js.appeals}): {why}", block=end.block_number,
    )  # fmt: skip


def _tx_of(event: EventLike) -> str:
    return str(getattr(event, "transaction_hash", ""))


def get_slash_event(s: Slash, tx_events: Sequence[EventLike]) -> MoneyEvent:
    """The slash `s` of the account, named by the events of its transaction (`tx_events`, chain order)."""
    by = next(
        (f"{c}.{n}" for c, n in SLASHING_EVENTS if any(e.contract == c and e.name == n for e in tx_events)),
        next(
            (f"{e.contract}.{e.name}" for e in tx_events if e.contract != "StakeManager"), "StakeManager.StakeSlashed"
        ),
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


def get_mint_event(m: ShareMint, me: str) -> MoneyEvent | None:
    if m.holder != me:
        return None
    return MoneyEvent(
        "paid", f"minted:{m.transaction_hash}:{m.kind}:{m.round}", m.round, f"{m.kind} shares minted",
        shares=m.amount, block=m.block, transaction=m.transaction_hash,
    )  # fmt: skip


def get_revenue_event(f: RevenueFlow, me: str) -> MoneyEvent | None:
    if f.kind != "round reward" or f.account != me:
        return None
    return MoneyEvent(
        "paid", f"reward:{f.round}:{f.block}", f.round, "round reward", "credited with the shares",
        amount_wei=f.amount, block=f.block,
    )  # fmt: skip


def get_fault_reward_event(e: EventLike, run_id: int, me: str) -> MoneyEvent | None:
    if e.name != "FaultRewardClaimed" or e.args.get("runId") != run_id or to_address(e.args["prover"]) != me:
        return None
    return MoneyEvent(
        "paid", f"fault-reward:{e.args['round']}:{e.args['solver']}:{e.args['slot']}",
        int(e.args["round"]), "fault reward", f"a standing fail on {to_address(e.args['solver'])}",
        amount_wei=int(e.args["amount"]), block=e.block_number, transaction=_tx_of(e),
    )  # fmt: skip
