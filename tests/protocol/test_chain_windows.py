"""protocol/windows.py against the chain's block time: RunRegistry._validateWindows in Python.

The cross-language vectors (tests/vectors/windows.json) are checked by forge against createRun itself
(contracts/test/Windows.t.sol); here the rule is checked against the contract's formula as written in Solidity, and
against what it promises on a chain that mines a block exactly every T seconds: a block to commit in, a draw
sent on seeing the seed block landing before open_end with a block to spare, and a draw sent at any second of the
draw window landing within the seed block's 256-block horizon.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.constants import MAX_BLOCK_SECONDS, MIN_BLOCK_SECONDS, RANDAO_LAG_BLOCKS, SEED_HORIZON_BLOCKS
from protocol.errors import ConfigError
from protocol.windows import (
    CHALLENGE_TOO_SHORT,
    COMMIT_TOO_SHORT,
    DRAW_BEFORE_SEED,
    DRAW_BEYOND_HORIZON,
    WINDOW_NOT_POSITIVE,
    WindowsUnfitForChainError,
    get_attest_window_bounds,
    get_block_time_problem,
    get_challenge_window_problem,
    get_fitting_block_times,
    verify_challenge_window,
    verify_windows_fit_chain,
)
from tests.vectors.generate import VECTORS_DIR

block_times = st.integers(MIN_BLOCK_SECONDS, MAX_BLOCK_SECONDS)
windows = st.integers(1, 2**32 - 1)  # uint32 in RunConfig
short_windows = st.integers(1, 40_000)  # where the boundaries are


def solidity_formula(wc: int, wa: int, t: int) -> str | None:
    """RunRegistry._validate's window checks, transliterated line by line (uint256 arithmetic, `/` truncates)."""
    if wc == 0 or wa == 0:
        return "every window must be positive"
    if wc < 2 * t:
        return "commitWindow must be at least 2 blocks (2 * blockSeconds)"
    seed_at = (wc + t - 1) // t * t
    if seed_at + (2 + 1) * t > wc + wa // 2:  # 2 + RANDAO_LAG_BLOCKS
        return "attestWindow / 2 must cover the seed block and 3 more blocks after the commit window"
    if wc + wa // 2 > seed_at + (256 + 1) * t:  # (SEED_HORIZON_BLOCKS + RANDAO_LAG_BLOCKS) blocks
        return "attestWindow / 2 must end within SEED_HORIZON_BLOCKS blocks of the seed block"
    return None


@given(st.one_of(windows, short_windows), st.one_of(windows, short_windows), block_times)
def test_python_rule_is_the_solidity_formula(wc, wa, t):
    assert get_block_time_problem(wc, wa, t) == solidity_formula(wc, wa, t)


@given(short_windows, short_windows, block_times)
def test_accepted_windows_keep_their_promises_on_a_chain_keeping_its_block_time(wc, wa, t):
    """Blocks every T seconds from the round's start block B (time 0): block B + k at k * T; a transaction sent
    when block B + k is the latest lands in B + k + 1."""
    n = -(-wc // t)  # seed block: B + ceil(Wc / T)
    open_end = wc + wa // 2
    promises = (
        # a commitment sent on seeing the first block after the start lands in the commit window
        2 * t <= wc,
        # a draw sent on seeing the block after the seed block (its mixHash: the RANDAO value revealed in the seed
        # block) lands before open_end, with a block time to spare
        (n + RANDAO_LAG_BLOCKS + 1) * t + t <= open_end,
        # a draw sent at any second of the draw window, up to its last, lands within that block's horizon
        (open_end - 1) // t + 1 <= n + RANDAO_LAG_BLOCKS + SEED_HORIZON_BLOCKS,
    )
    assert (get_block_time_problem(wc, wa, t) is None) == all(promises), promises
    if all(promises):  # and before the seed block, no block is ever inside the draw window: nobody sees the seed
        assert n * t >= wc


@given(st.integers(1, 40_000), block_times)
def test_attest_bounds_are_tight(wc, t):
    shortest, longest = get_attest_window_bounds(wc, t)
    if wc < 2 * t:
        assert get_block_time_problem(wc, longest, t) == COMMIT_TOO_SHORT
        return
    assert get_block_time_problem(wc, shortest, t) is None
    assert get_block_time_problem(wc, longest, t) is None
    assert shortest == 1 or get_block_time_problem(wc, shortest - 1, t) == DRAW_BEFORE_SEED
    assert get_block_time_problem(wc, longest + 1, t) == DRAW_BEYOND_HORIZON


@given(short_windows, short_windows, block_times)
def test_the_refusal_names_the_contract_reason_and_a_bound_that_fits(wc, wa, t):
    reason = get_block_time_problem(wc, wa, t)
    if reason is None:
        verify_windows_fit_chain(wc, wa, t)
        return
    with pytest.raises(WindowsUnfitForChainError) as refused:
        verify_windows_fit_chain(wc, wa, t)
    assert refused.value.reason == reason and f'InvalidConfig("{reason}")' in str(refused.value)
    assert f"{t}-second blocks" in str(refused.value)
    if reason == COMMIT_TOO_SHORT:
        assert f"--commit-window {2 * t} or more" in str(refused.value)
    elif reason == DRAW_BEFORE_SEED:
        shortest = get_attest_window_bounds(wc, t)[0]
        assert f"--attest-window {shortest} or more" in str(refused.value)
        assert get_block_time_problem(wc, shortest, t) is None
    else:
        longest = get_attest_window_bounds(wc, t)[1]
        assert f"--attest-window {longest} or less" in str(refused.value)
        assert get_block_time_problem(wc, longest, t) is None


def test_production_windows_need_four_second_blocks_or_longer():
    """protocol.run_presets.PRODUCTION's 1 h commit and 30 min attest windows (docs/economics.md)."""
    assert get_fitting_block_times(3600, 1800) == tuple(range(4, MAX_BLOCK_SECONDS + 1))
    with pytest.raises(WindowsUnfitForChainError, match="they fit 4-second blocks"):
        verify_windows_fit_chain(3600, 1800, 1)


def test_refusals_of_degenerate_input():
    assert get_block_time_problem(0, 100, 1) == WINDOW_NOT_POSITIVE
    assert get_block_time_problem(100, 0, 12) == WINDOW_NOT_POSITIVE
    for t in (MIN_BLOCK_SECONDS - 1, MAX_BLOCK_SECONDS + 1):
        with pytest.raises(ConfigError, match=r"\[1, 60\]"):
            get_block_time_problem(300, 300, t)


def test_vectors_cover_every_reason_on_every_block_time():
    data = json.loads((VECTORS_DIR / "windows.json").read_text())
    assert data["caseCount"] == len(data["cases"])
    for case in data["cases"]:
        reason = get_block_time_problem(case["commitWindow"], case["attestWindow"], case["blockSeconds"])
        assert (case["accepted"], case["reason"]) == (reason is None, reason or "")
    for t in data["blockSeconds"]:
        reasons = {c["reason"] for c in data["cases"] if c["blockSeconds"] == t}
        assert reasons >= {"", COMMIT_TOO_SHORT, DRAW_BEFORE_SEED, DRAW_BEYOND_HORIZON, WINDOW_NOT_POSITIVE}, t


@given(wa=short_windows, wch=short_windows, t=block_times)
def test_challenge_window_leaves_a_late_attestation_a_replay_and_two_blocks(wa, wch, t):
    """RunRegistry's `challengeWindow < attestWindow / 2 + 2 * t` check, and what it promises: an attestation made in
    the last second of the attest window leaves a challenger as long as a verifier had to replay (the attest window's
    second half) and two blocks to land its challenge before challengeEnd (issue 37)."""
    reason = get_challenge_window_problem(wa, wch, t)
    assert reason == (CHALLENGE_TOO_SHORT if wch < wa // 2 + 2 * t else None)
    if reason is None:
        attest_end = wa  # from the attest window's start
        assert attest_end + wa // 2 + 2 * t <= attest_end + wch
        verify_challenge_window(wa, wch, t)
    else:
        with pytest.raises(WindowsUnfitForChainError, match=rf"--challenge-window {wa // 2 + 2 * t} or more"):
            verify_challenge_window(wa, wch, t)


def test_challenge_vectors_agree_and_cover_both_outcomes():
    data = json.loads((VECTORS_DIR / "windows.json").read_text())
    assert data["challengeCaseCount"] == len(data["challengeCases"])
    for case in data["challengeCases"]:
        t = case["blockSeconds"]
        assert get_block_time_problem(case["commitWindow"], case["attestWindow"], t) is None
        reason = get_challenge_window_problem(case["attestWindow"], case["challengeWindow"], t)
        assert (case["accepted"], case["reason"]) == (reason is None, reason or "")
    for t in data["blockSeconds"]:
        assert {c["reason"] for c in data["challengeCases"] if c["blockSeconds"] == t} == {"", CHALLENGE_TOO_SHORT}
