"""A solver's commitment on-chain: commit a trained round once, notice a commit a reorg dropped, open its leaves.

The round's record in the node state is the truth this module acts on and updates (through `save`): "trained" (its
document and every artifact it names are stored, solver/node.py `record_trained`), "committed", "unopenable". A
commit is sent only for a trained record, and a revert saying it is there already (AlreadyCommitted, after a restart)
is the outcome wanted; a commit the chain no longer holds (an orphaned block) turns the record back to trained, so the
decision sends it again while the commit window is open, or marks the round missed.

Opening proves the sampled leaves against the committed root (protocol/opening.py); before it, what verifiers will
fetch is hash-checked and re-created if need be (solver/own_artifacts.py), so the solver never opens a commitment it
cannot serve without saying so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from eth_account.signers.local import LocalAccount

from node.logs import log_event
from protocol.adapters.chain import ContractRevertError
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.runs import RunContext
from protocol.commitment import CommitmentDocError
from protocol.errors import GradledgerError
from protocol.ledger import format_eth
from protocol.opening import OpeningError, build_opening
from protocol.types import RoundTimes
from solver.decide import RoundRecord
from solver.own_artifacts import OwnArtifacts

SaveRecord = Callable[[RoundRecord], None]


class RoundNotRecordedError(GradledgerError):
    """An action on a round the node state holds no record of (its state was lost or edited)."""


def commit_round(
    protocol: ProtocolClient, account: LocalAccount, log: logging.Logger, record: RoundRecord, save: SaveRecord
) -> None:
    """Send the commitment of a trained round and record it committed (once: AlreadyCommitted is success)."""
    try:
        result = protocol.commit(account, record.run_id, record.round, record.commitment)
    except ContractRevertError as exc:
        if exc.error != "AlreadyCommitted":
            raise
        result = None
    tx = result.transaction_hash if result else ""
    save(replace(record, status="committed", commit_tx=tx))
    log_event(log, "committed", run=record.run_id, round=record.round, tx=tx)


def recheck_commit(
    protocol: ProtocolClient,
    address: str,
    log: logging.Logger,
    record: RoundRecord | None,
    times: RoundTimes,
    save: SaveRecord,
) -> RoundRecord | None:
    """A round recorded committed whose commitment the chain no longer holds (a reorg dropped the commit) is
    trained again: the decision then commits it once more if its window is still open, or marks it missed."""
    if record is None or record.status != "committed" or times.finished or record.round != times.round:
        return record
    if protocol.has_committed(record.run_id, record.round, address):
        return record
    record = replace(record, status="trained", commit_tx="")
    save(record)
    log_event(
        log, "own commitment dropped by a reorg", level=logging.WARNING, run=record.run_id, round=record.round,
        why="the chain no longer holds this round's commit (its block was orphaned); it is sent again while the "
        "commit window is open",
    )  # fmt: skip
    return record


def open_round(
    protocol: ProtocolClient,
    account: LocalAccount,
    log: logging.Logger,
    ctx: RunContext,
    record: RoundRecord,
    own_artifacts: OwnArtifacts,
    save: SaveRecord,
) -> None:
    """Open the sampled leaves of this round's commitment on-chain (protocol/opening.py); a commitment with nothing
    to prove is recorded unopenable and said to cost the stake."""
    r, address = record.round, account.address
    try:
        # a corrupt or missing document is re-created first (retraining is deterministic)
        doc = own_artifacts.read_document(record)
        segments = protocol.opened_segments(ctx.run_id, r, address)
        opening = build_opening(doc, segments, ctx.terms.samples_per_commitment)
    except (OpeningError, CommitmentDocError) as exc:
        # Nothing to prove: the commitment will be reported unopened and this solver slashed.
        save(replace(record, status="unopenable"))
        log_event(
            log, "cannot open", level=logging.ERROR, run=ctx.run_id, round=r, reason=str(exc),
            consequence=f"the commitment will be reported unopened and this solver slashed "
            f"{format_eth(ctx.terms.solver_min_stake)} ETH",
        )  # fmt: skip
        return
    # what verifiers will fetch is hash-checked now and re-created if corrupt; opening stays right either way
    own_artifacts.ensure_served(record, doc, segments)
    try:
        result = protocol.open_commitment(account, ctx.run_id, r, address, record.commitment, opening)
    except ContractRevertError as exc:
        if exc.error != "AlreadyResolved":  # opened by someone else holding the document
            raise
        return
    log_event(log, "opened", run=ctx.run_id, round=r, leaves=len(opening.entries), tx=result.transaction_hash)
