"""How long a checker may spend fetching what one seat's solver must serve (issue 37): the rule, no clock.

A solver that drips its checkpoints slowly enough makes an honest verifier's replay miss the attest window: the seat
stays silent, no fail is ever attested, and with lazy accomplices on its other seats its bad work is accepted. So
every fetch of what a solver must serve -- its commitment document, the end checkpoint, the sampled start
checkpoints, its payload and moments evidence -- is charged to one budget per seat, and what is not in when the
budget is spent counts as unavailable data: the same data-availability fail a withheld checkpoint gets.

The rule (docs/nodes.md, "Fetch deadlines"): the budget is a sixth of the run's attest window, and never less than
MIN_FETCH_BUDGET_S. Why a sixth: a verifier attests only after the solver opened, which a solver may do as late as
open_end, the middle of the window (W/2 left). `protocol/windows.py` sizes W >= 8 s + PACE_SAFETY x R for replays
that take R at the measured pace, so after a late opening the replays (R <= (W - 8) / 3) and the attestation (4 s)
leave W/2 - (W - 8)/3 - 4 = W/6 - 4/3 s: a budget of W/6 fits in that, to a second, even in a window at its minimum.
(A quarter, the first guess, does not: a late opening plus a drip just under W/4 left a minimal window's verifier
short of its replays.) After an early opening, which honest solvers do and `compute_window_needs` assumes, the rest
of the window holds replays 2.5x slower than measured.

Verifiers, whistleblowers and jurors use the same budget, so all three judge the same question the same way (a larger
juror budget would let a solver that drips at a speed between the two get honest data-availability fails
overturned). The budget is wall-clock (monotonic) seconds, a fixed function of the window's length in chain seconds:
never of chain timestamps, which on a driven devnet (tests/clock.py) stand still while nodes work.
"""

from __future__ import annotations

from protocol.errors import ConfigError

FETCH_SHARE_OF_ATTEST_WINDOW = 6
"""The budget is attest_window / this: what a late opening (at open_end) leaves after the replays and the attestation
(module docstring)."""
MIN_FETCH_BUDGET_S = 5.0
"""The floor of the budget: a connection, a document and a few small checkpoints over a slow link. An attest window
under 30 s gets this rather than a sixth."""


def compute_fetch_budget_s(attest_window_s: int) -> float:
    """Wall-clock seconds a checker may spend, all transfers of one seat together, fetching what the seat's solver
    must serve: attest_window_s / FETCH_SHARE_OF_ATTEST_WINDOW, at least MIN_FETCH_BUDGET_S.

    # INVARIANT: the budget depends on the run's terms only (the attest window's length), so every verifier,
    whistleblower and juror of a run gives a solver the same time to serve.
    """
    if attest_window_s <= 0:
        raise ConfigError(f"attest window {attest_window_s} s: a run's attest window must be positive")
    return max(MIN_FETCH_BUDGET_S, attest_window_s / FETCH_SHARE_OF_ATTEST_WINDOW)
