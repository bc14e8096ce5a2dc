"""When a verifier acts: a pure function of the round's times and whether its seed is drawn.

What it attests is the commitment verdict (`protocol/verdict.py`): the first failing sample is named
in a fail attestation (with its leaf and Merkle proof, so the chain records which checkpoints are
disputed); a document that cannot be obtained or does not hash to the root leaves nothing to prove
on-chain, so the verifier abstains and the commitment is never accepted (docs/nodes.md).
"""

from __future__ import annotations

from typing import Literal

from protocol.types import RoundTimes

Phase = Literal["before_attest", "draw_seed", "attest", "after_attest", "finished"]


def get_verifier_phase(now: int, times: RoundTimes, seed_drawn: bool) -> Phase:
    """Where the current round stands for a verifier."""
    if times.finished:
        return "finished"
    if now < times.commit_end:
        return "before_attest"
    if now < times.attest_end:
        return "attest" if seed_drawn else "draw_seed"
    return "after_attest"
