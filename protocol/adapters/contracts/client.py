"""`ProtocolClient`: every contract family's typed calls in one object, and the rules that read two contracts.

Each method is one contract function (runs.py, verification.py, disputes.py, shares.py, plants.py); structs travel as
frozen dataclasses and come back as dataclasses, so roles never build ABI tuples by hand. Names follow the contracts
(docs/contracts.md); amounts are integers in wei. What needs Verification's tally and Plants' pay together
(acceptance, pay) is composed here by the one protocol function (`protocol.types.is_commitment_accepted` /
`is_commitment_paid`) that the history fold calls too.
"""

from __future__ import annotations

from protocol.adapters.contracts.disputes import DisputeCalls
from protocol.adapters.contracts.plants import PlantCalls
from protocol.adapters.contracts.shares import ShareCalls
from protocol.adapters.contracts.verification import VerificationCalls
from protocol.types import is_commitment_accepted, is_commitment_paid


class ProtocolClient(VerificationCalls, DisputeCalls, ShareCalls, PlantCalls):
    """The gradledger contracts of one deployment, with typed arguments and results."""

    def is_accepted(self, run_id: int, round_index: int, solver: str) -> bool:
        """Verified work whose Δ enters θ_(r+1) (`protocol.types.is_commitment_accepted`: accepted on the chain's tally
        and not unpaid under the plant rules), from Verification's status and Plants.payOf now.

        Verification keeps one status per solver, its latest commitment's: for an earlier round of that solver this
        reads False. A past round's acceptance comes from the run's history (`protocol.history`, `Round.accepted`)."""
        status = self.commitment_status(run_id, round_index, solver)
        pay = self.plant_pay(run_id, round_index, solver)
        return is_commitment_accepted(status.passes, status.faults, status.needed, pay=pay)

    def is_paid(self, run_id: int, round_index: int, solver: str) -> bool:
        """Whether `claimSolverShares` pays the commitment (`protocol.types.is_commitment_paid`: counted paid on the
        chain's tally and not unpaid under the plant rules: a reveal missed but never reported stays counted, and is
        never minted), from Verification's status and Plants.payOf now."""
        s = self.commitment_status(run_id, round_index, solver)
        pay = self.plant_pay(run_id, round_index, solver)
        return is_commitment_paid(s.passes, s.faults, s.needed, s.attested, s.planted, s.unpaid, pay=pay)
