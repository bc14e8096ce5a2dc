"""When a verifier acts: a pure function of the round's times and whether its seed is drawn.

What it attests is the commitment verdict (`protocol/verdict.py`) on opened commitments only: the first
failing sample is named in a fail attestation with the leaf and Merkle proof the solver opened on-chain,
so the chain records which checkpoints are disputed; a document or checkpoint the solver does not serve is
a failed segment (docs/nodes.md).
"""

from __future__ import annotations

from typing import Literal

from protocol.types import RoundTimes

Phase = Literal["before_attest", "wait_seed_block", "draw_seed", "attest", "after_attest", "finished"]


def get_verifier_phase(now: int, times: RoundTimes, seed_drawn: bool, block_number: int) -> Phase:
    """Where the current round stands for a verifier.

    The seed can be drawn once the block after the round's seed block (fixed when the round started: the seed is the
    RANDAO value revealed in it, that next block's mixHash) is mined, i.e. when the chain is past it; until then the
    verifier waits (`wait_seed_block`). It can be drawn
    only before `open_end` (so that solvers can still open): a round whose seed was not drawn by then is
    never verified, and the verifier has nothing to do in it. Before round 0's start (a run with a start delay)
    it is `before_attest` too: the verifier registers and waits; windows all count from `times.start`.
    """
    if times.finished:
        return "finished"
    if now < times.commit_end:
        return "before_attest"
    if now < times.attest_end:
        if seed_drawn:
            return "attest"
        if now >= times.open_end:
            return "after_attest"
        return "draw_seed" if block_number > times.randao_block else "wait_seed_block"
    return "after_attest"
