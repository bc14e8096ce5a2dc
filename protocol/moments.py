"""The carried-moments rule (`train.carry_moments`): which AdamW moments a solver's round starts from.

One rule, applied by the solver (which moments to train from), by the checker (verifiers, whistleblowers, jurors:
node/moments.py, which reads the chain) and by the auditor (auditor/artifact_reads.py, which reads a folded history
and the artifacts it found), so the three cannot disagree about the chain of moments:

- round r of a solver starts from the moments of the end checkpoint c_H (the last leaf's end hash,
  `get_carried_checkpoint_hash`) of its *accepted* commitment of round r - 1 (`find_carried_commitment`);
- with no carrying, in round 0, or with no accepted commitment of round r - 1 (skipped, failed, unopened or planted
  round) it starts from fresh moments;
- c_0 = θ_r's parameters + those moments (`compute_start_checkpoint`) must hash to the first leaf's start hash.

INVARIANT: every moment a round starts from came out of the solver's own accepted, replay-checkable training of its
previous round (or is zero): by induction a solver cannot choose its moments, so it cannot steer an update through
them. Pure functions; how "accepted" is read (chain events, a folded history) is the caller's, passed in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from protocol.commitment import CommitmentDoc
from protocol.hashing import Hash32
from protocol.training import State, get_moments, make_start_checkpoint

C = TypeVar("C")


def get_carried_round(carry_moments: bool, round_index: int) -> int | None:
    """The round whose accepted commitment round `round_index` may take its moments from: r - 1 when the run
    carries moments and r > 0, else None (fresh moments whatever happened before)."""
    if not carry_moments or round_index == 0:
        return None
    return round_index - 1


def find_carried_commitment(
    carry_moments: bool, round_index: int, solver: str, get_accepted: Callable[[int, str], C | None]
) -> C | None:
    """`solver`'s commitment whose end checkpoint carries the moments its round `round_index` starts from, None for
    fresh moments. `get_accepted(round, solver)`: that solver's commitment of `round` if it was accepted, else None
    (asked only for the one round the rule names)."""
    previous = get_carried_round(carry_moments, round_index)
    return None if previous is None else get_accepted(previous, solver)


def get_carried_checkpoint_hash(doc: CommitmentDoc) -> Hash32:
    """The checkpoint whose moments carry: the end checkpoint c_H of the accepted commitment's last leaf."""
    return doc.leaves[-1].end_hash


def compute_start_checkpoint(params: State, carried_end: State | None) -> State:
    """c_0 of a round: θ_r's parameters with the moments of `carried_end` (the carried end checkpoint), or fresh
    moments when it is None. Raises CheckpointError when those moments do not fit θ's parameters."""
    return make_start_checkpoint(params, None if carried_end is None else get_moments(carried_end))
