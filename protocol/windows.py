"""Round windows that fit a machine: what a run's commit and attest windows must hold, from a measured pace.

A window too short for the hardware does not fail loudly: every solver misses every round, the run "finishes"
with θ unchanged and its reward pool is released to nobody. So `gradledger run create` measures the model's
pace on the creator's machine (node/pace.py), and refuses windows shorter than `compute_window_needs` says,
naming the window it needs; a solver node uses the same estimate to sit out a round it joined too late to
train (solver/decide.py) instead of training for nothing.

What each window must hold (docs/nodes.md, "Windows that fit the machine"):
    commit   a solver trains H steps, makes and hashes H/k + 1 checkpoints, and sends its commitment;
    attest   within its first half the seed is drawn and every commitment opened on-chain (open_end); then a
             verifier replays `samples` segments per seat (a trainer built from a checkpoint, k steps) and
             attests. One seat per verifier is assumed: a verifier holding s seats needs s times the replays.
Measured time is multiplied by PACE_SAFETY: nodes share the machine (two solvers on two cores train at half
speed) and a shared host is noisy. Pure integer arithmetic in milliseconds; no clock here.

The windows must also fit the chain (`get_block_time_problem`, `verify_windows_fit_chain`): its block time T,
declared at deployment (RunRegistry.blockSeconds), places the round's seed block ceil(Wc / T) blocks after the
round's start, and `drawSeed` reads that block's hash only before open_end and within SEED_HORIZON_BLOCKS
blocks. This is RunRegistry._validateWindows, checked before a run is sent (tests/vectors/windows.json holds
cases both languages check). A run's start delay D (round 0 starts D seconds after createRun, at most
MAX_START_DELAY: `verify_start_delay`) counts round 0's seed block from the creation block, ceil((D + Wc) / T)
blocks on: less than a block earlier or later after round 0's start than a later round's when D is not a whole
number of blocks, so the draw must fit after the later of the two and the horizon hold from the earlier.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.constants import (
    MAX_BLOCK_SECONDS,
    MAX_START_DELAY,
    MIN_BLOCK_SECONDS,
    RANDAO_LAG_BLOCKS,
    SEED_HORIZON_BLOCKS,
)
from protocol.errors import ConfigError

PACE_SAFETY = 3
"""Measured compute is multiplied by this: nodes of one host share its cores, and a shared host is noisy."""
TX_ALLOWANCE_S = 4
"""Seconds allowed for a node to notice a window opened, send a transaction and see it mined."""
OPEN_ALLOWANCE_S = 4
"""Seconds allowed, after commit_end, to draw the round seed and open the sampled leaves (the attest window's
first half must hold it: open_end = commit_end + attest_window / 2)."""


class WindowTooShortError(ConfigError):
    """A run's window is shorter than its work needs on the measured machine; the message names the window
    it needs and how to ask for it."""


@dataclass(frozen=True)
class TrainingPace:
    """How fast this machine runs the run's model, from a short measurement (node/pace.py)."""

    step_ms: int
    """One inner step: forward, backward, AdamW."""
    checkpoint_ms: int
    """Copying the model and optimizer state out and hashing it (a solver does it H/k + 1 times a round)."""
    load_ms: int
    """Building a trainer from a checkpoint (a verifier does it once per replayed segment)."""


@dataclass(frozen=True)
class WindowNeeds:
    """The shortest windows a run's work fits in on the measured machine, and the compute behind them."""

    commit_s: int
    attest_s: int
    round_training_ms: int
    """A solver's compute for one round (H steps and their checkpoints), before PACE_SAFETY."""
    seat_replay_ms: int
    """A verifier's compute for one seat (`samples` segment replays), before PACE_SAFETY."""


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def compute_round_training_ms(pace: TrainingPace, inner_steps: int, steps_per_segment: int) -> int:
    """A solver's compute for one round: H steps and the H/k + 1 checkpoints it stores."""
    return inner_steps * pace.step_ms + (inner_steps // steps_per_segment + 1) * pace.checkpoint_ms


def compute_seat_replay_ms(pace: TrainingPace, steps_per_segment: int, samples: int) -> int:
    """A verifier's compute for one seat: `samples` replays of a segment, each from a freshly built trainer."""
    return samples * (pace.load_ms + steps_per_segment * pace.step_ms + pace.checkpoint_ms)


def compute_window_needs(pace: TrainingPace, inner_steps: int, steps_per_segment: int, samples: int) -> WindowNeeds:
    """The shortest commit and attest windows (whole seconds) that hold a round's work with PACE_SAFETY margin."""
    if inner_steps <= 0 or steps_per_segment <= 0 or samples <= 0:
        raise ConfigError(f"H, k and samples must be positive, got {inner_steps}, {steps_per_segment}, {samples}")
    training = compute_round_training_ms(pace, inner_steps, steps_per_segment)
    replay = compute_seat_replay_ms(pace, steps_per_segment, samples)
    commit_s = _ceil_div(PACE_SAFETY * training, 1000) + TX_ALLOWANCE_S
    attest_s = max(2 * OPEN_ALLOWANCE_S, OPEN_ALLOWANCE_S + _ceil_div(PACE_SAFETY * replay, 1000) + TX_ALLOWANCE_S)
    return WindowNeeds(commit_s=commit_s, attest_s=attest_s, round_training_ms=training, seat_replay_ms=replay)


def get_window_shortfalls(needs: WindowNeeds, commit_window_s: int, attest_window_s: int) -> tuple[str, ...]:
    """One sentence per window shorter than `needs`, naming the window it needs and the flag asking for it."""
    out = []
    if commit_window_s < needs.commit_s:
        out.append(
            f"the commit window of {commit_window_s} s is shorter than the {needs.commit_s} s a solver needs here "
            f"(a round's training measured at {needs.round_training_ms / 1000:.2f} s, x{PACE_SAFETY} for a shared "
            f"machine, + {TX_ALLOWANCE_S} s to commit): pass --commit-window {needs.commit_s} or more"
        )
    if attest_window_s < needs.attest_s:
        out.append(
            f"the attest window of {attest_window_s} s is shorter than the {needs.attest_s} s a verifier seat needs "
            f"here ({OPEN_ALLOWANCE_S} s to draw the seed and open, replays measured at "
            f"{needs.seat_replay_ms / 1000:.2f} s x{PACE_SAFETY}, + {TX_ALLOWANCE_S} s to attest): pass "
            f"--attest-window {needs.attest_s} or more"
        )
    return tuple(out)


def verify_windows_fit(needs: WindowNeeds, commit_window_s: int, attest_window_s: int) -> None:
    """Raise WindowTooShortError naming every window shorter than `needs` and the window it needs."""
    shortfalls = get_window_shortfalls(needs, commit_window_s, attest_window_s)
    if shortfalls:
        raise WindowTooShortError(
            "; ".join(shortfalls) + " (or --force to create the run anyway: nodes that cannot finish a round in "
            "time miss it, and a run whose rounds all miss pays nobody)"
        )


def is_round_trainable_in_time(seconds_left: float, round_training_ms: int) -> bool:
    """Whether a solver with `seconds_left` before commit_end can still train and commit this round.

    No safety factor: a node estimating its own pace sits out only a round it clearly cannot finish; one that
    tries and is late records the round as missed, as before. `round_training_ms` 0 (pace not measured): it
    tries while the window is open."""
    if round_training_ms <= 0:
        return seconds_left > 0
    return seconds_left * 1000 > round_training_ms + TX_ALLOWANCE_S * 1000


# -- the chain's block time ------------------------------------------------------------------------------------------

WINDOW_NOT_POSITIVE = "every window must be positive"
COMMIT_TOO_SHORT = "commitWindow must be at least 2 blocks (2 * blockSeconds)"
DRAW_BEFORE_SEED = "attestWindow / 2 must cover the seed block and 3 more blocks after the commit window"
DRAW_BEYOND_HORIZON = "attestWindow / 2 must end within SEED_HORIZON_BLOCKS blocks of the seed block"
CHALLENGE_TOO_SHORT = "challengeWindow must cover attestWindow / 2 and 2 more blocks"
START_DELAY_TOO_LONG = "startDelay must be at most MAX_START_DELAY"
"""RunRegistry's InvalidConfig reasons for windows (and a start delay) that createRun refuses, word for word."""


class WindowsUnfitForChainError(ConfigError):
    """A run's windows do not fit the deployment's block time: `createRun` would revert with `reason` (the
    contract's InvalidConfig text); the message adds the windows, the block time and the bound to ask for."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def verify_block_seconds(block_seconds: int) -> None:
    """Raise ConfigError unless `block_seconds` is a block time a deployment may declare."""
    if not MIN_BLOCK_SECONDS <= block_seconds <= MAX_BLOCK_SECONDS:
        raise ConfigError(
            f"block time {block_seconds} s: a deployment declares a whole number of seconds between blocks in "
            f"[{MIN_BLOCK_SECONDS}, {MAX_BLOCK_SECONDS}] (--block-seconds)"
        )


def get_seed_offset_s(commit_window_s: int, block_seconds: int, start_delay_s: int = 0) -> int:
    """Seconds from a round's start to its seed block on a chain keeping its block time: ceil(Wc / T) * T; for
    round 0 of a run with a start delay D, whose seed block is counted from the creation block,
    ceil((D + Wc) / T) * T - D (the same when D is a whole number of blocks, less than a block off otherwise; never
    before Wc: every commit still lands before the seed block)."""
    return _ceil_div(start_delay_s + commit_window_s, block_seconds) * block_seconds - start_delay_s


def get_attest_window_bounds(commit_window_s: int, block_seconds: int, start_delay_s: int = 0) -> tuple[int, int]:
    """(shortest, longest) attest window that fits a commit window (and start delay) on `block_seconds` blocks.

    open_end = commit_end + Wa // 2 must come at least 2 + RANDAO_LAG_BLOCKS blocks after the seed block (the seed is
    the RANDAO value in the block RANDAO_LAG_BLOCKS after it, and the block drawing it lands before open_end with a
    block to spare) and at most SEED_HORIZON_BLOCKS + RANDAO_LAG_BLOCKS blocks after it (so `drawSeed` can read that
    block's hash throughout the draw window), in round 0 and in every later round: the former from the later of
    their seed blocks, the latter from the earlier."""
    verify_block_seconds(block_seconds)
    offsets = (
        get_seed_offset_s(commit_window_s, block_seconds, start_delay_s),
        get_seed_offset_s(commit_window_s, block_seconds),
    )
    latest, earliest = max(offsets), min(offsets)
    shortest = 2 * (latest + (2 + RANDAO_LAG_BLOCKS) * block_seconds - commit_window_s)
    longest = 2 * (earliest + (SEED_HORIZON_BLOCKS + RANDAO_LAG_BLOCKS) * block_seconds - commit_window_s) + 1
    return shortest, longest


def get_block_time_problem(
    commit_window_s: int, attest_window_s: int, block_seconds: int, start_delay_s: int = 0
) -> str | None:
    """RunRegistry's InvalidConfig reason for these windows and start delay on `block_seconds` blocks, or None.

    Mirrors `RunRegistry._validateWindows` (and the positive-window and start-delay checks before it), in the same
    order: with T = block_seconds, D = start_delay_s, s = ceil(Wc / T) * T and s0 = ceil((D + Wc) / T) * T - D (round
    0's seed block after its start), L = RANDAO_LAG_BLOCKS: D <= MAX_START_DELAY; Wc >= 2T;
    max(s0, s) + (2 + L) T <= Wc + Wa // 2; Wc + Wa // 2 <= min(s0, s) + (256 + L) T."""
    verify_block_seconds(block_seconds)
    if commit_window_s <= 0 or attest_window_s <= 0:
        return WINDOW_NOT_POSITIVE
    if start_delay_s > MAX_START_DELAY:
        return START_DELAY_TOO_LONG
    t = block_seconds
    if commit_window_s < 2 * t:
        return COMMIT_TOO_SHORT
    offsets = (get_seed_offset_s(commit_window_s, t, start_delay_s), get_seed_offset_s(commit_window_s, t))
    open_at = commit_window_s + attest_window_s // 2
    if max(offsets) + (2 + RANDAO_LAG_BLOCKS) * t > open_at:
        return DRAW_BEFORE_SEED
    if open_at > min(offsets) + (SEED_HORIZON_BLOCKS + RANDAO_LAG_BLOCKS) * t:
        return DRAW_BEYOND_HORIZON
    return None


def get_fitting_block_times(commit_window_s: int, attest_window_s: int, start_delay_s: int = 0) -> tuple[int, ...]:
    """Every block time a deployment may declare on which these windows (and start delay) fit."""
    return tuple(
        t
        for t in range(MIN_BLOCK_SECONDS, MAX_BLOCK_SECONDS + 1)
        if get_block_time_problem(commit_window_s, attest_window_s, t, start_delay_s) is None
    )


class StartDelayError(ConfigError):
    """A run's start delay that `createRun` refuses (above MAX_START_DELAY; `reason`: the contract's InvalidConfig
    text) or that no RunConfig can hold (negative; `reason` empty)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def verify_start_delay(start_delay_s: int) -> None:
    """Raise StartDelayError unless `start_delay_s` is a start delay `createRun` accepts: [0, MAX_START_DELAY].

    Checked before anything is published or sent: a refused createRun would cost the creator a transaction's fee,
    and one that slipped through a wrong bound would start round 0 later than anyone planned."""
    if start_delay_s < 0:
        raise StartDelayError(f"start delay {start_delay_s} s: round 0 cannot start before the run exists", "")
    if start_delay_s > MAX_START_DELAY:
        raise StartDelayError(
            f'createRun would revert with InvalidConfig("{START_DELAY_TOO_LONG}"): a start delay of {start_delay_s} s '
            f"is above MAX_START_DELAY ({MAX_START_DELAY} s = {MAX_START_DELAY // 3600} h; round 0's seed block is "
            f"counted in blocks from the run's creation, so a long delay lets skipped slots push it past openEnd): "
            f"pass --start-delay {MAX_START_DELAY} or less",
            START_DELAY_TOO_LONG,
        )


def verify_windows_fit_chain(
    commit_window_s: int, attest_window_s: int, block_seconds: int, start_delay_s: int = 0
) -> None:
    """Raise WindowsUnfitForChainError when `createRun` would refuse these windows on this chain (StartDelayError
    for the start delay itself), naming the contract's reason, the window to change and the bound it needs."""
    verify_start_delay(start_delay_s)
    reason = get_block_time_problem(commit_window_s, attest_window_s, block_seconds, start_delay_s)
    if reason is None:
        return
    t = block_seconds
    where = (
        f"commit window {commit_window_s} s and attest window {attest_window_s} s"
        + (f" after a start delay of {start_delay_s} s" if start_delay_s else "")
        + f" on a chain of {t}-second blocks (RunRegistry.blockSeconds)"
    )
    if reason == WINDOW_NOT_POSITIVE:
        hint = "pass positive --commit-window and --attest-window"
    elif reason == COMMIT_TOO_SHORT:
        hint = f"the commit window must be at least {2 * t} s: pass --commit-window {2 * t} or more"
    else:
        shortest, longest = get_attest_window_bounds(commit_window_s, t, start_delay_s)
        if reason == DRAW_BEFORE_SEED:
            seed_at = get_seed_offset_s(commit_window_s, t, start_delay_s)
            delayed = seed_at > get_seed_offset_s(commit_window_s, t)
            seed_at = max(seed_at, get_seed_offset_s(commit_window_s, t))
            why = f" in round 0 (its start delay of {start_delay_s} s is not a whole number of blocks)"
            hint = (
                f"the seed block comes {seed_at} s after the round starts{why if delayed else ''}, so the attest "
                f"window must be at least {shortest} s: pass --attest-window {shortest} or more"
                + (f", or a --start-delay that is a multiple of {t}" if delayed else "")
            )
        else:
            fitting = get_fitting_block_times(commit_window_s, attest_window_s, start_delay_s)
            longer = [f for f in fitting if f > t]
            elsewhere = f", or run on a chain of longer blocks (they fit {longer[0]}-second blocks)" if longer else ""
            hint = (
                f"drawSeed proves the seed's block by its hash, which the EVM serves only {SEED_HORIZON_BLOCKS} "
                f"blocks ({SEED_HORIZON_BLOCKS * t} s) later, so the attest window must be at most {longest} s: "
                f"pass --attest-window {longest} or less{elsewhere}"
            )
    raise WindowsUnfitForChainError(f'createRun would revert with InvalidConfig("{reason}"): {where}; {hint}', reason)


# -- room to challenge ------------------------------------------------------------------------------------------------


def get_shortest_challenge_window(attest_window_s: int, block_seconds: int) -> int:
    """The shortest challenge window `createRun` accepts: attestWindow // 2 + 2 blocks.

    # INVARIANT: an attestation made in the last second of the attest window can still be re-checked and challenged:
    the challenger (a whistleblower, or the griefed solver's self-defence) gets as long to replay it as a verifier had
    for its seat (the attest window's second half, after open_end), plus two blocks to land the challenge. A plant
    reveal holds challenges of a possibly planted commitment only until the reveal; the replay runs meanwhile, so the
    reveal window (the challenge window's first half) costs no replay time (issue 37: a whistleblower that saw a
    wrong pass late in the attest window was refused with ChallengeWindowClosed and the cheater was paid)."""
    verify_block_seconds(block_seconds)
    return attest_window_s // 2 + 2 * block_seconds


def get_challenge_window_problem(attest_window_s: int, challenge_window_s: int, block_seconds: int) -> str | None:
    """RunRegistry's InvalidConfig reason for this challenge window, or None (checked after the other windows)."""
    if challenge_window_s <= 0:
        return WINDOW_NOT_POSITIVE
    if challenge_window_s < get_shortest_challenge_window(attest_window_s, block_seconds):
        return CHALLENGE_TOO_SHORT
    return None


def verify_challenge_window(attest_window_s: int, challenge_window_s: int, block_seconds: int) -> None:
    """Raise WindowsUnfitForChainError when `createRun` would refuse this challenge window, naming the bound."""
    reason = get_challenge_window_problem(attest_window_s, challenge_window_s, block_seconds)
    if reason is None:
        return
    shortest = get_shortest_challenge_window(attest_window_s, block_seconds)
    raise WindowsUnfitForChainError(
        f'createRun would revert with InvalidConfig("{reason}"): challenge window {challenge_window_s} s after an '
        f"attest window of {attest_window_s} s on a chain of {block_seconds}-second blocks; a wrong attestation made "
        f"at the end of the attest window must leave a challenger a verifier's replay time and 2 blocks: pass "
        f"--challenge-window {shortest} or more",
        reason,
    )


# -- windows sized from a pace ----------------------------------------------------------------------------------------


def compute_seats_per_verifier(solvers: int, verifiers: int, verifiers_per_commitment: int) -> int:
    """The most seats one of `verifiers` holds in a round of `solvers` commitments, each drawn
    `verifiers_per_commitment` verifiers: ceil(solvers * vpc / verifiers), at least 1."""
    if solvers <= 0 or verifiers <= 0 or verifiers_per_commitment <= 0:
        raise ConfigError(
            f"solvers, verifiers and verifiers per commitment must be positive, got {solvers}, {verifiers}, "
            f"{verifiers_per_commitment}"
        )
    return max(1, _ceil_div(solvers * min(verifiers_per_commitment, verifiers), verifiers))


def compute_fitting_windows(
    needs: WindowNeeds, commit_window_s: int, attest_window_s: int, challenge_window_s: int, block_seconds: int
) -> tuple[int, int, int]:
    """(commit, attest, challenge) windows at least as long as the ones given and long enough for `needs`: what a
    run created by a tool that measures first (`gradledger demo`) asks for, so no window is shorter than its work.

    The challenge window holds a challenger's replay of a late attestation as long as a verifier's seat
    (`needs.attest_s`) and is never shorter than `get_shortest_challenge_window`."""
    commit = max(commit_window_s, needs.commit_s)
    attest = max(attest_window_s, needs.attest_s)
    challenge = max(challenge_window_s, needs.attest_s, get_shortest_challenge_window(attest, block_seconds))
    return commit, attest, challenge
