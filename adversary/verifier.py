"""Dishonest verifier workers for tests and the adversarial demo: never a default.

`gradledger verifier serve --adversary MODE` runs one of these subclasses of the honest
`verifier.worker.VerifierWorker`; each overrides only `decide_seat` (what to attest) and never sits on
juries:

- `lazy`: approves every commitment of its seats without replaying (earns its bond back and its
  shares for free unless a whistleblower catches a pass on bad work);
- `fail-honest`: fails every commitment of its seats, naming draw 0 (with the committed leaf and
  its Merkle proof, which it must fetch to be accepted on-chain), honest work included.

Both still need their seats (stake, registration) and bonds.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from protocol.errors import ConfigError
from protocol.types import AttestationRef, Commitment
from protocol.verdict import AttestationDecision
from verifier.worker import VerifierWorker


class VerifierAdversary(StrEnum):
    LAZY = "lazy"
    FAIL_HONEST = "fail-honest"


def decide_dishonest_attestation(mode: VerifierAdversary, samples: Sequence[tuple[int, int]]) -> AttestationDecision:
    """What a dishonest verifier attests for a commitment with these (draw, segment) samples."""
    if mode is VerifierAdversary.LAZY:
        return AttestationDecision("pass", -1, -1, "lazy: approved without replaying")
    j, segment = samples[0]
    return AttestationDecision("fail", j, segment, "fail-honest: failed without replaying")


class LazyVerifierWorker(VerifierWorker):
    """Passes every seat without replaying anything (and so checks no plant either: a replay is what it saves)."""

    sits_on_juries = False
    checks_plants = False

    def decide_seat(self, ref: AttestationRef, commitment: Commitment) -> AttestationDecision:
        samples = self.get_checker().get_samples(ref)
        return decide_dishonest_attestation(VerifierAdversary.LAZY, samples)


class FailHonestVerifierWorker(VerifierWorker):
    """Fails every seat over draw 0 without replaying (the opened leaf on-chain proves it), and checks no plant."""

    sits_on_juries = False
    checks_plants = False

    def decide_seat(self, ref: AttestationRef, commitment: Commitment) -> AttestationDecision:
        samples = self.get_checker().get_samples(ref)
        return decide_dishonest_attestation(VerifierAdversary.FAIL_HONEST, samples)


def make_verifier_worker(adversary: str | None, *args: Any, **kwargs: Any) -> VerifierWorker:
    """The worker a `verifier serve` command starts: honest, or the dishonest subclass `adversary` names."""
    if adversary is None:
        return VerifierWorker(*args, **kwargs)
    try:
        mode = VerifierAdversary(adversary)
    except ValueError:
        raise ConfigError(
            f"unknown --adversary {adversary!r}; choose one of {', '.join(m.value for m in VerifierAdversary)}"
        ) from None
    worker_class = LazyVerifierWorker if mode is VerifierAdversary.LAZY else FailHonestVerifierWorker
    return worker_class(*args, **kwargs)
