"""protocol/history/fold.py `HistoryFolder`: folding a run's events as they arrive, chunk by chunk, gives the same
history as folding them all at once, at every point a reader could stop (hypothesis picks the chunks)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.index import play
from protocol.history.events import HistoryError
from protocol.history.fold import HistoryFolder, fold_run_history
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
