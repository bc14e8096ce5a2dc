"""Python's spellings of issue 36's contract rules against the deployed contracts on a real anvil.

- `protocol.constants.get_quorum(seats, appeals)` equals `Disputes.quorum(seats, appeals)` at every appeal level;
- the structs the nodes decode by field name (`CommitmentStatus`, `roundTally`, `PlantForfeit`) have the contracts'
  fields, and the new views (`isReserved`, `isPayBlocked`, `forfeitOf`) answer.
"""

from __future__ import annotations

from eth_account import Account

from protocol.constants import MAX_APPEALS, MAX_JURY_SIZE, get_quorum
from protocol.types import AttestationRef, CommitmentStatus, PlantForfeit


def test_quorum_equals_the_contract_at_every_appeal_level(deployment):
    chain = deployment.protocol.chain
    for appeals in range(MAX_APPEALS + 2):
        for seats in range(MAX_JURY_SIZE + 1):
            assert get_quorum(seats, appeals) == chain.call("Disputes", "quorum", seats, appeals), (seats, appeals)


def test_new_views_decode_by_field_name(deployment):
    protocol = deployment.protocol
    # an account no test ever stakes: run 1 is whichever test's run this worker made first (the suite's order)
    solver = Account.create().address
    status = protocol.commitment_status(1, 0, solver)
    assert isinstance(status, CommitmentStatus) and not status.paid and not status.unpaid
    assert set(protocol.round_tally(1, 0)) == {"totalChecks", "paidCommitments", "attestationBond"}
    forfeit = protocol.forfeit_of(AttestationRef(1, 0, solver, 0))
    assert isinstance(forfeit, PlantForfeit) and forfeit.amount == 0
    assert protocol.is_reserved(1, solver) is False
    assert protocol.is_pay_blocked(1, 0, solver) is False
