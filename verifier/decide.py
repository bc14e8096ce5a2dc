"""What a verifier attests, and when it acts: pure functions of what it read and replayed.

A commitment's verdict (DESIGN section 3): the published document must match the on-chain
commitment and chain from θ_r; then every sampled segment is replayed and judged. The first
failing sample is named in a fail attestation (with its leaf and Merkle proof, so the chain
records which checkpoints are disputed). A document that cannot be obtained or does not hash
to the root leaves nothing to prove on-chain: the verifier does not attest a pass, so the
commitment is never accepted and earns nothing (docs/nodes.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from protocol.adapters.contracts import RoundTimes


@dataclass(frozen=True)
class SampleCheck:
    """The outcome of checking one sampled segment."""

    sample_index: int
    segment: int
    accepted: bool
    reason: str


@dataclass(frozen=True)
class AttestationDecision:
    kind: Literal["pass", "fail", "abstain"]
    sample_index: int
    segment: int
    reason: str


def decide_attestation(document_problem: str | None, provable: bool, checks: list[SampleCheck]) -> AttestationDecision:
    """Pass when every sample replays; fail on the first bad sample; abstain when unprovable."""
    if document_problem is not None:
        if provable and checks:
            first = checks[0]
            return AttestationDecision("fail", first.sample_index, first.segment, document_problem)
        return AttestationDecision("abstain", -1, -1, document_problem)
    for check in checks:
        if not check.accepted:
            return AttestationDecision("fail", check.sample_index, check.segment, check.reason)
    return AttestationDecision("pass", -1, -1, f"{len(checks)} sampled segment(s) replayed bit-identically")


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
