"""Adversarial verifier roles for tests and the adversarial demo: never a default.

`gradledger verifier serve --adversary MODE` attests without checking anything:

- `lazy`: approves every commitment of its seats without replaying (earns its bond back and its
  shares for free unless a whistleblower catches a pass on bad work);
- `fail-honest`: fails every commitment of its seats, naming draw 0 (with the committed leaf and
  its Merkle proof, which it must fetch to be accepted on-chain), honest work included.

Both still need their seats (stake, registration) and bonds. Neither sits on juries.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from verifier.decide import AttestationDecision


class VerifierAdversary(StrEnum):
    LAZY = "lazy"
    FAIL_HONEST = "fail-honest"


def decide_dishonest_attestation(mode: VerifierAdversary, samples: Sequence[tuple[int, int]]) -> AttestationDecision:
    """What a dishonest verifier attests for a commitment with these (draw, segment) samples."""
    if mode is VerifierAdversary.LAZY:
        return AttestationDecision("pass", -1, -1, "lazy: approved without replaying")
    j, segment = samples[0]
    return AttestationDecision("fail", j, segment, "fail-honest: failed without replaying")
