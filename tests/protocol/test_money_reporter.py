"""protocol/money_reporter.py `MoneyReporter`: a report kept block by block equals the full `compute_money_report`
at every point a node could read, for every account, with seats and jury seats arriving as a node reads them and the
chain's clock passing windows between blocks (hypothesis picks the chunks and the clock)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.history.events import to_hash_hex
from protocol.history.fold import HistoryFolder
from protocol.history.records import RunHistory
from protocol.money_events import JurySeat, Seat, compute_money_report, get_round_deadlines
from protocol.money_reporter import MoneyReporter
from tests.history_builder import CHALLENGER, JUROR, SOLVER_A, SOLVER_B, VERIFIER, RunEvents
from tests.history_events import time_of
from tests.protocol.test_history_folder import SCENARIOS
from tests.protocol.test_money_events import _three_rounds_with_b_missing, play_round


def _leave(ev: RunEvents, solver: str) -> None:
    ev.step()
    ev.emit("RunRegistry", "SolverLeft", runId=ev.run_id, solver=solver)


def _b_joins_late_and_a_leaves() -> list:
    """B joins during round 1 (not due in it; due in round 2, which it misses), A leaves during round 1 (due in
    no later round): the membership changes while rounds stand folded already."""
    ev = RunEvents(maxRounds=3)
    ev.create()
    ev.join(SOLVER_A)
    ev.register(VERIFIER)
    for r in range(3):
        if r == 1:
            ev.join(SOLVER_B)
        play_round(ev, r, [SOLVER_A] if r < 2 else [], (lambda: _leave(ev, SOLVER_A)) if r == 1 else (lambda: None))
    return ev.events


MONEY_SCENARIOS = {
    **SCENARIOS,
    "B misses rounds 1 and 2": lambda: _three_rounds_with_b_missing((1, 2)).events,
    "B joins late, A leaves": _b_joins_late_and_a_leaves,
}
ACCOUNTS = (SOLVER_A, SOLVER_B, VERIFIER, CHALLENGER, JUROR)


def _seats_read(history: RunHistory, seats: dict[int, list[Seat]], now: int) -> None:
    """The seats a verifier node reads once a round's attest window closed, here every seat of every commitment and
    one round per read at most (so seats also arrive after the round was computed with its window closed)."""
    for rnd in history.rounds:
        if rnd.index not in seats and rnd.seed is not None and now >= get_round_deadlines(history, rnd)[1]:
            seats[rnd.index] = [Seat(rnd.index, c.solver, slot) for c in rnd.commitments for slot in (0, 1)]
            return


def _jury_seats(events: list) -> list[JurySeat]:
    return [
        JurySeat(to_hash_hex(e.args["disputeId"]), int(e.args["appeals"]), seat)
        for e in events
        if e.name == "JuryDrawn"
        for seat in range(3)
    ]


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(sorted(MONEY_SCENARIOS)),
    st.sampled_from(ACCOUNTS),
    st.lists(st.tuples(st.integers(0, 40), st.sampled_from((0, 0, 5, 20, 40, 400))), min_size=1, max_size=30),
    st.integers(50, 100),
)
def test_reporting_block_by_block_equals_the_full_report(scenario, account, steps, percent_read):
    events = MONEY_SCENARIOS[scenario]()
    events = events[
        : max(len(events) * percent_read // 100, 1 + next(i for i, e in enumerate(events) if e.name == "RunCreated"))
    ]
    created = next(i for i, e in enumerate(events) if e.name == "RunCreated")
    folder, reporter = HistoryFolder(1), MoneyReporter(1, account)
    seats: dict[int, list[Seat]] = {}
    done, taken, now = 0, 0, 0
    previous: set[str] = set()
    for size, wait in [*steps, (len(events), 10**6)]:
        end = min(done + size, len(events))
        while 0 < end < len(events) and events[end].block_number == events[end - 1].block_number:
            end += 1  # whole blocks, as a node reads them (a slash is named by the rest of its transaction)
        chunk = events[done:end]
        folder.add(chunk, {e.block_number: time_of(e.block_number) for e in chunk})
        done += len(chunk)
        if done > created:
            prefix = events[:done]
            times = {e.block_number: time_of(e.block_number) for e in prefix}
            history = folder.history()
            now = max(now, time_of(prefix[-1].block_number) + wait)
            _seats_read(history, seats, now)
            jury = _jury_seats(prefix)
            fresh = reporter.update(events[taken:done], times, history, seats, jury, now)
            taken = done
            flat = [s for round_seats in seats.values() for s in round_seats]
            full = compute_money_report(prefix, 1, account, times, flat, now, history, jury)
            assert reporter.report() == full, (scenario, account, done, now)
            new_keys = {e.key for e in full.events} - previous
            assert new_keys <= {e.key for e in fresh}, "an event the node has not logged yet was not handed to it"
            previous = {e.key for e in full.events}
        if done >= len(events):
            break
    for _ in range(len(history.rounds) + 1):  # no new block: the clock alone passes every window, seats come in
        reporter.update([], times, history, seats, jury, 10**10)
        flat = [s for round_seats in seats.values() for s in round_seats]
        assert reporter.report() == compute_money_report(events, 1, account, times, flat, 10**10, history, jury)
        _seats_read(history, seats, 10**10)


def test_a_reset_and_one_update_of_what_stands_equals_the_full_report():
    events = MONEY_SCENARIOS["overturned pass"]()
    times = {e.block_number: time_of(e.block_number) for e in events}
    folder, reporter = HistoryFolder(1), MoneyReporter(1, VERIFIER)
    folder.add(events, times)
    reporter.update(events, times, folder.history(), {}, _jury_seats(events), 10**10)
    kept = events[: len(events) // 2 + 5]  # a reorg dropped the rest
    folder.reset()
    folder.add(kept, times)
    reporter.reset()
    reporter.update(kept, times, folder.history(), {}, _jury_seats(kept), 10**10)
    assert reporter.report() == compute_money_report(kept, 1, VERIFIER, times, (), 10**10, None, _jury_seats(kept))


def test_a_round_whose_window_closes_between_blocks_is_computed_again():
    events = MONEY_SCENARIOS["B misses rounds 1 and 2"]()
    times = {e.block_number: time_of(e.block_number) for e in events}
    round_1 = next(i for i, e in enumerate(events) if e.name == "RoundStarted" and e.args["round"] == 1)
    folder, reporter = HistoryFolder(1), MoneyReporter(1, SOLVER_B)
    folder.add(events[: round_1 + 1], times)
    history = folder.history()
    commit_end, _ = get_round_deadlines(history, history.rounds[1])
    first = reporter.update(events[: round_1 + 1], times, history, {}, (), commit_end - 1)
    assert [(e.kind, e.round) for e in first] == [("committed", 0)]
    fresh = reporter.update([], times, folder.history(), {}, (), commit_end)  # no new block: the clock alone
    assert [(e.kind, e.round, e.what) for e in fresh] == [("missed", 1, "commit window")]
    assert reporter.report().current_misses == tuple(fresh)
