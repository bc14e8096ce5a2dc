"""Reporting seats left unattested (Verification.reportAbstention; issue 36, finding 8).

A verifier drawn to a seat of an opened commitment that does not attest it by attestEnd is charged the round's
attestation bond -- slashed from its stake, all of it to the run's reward pool -- by whoever reports the seat between
attestEnd and challengeEnd (`is_abstention_window`). Holding a seat and staying silent used to be free, so a
coalition's verifiers could abstain on competitors' commitments, which then went unpaid. Who reports: every solver
the seats of its own opened commitment (self-defence: it costs a transaction and the fee goes to the pool), and the
whistleblower every seat of the round. Attestations end at attestEnd, so one look per round after it finds every
abstention; a seat someone reported first is skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from eth_account.signers.local import LocalAccount

from node.logs import log_event
from protocol.adapters.chain import ContractRevertError
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.runs import RunContext
from protocol.types import AttestationRef, AttestationState, Opening, RoundTimes

RACE_ERRORS = frozenset({"WrongState"})
"""reportAbstention reverts that mean "reported by someone else first"."""


def is_abstention_window(times: RoundTimes, now: int) -> bool:
    """Whether an abstention of the current round can be reported now: [attestEnd, challengeEnd) of a running run."""
    return not times.finished and times.attest_end <= now < times.challenge_end


def find_abstentions(
    protocol: ProtocolClient, ctx: RunContext, times: RoundTimes, solvers: Iterable[str] | None = None
) -> tuple[AttestationRef, ...]:
    """The seats of the current round's opened commitments (of `solvers`; every committed solver when None) whose
    assigned verifier, not the solver itself, left them unattested. Complete once attestEnd has passed."""
    run, r = ctx.run_id, times.round
    count = protocol.seat_count(run, r)  # 0 until the seed is drawn: nothing was assigned
    if count == 0:
        return ()
    found = []
    candidates = protocol.get_commitments(run, r, ctx.created_block) if solvers is None else solvers
    for solver in candidates:
        if protocol.opening_state(run, r, solver) != Opening.OPENED:
            continue  # an unopened commitment has no seat to attest
        for slot in range(count):
            ref = AttestationRef(run, r, solver, slot)
            _, eligible = protocol.assigned_verifier(ref)
            if eligible and protocol.attestation_of(ref).state == AttestationState.NONE:
                found.append(ref)
    return tuple(found)


def report_abstentions(
    protocol: ProtocolClient, account: LocalAccount, log: logging.Logger, refs: Iterable[AttestationRef]
) -> int:
    """Report each seat (its verifier is slashed the attestation bond into the reward pool); returns how many this
    account reported. A seat reported first by someone else is skipped; any other revert (the window not open on
    the chain yet, say) is raised, so the caller looks again later."""
    reported = 0
    for ref in refs:
        try:
            result = protocol.report_abstention(account, ref)
        except ContractRevertError as exc:
            if exc.error not in RACE_ERRORS:
                raise
            continue
        reported += 1
        verifier = next((e.args["verifier"] for e in result.events if e.name == "AbstentionReported"), "")
        log_event(
            log, "reported abstention", level=logging.WARNING, run=ref.run_id, round=ref.round, solver=ref.solver,
            slot=ref.slot, verifier=verifier, tx=result.transaction_hash,
        )  # fmt: skip
    return reported
