"""A round's reveal window (protocol/planting.py = Plants._revealEnd, vectors in tests/vectors/planting.json).

The window is [attestEnd, revealEnd), revealEnd the middle of the challenge window: every node (the solver's reveal,
the whistleblower's report of a missing one), the history's round phase and the auditor read it from
`protocol.planting`, and forge checks Plants against the same vectors (contracts/test/PlantingRevealWindow.t.sol).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.planting import PlantError, get_reveal_end, is_in_reveal_window, is_reveal_overdue
from protocol.types import RoundTimes
from tests.vectors.generate import VECTORS_DIR

WINDOWS = json.loads((VECTORS_DIR / "planting.json").read_text())["revealWindows"]


def _times(attest_end: int, challenge_end: int, finished: bool = False) -> RoundTimes:
    return RoundTimes(3, attest_end - 60, attest_end - 30, attest_end, challenge_end, finished)


@pytest.mark.parametrize("case", WINDOWS, ids=[f"{w['attestEnd']}-{w['challengeEnd']}" for w in WINDOWS])
def test_vector_windows_open_at_attest_end_and_close_at_reveal_end(case):
    attest_end, challenge_end, end = case["attestEnd"], case["challengeEnd"], case["revealEnd"]
    assert get_reveal_end(attest_end, challenge_end) == end
    assert attest_end <= end <= challenge_end
    times = _times(attest_end, challenge_end)
    assert not is_in_reveal_window(times, attest_end - 1) and not is_reveal_overdue(times, attest_end - 1)
    assert is_in_reveal_window(times, attest_end) == (end > attest_end)  # an empty window only for a 0-1 s challenge
    assert not is_in_reveal_window(times, end) and is_reveal_overdue(times, end)
    for probe in case["probes"]:
        assert is_in_reveal_window(times, probe["now"]) == probe["open"]
        assert is_reveal_overdue(times, probe["now"]) == probe["overdue"]


@given(st.integers(0, 2**40), st.integers(0, 10**6), st.integers(-(10**6), 2 * 10**6))
def test_a_reveal_counts_exactly_until_the_report_can_start(attest_end, challenge_window, offset):
    challenge_end, now = attest_end + challenge_window, attest_end + offset
    times = _times(attest_end, challenge_end)
    end = get_reveal_end(attest_end, challenge_end)
    assert is_in_reveal_window(times, now) == (attest_end <= now < end)
    assert is_reveal_overdue(times, now) == (now >= end)
    assert not (is_in_reveal_window(times, now) and is_reveal_overdue(times, now))
    assert challenge_end - end >= end - attest_end, "the second half, for challenges and plant disputes, is not shorter"
    finished = _times(attest_end, challenge_end, finished=True)
    assert not is_in_reveal_window(finished, now) and not is_reveal_overdue(finished, now), "a finished run owes none"


def test_a_challenge_window_ending_before_attest_end_is_refused():
    with pytest.raises(PlantError, match="challenge window ends after its attest window"):
        get_reveal_end(100, 99)
