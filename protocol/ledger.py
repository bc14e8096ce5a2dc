"""The ETH the protocol's contracts must hold, implied by their events alone.

Every wei enters the protocol from outside through an event-bearing call (a stake deposit, a
run's reward pool, an attestation or challenge bond, a claim bond, a revenue payment) and
leaves through one (a stake, credit, claim-bond or revenue withdrawal, a sweep). Transfers
between the protocol's own contracts (slashes, pool releases, share-token notifications) move
ETH inside the system and do not change the total. So, summed over all protocol contracts and
per-run share tokens:

    implied balance = sum of inflows - sum of outflows

and it must equal the sum of their on-chain ETH balances (checked by the demo summary, the
audit and the tests). Bonds whose amount the event does not carry are the run's configured
bonds, read from its `RunCreated` event (decoded by field name as `protocol.types.RunTerms`).

Internal, so not counted: a pass's bond and penalty that Plants holds after a planted reveal
(PlantForfeitHeld: the bond came in with its attestation, the penalty with a stake deposit) and
their release into the plant pool or a verifier's credit (PlantForfeitReleased); an abstention's
slash sent to the reward pool (AbstentionReported, PoolFunded). What leaves is the credit's
withdrawal (Withdrawn).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

from protocol.types import RunTerms


def format_eth(wei: int) -> str:
    """Wei as ETH with every digit that matters and none more (10 ETH -> "10", 1 wei -> "0.000000000000000001"):
    what operators are told they stake, lose or are owed is exact, never rounded."""
    text = f"{Decimal(wei) / 10**18:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


class EventLike(Protocol):
    """What the ledger reads of an event: read-only, so frozen `ChainEvent`s and hand-built events both fit."""

    @property
    def name(self) -> str: ...

    @property
    def args(self) -> Mapping[str, Any]: ...


@dataclass
class Ledger:
    inflows: int = 0
    outflows: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)

    @property
    def implied_balance(self) -> int:
        return self.inflows - self.outflows

    def add(self, kind: str, amount: int) -> None:
        self.by_kind[kind] = self.by_kind.get(kind, 0) + amount
        if amount >= 0:
            self.inflows += amount
        else:
            self.outflows -= amount


def compute_ledger(events: Iterable[EventLike]) -> Ledger:
    """Fold a chain-ordered event list into inflows and outflows of the protocol's ETH."""
    ledger = Ledger()
    attestation_bond: dict[int, int] = {}
    challenge_bond: dict[int, int] = {}
    for event in events:
        a = event.args
        match event.name:
            case "RunCreated":
                terms = RunTerms.from_fields(a["config"])
                attestation_bond[a["runId"]] = terms.attestation_bond
                challenge_bond[a["runId"]] = terms.challenge_bond
                ledger.add("reward pools", a["rewardPool"])
            case "StakeDeposited":
                ledger.add("stake deposits", a["amount"])
            case "PassAttested" | "FailAttested":
                ledger.add("attestation bonds", attestation_bond[a["runId"]])
            case "AttestationChallenged":
                ledger.add("challenge bonds", challenge_bond[a["runId"]])
            case "ClaimChallenged" | "PlantChallenged":
                ledger.add("challenge bonds", challenge_bond[a["runId"]])
            case "ThetaClaimed":
                ledger.add("claim bonds", a["bond"])
            case "PlantTermsSet":
                # what setTerms itself brought in (msg.value), never the pool it reports: an earlier fundPool is
                # already counted by its own PlantPoolFunded (issue 36, finding 9)
                ledger.add("plant pools", a["funded"])
            case "PlantPoolFunded":
                ledger.add("plant pools", a["amount"])
            case "RevenuePaid":
                ledger.add("revenue paid", a["amount"])
            case "StakeWithdrawn":
                ledger.add("stake withdrawals", -a["amount"])
            case "Withdrawn":
                ledger.add("credit withdrawals", -a["amount"])
            case "ClaimBondWithdrawn":
                ledger.add("claim bond withdrawals", -a["amount"])
            case "RevenueWithdrawn":
                ledger.add("revenue withdrawals", -a["amount"])
            case "UnownedRevenueSwept":
                ledger.add("unowned revenue swept", -a["amount"])
    return ledger
