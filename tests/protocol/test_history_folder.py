"""protocol/history/fold.py `HistoryFolder`: folding a run's events as they arrive, chunk by chunk, gives the same
history as folding them all at once, at every point a reader could stop (hypothesis picks the chunks)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.index import play
from protocol.history.events import HistoryError
from protocol.history.fold import HistoryFolder, fold_run_history
from protocol.history.records import FrozenPrefix
from tests.history_builder import ETH, SOLVER_A, SOLVER_B, attested_pass, honest_two_rounds, planted_run
from tests.history_events import theta


def _disputed(unresolved: bool) -> list:
    """A pass challenged in round 0: overturned by a jury and paid out, or left to expire unresolved; a round 1 on."""
    ev = attested_pass(maxRounds=2)
    if unresolved:
        ev.leave_unresolved(0, SOLVER_A, ev.challenge_pass(0, SOLVER_A))
    else:
        dispute = ev.overturn_pass(0, SOLVER_A)
    ev.claim_theta(0, claimer=SOLVER_B, value=theta(0))
    ev.settle(0, claimer=SOLVER_B)
    if not unresolved:
        ev.claim_juror(0, dispute, 50 * ETH)
    ev.commit(1, SOLVER_A)
    return ev.events


SCENARIOS = {
    "honest": lambda: honest_two_rounds().events,
    "false plant": lambda: planted_run(dispute="false plant").events,
    "true plant": lambda: planted_run(dispute="true plant").events,
    "unresolved plant": lambda: planted_run(dispute="unresolved").events,
    "6 rounds x 3 solvers": lambda: play(6, 3).events,
    "overturned pass": lambda: _disputed(unresolved=False),
    "unresolved dispute": lambda: _disputed(unresolved=True),
}


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(SCENARIOS)), st.lists(st.integers(1, 40), min_size=1, max_size=30))
def test_folding_chunk_by_chunk_equals_folding_at_once(scenario, chunks):
    events = SCENARIOS[scenario]()
    created = next(i for i, e in enumerate(events) if e.name == "RunCreated")
    folder, done = HistoryFolder(1), 0
    for size in [*chunks, len(events)]:
        chunk = events[done : done + size]
        folder.add(chunk, {e.block_number: 1_800_000_000 + e.block_number for e in chunk})
        done += len(chunk)
        if done > created:
            prefix = events[:done]
            times = {e.block_number: 1_800_000_000 + e.block_number for e in prefix}
            assert folder.history() == fold_run_history(prefix, 1, times), (scenario, done)
        if done >= len(events):
            break


def test_an_event_before_the_last_folded_is_refused_until_reset():
    events = honest_two_rounds().events
    folder = HistoryFolder(1)
    folder.add(events)
    with pytest.raises(HistoryError, match="reset\\(\\) and fold again after a reorg"):
        folder.add(events[-1:])
    folder.reset()
    folder.add(events)
    assert folder.history() == fold_run_history(events, 1)


def test_a_history_frozen_earlier_is_not_changed_by_what_the_fold_appends_later():
    """A kept fold's history views the fold's append-only lists (`FrozenPrefix`) instead of copying them: a view
    taken before more share claims, mints and revenue flows were appended still shows what it showed."""
    events = play(3, 2).events
    cut = next(i for i, e in enumerate(events) if e.name == "RoundSettled")
    folder = HistoryFolder(1)
    folder.add(events[:cut])
    earlier = folder.history()
    assert len(earlier.share_claims) == 0 and len(earlier.revenue) > 0
    folder.add(events[cut:])
    later = folder.history()
    assert len(later.share_claims) > 0 and len(later.mints) > len(earlier.mints)
    assert earlier == fold_run_history(events[:cut], 1) and later == fold_run_history(events, 1)


def test_a_frozen_prefix_reads_compares_and_hashes_as_the_tuple_of_its_items():
    items = [3, 1, 4]
    view = FrozenPrefix(items)
    items.append(1)  # appended after the view was taken: not in it
    assert len(view) == 3 and list(view) == [3, 1, 4] and view[-1] == 4 and view[1:] == (1, 4)
    assert view == (3, 1, 4) and (3, 1, 4) == view and view != (3, 1, 4, 1) and view != [3, 1, 4]  # noqa: SIM300
    assert hash(view) == hash((3, 1, 4)) and repr(view) == "(3, 1, 4)"
    assert FrozenPrefix(items) == (3, 1, 4, 1) and FrozenPrefix(items, 2) == FrozenPrefix([3, 1])
    with pytest.raises(IndexError):
        view[3]


@given(
    st.lists(st.integers(), max_size=8),
    st.integers(0, 8),
    st.integers(-10, 10),
    st.integers(-10, 10),
    st.sampled_from([None, 1, 2, -1, -3]),
)
def test_a_frozen_prefix_slices_as_the_tuple_of_its_items(items, length, start, stop, step):
    length = min(length, len(items))
    view = FrozenPrefix([*items, 99, 98], length)  # items past `length` were appended after the view was taken
    assert view[start:stop:step] == tuple(items[:length])[start:stop:step]
