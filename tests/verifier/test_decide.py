"""The verifier's decisions, without a chain."""

from __future__ import annotations

import pytest

from protocol.errors import GradledgerError
from protocol.types import RoundTimes
from protocol.verdict import SampleCheck, decide_attestation
from verifier.decide import get_verifier_phase

TIMES = RoundTimes(
    round=0, start=100, commit_end=120, attest_end=135, challenge_end=140, finished=False, seed_block=50, open_end=127
)


def test_all_samples_replay_means_pass():
    checks = [SampleCheck(0, 3, True, "ok"), SampleCheck(1, 1, True, "ok")]
    decision = decide_attestation(None, checks)
    assert decision.kind == "pass" and "2 sampled segment(s)" in decision.reason


def test_first_bad_sample_is_named_in_the_fail():
    checks = [
        SampleCheck(0, 3, True, "ok"),
        SampleCheck(1, 1, False, "end hash differs"),
        SampleCheck(2, 0, False, "x"),
    ]
    decision = decide_attestation(None, checks)
    assert (decision.kind, decision.sample_index, decision.segment, decision.reason) == (
        "fail",
        1,
        1,
        "end hash differs",
    )


def test_a_provably_bad_document_fails_on_the_first_sample():
    decision = decide_attestation("leaf 0 does not start at θ_r", [SampleCheck(0, 2, False, "")])
    assert (decision.kind, decision.sample_index, decision.segment) == ("fail", 0, 2)


def test_an_unserved_document_fails_on_the_first_draw():
    # The commitment was opened, so draw 0's leaf and proof are on-chain: the fail is provable.
    decision = decide_attestation("commitment document unavailable", [SampleCheck(0, 4, False, "")])
    assert (decision.kind, decision.sample_index, decision.segment) == ("fail", 0, 4)


def test_a_verdict_without_draws_is_an_error():
    with pytest.raises(GradledgerError, match="at least one sampled draw"):
        decide_attestation(None, [])


@pytest.mark.parametrize(
    ("now", "seed_drawn", "block", "phase"),
    [
        (110, False, 60, "before_attest"),
        (120, False, 50, "wait_seed_block"),  # the seed block (50) is not behind the chain yet
        (120, False, 51, "wait_seed_block"),  # nor its successor (51), whose mixHash is the RANDAO value revealed in 50
        (120, False, 52, "draw_seed"),
        (127, False, 51, "after_attest"),  # open_end passed undrawn: nobody can draw, open or attest this round
        (125, True, 60, "attest"),
        (135, True, 60, "after_attest"),
    ],
)
def test_phases(now, seed_drawn, block, phase):
    assert get_verifier_phase(now, TIMES, seed_drawn, block) == phase


def test_finished_run():
    finished = RoundTimes(3, 0, 0, 0, 0, True)
    assert get_verifier_phase(10**9, finished, True, 0) == "finished"
