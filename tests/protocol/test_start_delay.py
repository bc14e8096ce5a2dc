"""A run's start delay (RunConfig.startDelay) in Python, without a chain.

Round 0 starts `startDelay` seconds after createRun; RunRegistry counts its seed block from the creation block
(ceil((D + Wc) / T) blocks on) and refuses a delay above MAX_START_DELAY. Here: the terms' ABI order, the rule
`protocol/windows.py` checks before a run is sent (transliterated from RunRegistry._validate), the history fold
(round 0's start is RoundStarted's `start`, never the creation block's time), and the decisions of a solver and a
verifier that see `now < start`: they wait, with no commit attempt and no missed window.
"""

from __future__ import annotations

from dataclasses import fields, replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from devnet.runs import build_run_terms
from protocol.config import build_run_config
from protocol.constants import (
    MAX_BLOCK_SECONDS,
    MAX_START_DELAY,
    MIN_BLOCK_SECONDS,
    RANDAO_LAG_BLOCKS,
    SEED_HORIZON_BLOCKS,
)
from protocol.history.fold import fold_run_history, get_round_phase
from protocol.money_events import compute_money_report
from protocol.run_presets import TINY
from protocol.types import ClaimStatus, RoundTimes, RunTerms
from protocol.windows import (
    DRAW_BEFORE_SEED,
    DRAW_BEYOND_HORIZON,
    START_DELAY_TOO_LONG,
    StartDelayError,
    WindowsUnfitForChainError,
    get_attest_window_bounds,
    get_block_time_problem,
    get_seed_offset_s,
    verify_start_delay,
    verify_windows_fit_chain,
)
from solver.decide import RoundRecord, SolverView, decide_solver_action
from tests.history_builder import CONFIG, SOLVER_A, SOLVER_B, RunEvents, time_of
from verifier.decide import get_verifier_phase

DELAY = 120

# -- the terms ------------------------------------------------------------------------------------------------------


def test_run_terms_end_with_the_start_delay_as_the_struct_does():
    """RunConfig's last field is startDelay (Types.sol): `to_abi` is positional, so it must be the last value."""
    names = [f.name for f in fields(RunTerms)]
    assert names[-1] == "start_delay"
    config = build_run_config(preset="tiny", run_seed="0x" + "5e" * 32, dataset_root="0x" + "11" * 32)
    terms = build_run_terms(bytes(32), bytes(32), bytes(32), config, TINY.with_run(start_delay=DELAY).run)
    assert terms.start_delay == DELAY and terms.to_abi()[-1] == DELAY
    assert build_run_terms(bytes(32), bytes(32), bytes(32), config, TINY.run).start_delay == 0
    # decoded by field name from RunCreated: every field, startDelay included
    decoded = RunTerms.from_fields({**CONFIG, "startDelay": DELAY})
    assert decoded.start_delay == DELAY and decoded.commit_window == CONFIG["commitWindow"]


# -- the rule createRun checks ----------------------------------------------------------------------------------------


def solidity_formula(wc: int, wa: int, t: int, d: int) -> str | None:
    """RunRegistry._validate's window and start-delay checks, transliterated line by line (`/` truncates)."""
    if wc == 0 or wa == 0:
        return "every window must be positive"
    if d > MAX_START_DELAY:
        return "startDelay must be at most MAX_START_DELAY"
    if wc < 2 * t:
        return "commitWindow must be at least 2 blocks (2 * blockSeconds)"
    seed_at = (wc + t - 1) // t * t
    seed_at0 = (d + wc + t - 1) // t * t - d
    open_at = wc + wa // 2
    if (seed_at0 if seed_at0 > seed_at else seed_at) + (2 + RANDAO_LAG_BLOCKS) * t > open_at:
        return "attestWindow / 2 must cover the seed block and 3 more blocks after the commit window"
    if open_at > (seed_at0 if seed_at0 < seed_at else seed_at) + (SEED_HORIZON_BLOCKS + RANDAO_LAG_BLOCKS) * t:
        return "attestWindow / 2 must end within SEED_HORIZON_BLOCKS blocks of the seed block"
    return None


block_times = st.integers(MIN_BLOCK_SECONDS, MAX_BLOCK_SECONDS)
delays = st.one_of(st.integers(0, MAX_START_DELAY + 100), st.integers(0, 200))
short_windows = st.integers(1, 40_000)


@given(short_windows, short_windows, block_times, delays)
def test_python_rule_is_the_solidity_formula(wc, wa, t, d):
    assert get_block_time_problem(wc, wa, t, d) == solidity_formula(wc, wa, t, d)


@given(short_windows, short_windows, block_times, st.integers(0, MAX_START_DELAY))
def test_accepted_windows_keep_their_promises_in_round_zero_and_after(wc, wa, t, d):
    """Blocks every T seconds from the creation block C (time 0); round 0 starts at D, its seed block is C +
    ceil((D + Wc) / T); a later round starting in block B has B + ceil(Wc / T). A transaction sent when block k is
    the latest lands in k + 1."""
    n0 = -(-(d + wc) // t)  # round 0's seed block, in blocks after creation
    n = -(-wc // t)  # a later round's, in blocks after its start block
    open_end = wc + wa // 2  # seconds after the round's start
    promises = (
        2 * t <= wc,
        # round 0: every block before commitEnd comes before the seed block; a draw sent on seeing the block after it
        # (whose mixHash is the RANDAO value revealed in the seed block) lands before openEnd with a block to spare
        (n0 + RANDAO_LAG_BLOCKS + 1) * t + t <= d + open_end,
        # ... and a draw sent at the draw window's last second still reads that block's hash
        (d + open_end - 1) // t + 1 <= n0 + RANDAO_LAG_BLOCKS + SEED_HORIZON_BLOCKS,
        # a later round: the same
        (n + RANDAO_LAG_BLOCKS + 1) * t + t <= open_end,
        (open_end - 1) // t + 1 <= n + RANDAO_LAG_BLOCKS + SEED_HORIZON_BLOCKS,
    )
    assert (get_block_time_problem(wc, wa, t, d) is None) == all(promises), promises
    # whatever the windows: a commit in any block before round 0's commitEnd lands before its seed block
    assert (d + wc - 1) // t < n0


@given(st.integers(1, 40_000), block_times, st.integers(0, 3 * MAX_BLOCK_SECONDS))
def test_attest_bounds_with_a_delay_are_tight(wc, t, d):
    shortest, longest = get_attest_window_bounds(wc, t, d)
    if wc < 2 * t:
        return
    assert get_block_time_problem(wc, shortest, t, d) is None
    assert get_block_time_problem(wc, longest, t, d) is None
    assert get_block_time_problem(wc, shortest - 1, t, d) == DRAW_BEFORE_SEED  # shortest is even: Wa // 2 drops
    assert get_block_time_problem(wc, longest + 1, t, d) == DRAW_BEYOND_HORIZON
    assert get_seed_offset_s(wc, t, d) - get_seed_offset_s(wc, t) in range(-t + 1, t)  # less than a block off
    assert get_seed_offset_s(wc, t, d) >= wc  # never inside the commit window


def test_a_delay_of_whole_blocks_asks_nothing_more_of_the_windows():
    for t in (1, 2, 12, 60):
        for wc in (2 * t, 7 * t - 1, 3600):
            assert get_seed_offset_s(wc, t, 5 * t) == get_seed_offset_s(wc, t)
            assert get_attest_window_bounds(wc, t, 5 * t) == get_attest_window_bounds(wc, t)


def test_a_delay_that_is_not_whole_blocks_is_refused_with_the_window_it_needs():
    """12-second blocks, a 24 s commit window: 72 s of attest window fits without a delay; a 1 s delay puts round 0's
    seed block 35 s after its start, which needs 94 s (RunRegistry says so too: StartDelay.t.sol)."""
    verify_windows_fit_chain(24, 72, 12, 0)
    verify_windows_fit_chain(24, 72, 12, 12)
    with pytest.raises(WindowsUnfitForChainError) as refused:
        verify_windows_fit_chain(24, 72, 12, 1)
    message = str(refused.value)
    assert refused.value.reason == DRAW_BEFORE_SEED
    assert "after a start delay of 1 s" in message and "35 s after the round starts in round 0" in message
    assert "pass --attest-window 94 or more, or a --start-delay that is a multiple of 12" in message
    verify_windows_fit_chain(24, 94, 12, 1)


def test_a_delay_above_the_bound_is_refused_before_sending():
    verify_start_delay(0)
    verify_start_delay(MAX_START_DELAY)
    with pytest.raises(StartDelayError) as refused:
        verify_start_delay(MAX_START_DELAY + 1)
    assert refused.value.reason == START_DELAY_TOO_LONG
    assert f'InvalidConfig("{START_DELAY_TOO_LONG}")' in str(refused.value)
    assert f"pass --start-delay {MAX_START_DELAY} or less" in str(refused.value)
    with pytest.raises(StartDelayError, match="cannot start before the run exists"):
        verify_start_delay(-1)
    with pytest.raises(StartDelayError):  # checked with the windows, whatever they are
        verify_windows_fit_chain(300, 300, 1, MAX_START_DELAY + 1)
    assert get_block_time_problem(300, 300, 1, MAX_START_DELAY + 1) == START_DELAY_TOO_LONG


# -- the history --------------------------------------------------------------------------------------------------


def _delayed_run() -> RunEvents:
    """Created with a start delay; SOLVER_A joins during it (and commits after the start), SOLVER_B never commits."""
    ev = RunEvents(startDelay=DELAY)
    ev.create()
    ev.join(SOLVER_A)
    ev.join(SOLVER_B)
    ev.commit(0, SOLVER_A)
    return ev


def test_round_zero_starts_at_the_announced_start_not_at_creation():
    ev = _delayed_run()
    h = fold_run_history(ev.events, ev.run_id, ev.timestamps)
    created = h.created_time
    assert created == time_of(h.created_block)
    assert h.rounds[0].start_time == created + DELAY
    assert h.terms.start_delay == DELAY
    assert get_round_phase(h, 0, created) == "start delay"
    assert get_round_phase(h, 0, created + DELAY - 1) == "start delay"
    assert get_round_phase(h, 0, created + DELAY) == "commit window"
    assert get_round_phase(h, 0, created + DELAY + CONFIG["commitWindow"]) == "attest window"


def test_joining_during_the_delay_makes_round_zero_due_only_once_its_shifted_window_closed():
    ev = _delayed_run()
    start = time_of(ev.events[0].block_number) + DELAY
    commit_end = start + CONFIG["commitWindow"]

    def missed(now: int) -> list:
        return compute_money_report(ev.events, ev.run_id, SOLVER_B, ev.timestamps, (), now).of_kind("missed")

    # where commitEnd would be without the delay, nothing is missed yet
    assert not missed(time_of(ev.events[0].block_number) + CONFIG["commitWindow"])
    assert not missed(commit_end - 1)
    assert [(e.round, e.what) for e in missed(commit_end)] == [(0, "commit window")]  # a member from the start


# -- the nodes' decisions ---------------------------------------------------------------------------------------------

TIMES = RoundTimes(
    round=0, start=1000, commit_end=1020, attest_end=1035, challenge_end=1040, finished=False, seed_block=1100,
    open_end=1027,
)  # fmt: skip
"""Round 0 of a run created at 880 with a 120 s start delay (seed block counted from the creation block)."""
BASE = SolverView(
    now=880, times=TIMES, block=900, record=None, committed_on_chain=False, coordinator=True,
    claim_status=ClaimStatus.NONE, claim_window_end=0, open_disputes=0, unfinalized=0, unclaimed_rounds=(),
    first_round=True,
)  # fmt: skip


@pytest.mark.parametrize("now", [880, 950, 999])
def test_a_solver_waits_for_the_start_without_training_committing_or_missing(now):
    for view in (
        replace(BASE, now=now),
        replace(BASE, now=now, first_round=False),  # a node that followed the run before: still not a miss
        replace(BASE, now=now, round_training_ms=10**9),  # far too slow for the window: not sat out before it opens
        replace(BASE, now=now, record=RoundRecord(1, 0, "trained")),  # trained anyway: never sent before the start
    ):
        action = decide_solver_action(view)
        assert action.kind == "wait", (view, action)
        assert action.round == 0 and action.seconds == max(0.2, 1000 - now)


def test_a_solver_trains_and_commits_from_the_start():
    assert decide_solver_action(replace(BASE, now=1000)).kind == "train"
    trained = RoundRecord(1, 0, "trained")
    assert decide_solver_action(replace(BASE, now=1000, record=trained)).kind == "commit"
    assert decide_solver_action(replace(BASE, now=1020, record=trained)).kind == "mark_missed"


@pytest.mark.parametrize("now", [880, 999, 1000, 1019])
def test_a_verifier_waits_until_the_shifted_commit_window_closed(now):
    assert get_verifier_phase(now, TIMES, seed_drawn=False, block_number=900) == "before_attest"


def test_a_verifier_draws_only_after_the_seed_block_counted_from_creation():
    assert get_verifier_phase(1020, TIMES, seed_drawn=False, block_number=1100) == "wait_seed_block"
    assert get_verifier_phase(1020, TIMES, seed_drawn=False, block_number=1101) == "wait_seed_block"
    assert get_verifier_phase(1020, TIMES, seed_drawn=False, block_number=1102) == "draw_seed"
