"""When a verifier acts: a pure function of the round's times and whether its seed is drawn.

What it attests is the commitment verdict (`protocol/verdict.py`): the first failing sample is named
in a fail attestation (with its leaf and Merkle proof, so the chain records which checkpoints are
disputed); a document that cannot be obtained or does not hash to the root leaves nothing to prove
on-chain, so the verifier abstains and the commitment is never accepted (docs/nodes.md).
"""

from __future__ import annotations

from typing import Literal

from protocol.types import RoundTimes

Phase = Literal["before_attest", "wait_seed_block", "draw_seed", "attest", "after_attest", "finished"]


def get_verifier_phase(now: int, times: RoundTimes, seed_drawn: bool, block_number: int) -> Phase:
    """Where the current round stands for a verifier.

    The seed can be drawn once the round's seed block (fixed when the round started) is mined, i.e. when
    the chain is past it; until then the verifier waits for that block (`wait_seed_block`).
    """
    if times.finished:
        return "finished"
    if now < times.commit_end:
        return "before_attest"
    if now < times.attest_end:
        if seed_drawn:
            return "attest"
        return "draw_seed" if block_number > times.seed_block else "wait_seed_block"
    return "after_attest"
