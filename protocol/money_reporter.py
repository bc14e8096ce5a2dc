"""`compute_money_report`, kept between reads: a node's money watch pays per new block for what changed, not the run.

The money watch (node/money_watch.py) asks on every new block what touched its account's money. Computed from the
whole run each time (`protocol.money_events.compute_money_report`), that grew with the run's length: 32 ms a block
for a verifier at round 300 of a 16-solver run, quadratic over the run (issue 39). `MoneyReporter` keeps what it
computed and, on each `update`, computes again only

- the rounds whose frozen record changed (a kept fold, `protocol.history.fold.HistoryFolder`, freezes a round again
  only when it changed, so an unchanged round is the same object), whose seats were read since, or whose commit or
  attest window `now` has just passed (`get_round_deadlines`); every round when the membership changed;
- the run-wide records appended since (mints, revenue flows and slashes: the fold appends to them, and names a slash
  in place only by a later event of the same transaction, so a slash taken with its whole block is final) and the new
  events (membership, fault rewards, the events of each transaction and dispute);
- the jury seats whose jury has not ended yet.

Each piece is computed by the same function `compute_money_report` composes (`get_round_money_events`,
`get_slash_event`, ...): one rule, two schedules. Pure: no I/O, no clock.

# INVARIANT: after `update` with the events so far (chain order, in whole blocks) and the fold of them, `report()`
# equals `compute_money_report` of all of them with the same seats, jury seats and `now`
# (tests/protocol/test_money_reporter.py); a reorg is handled by the caller with `reset()` and one update of what
# stands.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from itertools import compress

from protocol.history.events import EventLike, to_address, to_hash_hex
from protocol.history.records import RunHistory
from protocol.history.rounds import Round
from protocol.money_events import (
    JurySeat,
    MoneyEvent,
    MoneyReport,
    Seat,
    Span,
    get_fault_reward_event,
    get_jury_event,
    get_membership,
    get_mint_event,
    get_revenue_event,
    get_round_deadlines,
    get_round_money_events,
    get_slash_event,
    sort_money_report,
)


class MoneyReporter:
    """The money report of one account in one run, updated block by block (`update`), read with `report()`."""

    def __init__(self, run_id: int, address: str) -> None:
        self.run_id = run_id
        self.me = to_address(address)
        self.reset()

    def reset(self) -> None:
        """Forget everything (after a reorg: then one `update` with every event that stands)."""
        self.spans: list[Span] = []
        self.tx_events: dict[str, list[EventLike]] = {}
        self.dispute_events: dict[str, list[EventLike]] = {}
        self.dispute_rounds: dict[str, int] = {}
        """Dispute id (0x-hex) -> the round of this run it was opened in."""
        self.rounds: list[Round] = []
        self.round_events: list[list[MoneyEvent]] = []
        self.waiting: dict[int, int] = {}
        """Round index -> the next time its events may change with `now` alone (a window's end not passed yet)."""
        self.seat_rounds: set[int] = set()
        self.run_wide: list[MoneyEvent] = []
        self.counts = (0, 0, 0)  # mints, revenue flows, slashes taken from the history
        self.jury: dict[JurySeat, MoneyEvent | None] = {}
        self._report: MoneyReport | None = MoneyReport((), ())

    def update(
        self,
        new_events: Iterable[EventLike],
        timestamps: Mapping[int, int],
        history: RunHistory,
        seats: Mapping[int, Sequence[Seat]],
        jury_seats: Iterable[JurySeat],
        now: int,
    ) -> list[MoneyEvent]:
        """Take in `new_events` (whole blocks after every event taken so far: a slash is named by the other events of
        its transaction), `history` (the fold of all of them), the account's `seats` by round and its `jury_seats` so
        far, at chain time `now`; return the events computed again (new or possibly changed), in report order."""
        run_wide: list[MoneyEvent] = []
        ordered = sorted(new_events, key=lambda e: (e.block_number, e.log_index))
        spans = get_membership(ordered, self.run_id, self.me, timestamps, self.spans)
        for e in ordered:
            tx = str(getattr(e, "transaction_hash", ""))
            if tx:
                self.tx_events.setdefault(tx, []).append(e)
            if "disputeId" in e.args:
                self.dispute_events.setdefault(to_hash_hex(e.args["disputeId"]), []).append(e)
            run_wide += filter(None, [get_fault_reward_event(e, self.run_id, self.me)])
        run_wide += self._update_run_wide(history)
        recomputed, round_events = self._update_rounds(history, spans, seats, now)
        run_wide += self._update_jury(jury_seats)
        self.run_wide += run_wide
        if run_wide or recomputed:
            self._report = None  # a round computed again may also have lost an event (none is logged twice)
        fresh = [*run_wide, *round_events]
        return list(sort_money_report(fresh).events) if fresh else []

    def report(self) -> MoneyReport:
        """Every money event of the account so far, as `compute_money_report` orders them (sorted once per change)."""
        if self._report is None:
            self._report = sort_money_report([*self.run_wide, *(e for events in self.round_events for e in events)])
        return self._report

    def _update_run_wide(self, history: RunHistory) -> list[MoneyEvent]:
        """The mints, revenue flows and slashes the fold appended since the last update (final once their block is
        folded whole: see the module's docstring)."""
        mints, flows, slashes = self.counts
        out = list(filter(None, [get_mint_event(m, self.me) for m in history.mints[mints:]]))
        out += filter(None, [get_revenue_event(f, self.me) for f in history.revenue[flows:]])
        for s in history.slashes[slashes:]:
            if s.account == self.me:
                out.append(get_slash_event(s, self.tx_events.get(s.transaction_hash, []) if s.transaction_hash else []))
        self.counts = (len(history.mints), len(history.revenue), len(history.slashes))
        return out

    def _update_rounds(
        self, history: RunHistory, spans: list[Span], seats: Mapping[int, Sequence[Seat]], now: int
    ) -> tuple[bool, list[MoneyEvent]]:
        """Compute again the rounds that changed (see the module's docstring); whether any was, and their events."""
        rounds, kept = history.rounds, self.rounds
        contiguous = not rounds or (rounds[0].index == 0 and rounds[-1].index == len(rounds) - 1)
        if spans != self.spans or len(kept) > len(rounds) or not contiguous:
            changed = set(range(len(rounds)))  # a join or leave: every round's duty may change
            self.rounds, self.round_events, self.waiting = [], [], {}
        else:  # INVARIANT: round i sits at position i (contiguous indices), as in `kept`
            changed = set(compress(range(len(kept)), map(operator.is_not, kept, rounds)))
            changed |= set(range(len(kept), len(rounds)))
            changed |= {i for i, at in self.waiting.items() if now >= at}
            changed |= {i for i in seats.keys() - self.seat_rounds if i < len(rounds)}
        self.spans = spans
        self.seat_rounds = {i for i in seats if i < len(rounds)}
        out: list[MoneyEvent] = []
        for i in sorted(changed):
            rnd = rounds[i]
            events = get_round_money_events(history, rnd, self.me, spans, seats.get(rnd.index, ()), now)
            if i < len(self.rounds):
                self.rounds[i], self.round_events[i] = rnd, events
            else:
                self.rounds.append(rnd)
                self.round_events.append(events)
            for d in rnd.disputes:
                self.dispute_rounds[d.dispute_id] = rnd.index
            ahead = [at for at in get_round_deadlines(history, rnd) if at > now]
            if ahead:
                self.waiting[i] = min(ahead)
            else:
                self.waiting.pop(i, None)
            out += events
        return bool(changed), out

    def _update_jury(self, jury_seats: Iterable[JurySeat]) -> list[MoneyEvent]:
        """The jury seats (of this run's disputes) whose jury ended since: a vote or a missed vote, once each."""
        out = []
        for js in jury_seats:
            if self.jury.get(js) is not None or js.dispute_id not in self.dispute_rounds:
                continue  # ended and reported already, or another run's dispute
            event = get_jury_event(js, self.dispute_rounds[js.dispute_id], self.dispute_events.get(js.dispute_id, []))
            self.jury[js] = event
            if event is not None:
                out.append(event)
        return out
