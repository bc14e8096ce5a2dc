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
"""

from __future__ import annotations

from dataclasses import dataclass

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
