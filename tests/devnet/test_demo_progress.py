"""What the demos print while they wait: which window of which round, and until when."""

from __future__ import annotations

from gradledger.demo import describe_round_wait
from protocol.types import RoundTimes

TIMES = RoundTimes(round=1, start=1000, commit_end=1045, attest_end=1080, challenge_end=1105, finished=False,
                   open_end=1062)  # fmt: skip


def test_each_window_is_named_with_the_time_it_closes():
    assert describe_round_wait(TIMES, 1000) == ("round 1: solvers train and commit", 1045)
    assert describe_round_wait(TIMES, 1045) == ("round 1: solvers open their sampled segments", 1062)
    assert describe_round_wait(TIMES, 1079) == ("round 1: verifiers replay and attest", 1080)
    assert describe_round_wait(TIMES, 1100) == ("round 1: challenge window open", 1105)


def test_after_the_windows_the_claim_and_settlement_are_awaited():
    assert describe_round_wait(TIMES, 1105) == ("round 1: windows closed; the coordinator claims θ_2 and settles", 0)
