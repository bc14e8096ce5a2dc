"""Dispute plumbing shared by jurors (the verifier service) and whistleblowers.

Everything anyone may do to move a dispute along -- draw its jury once the seed block exists,
execute a decided verdict, appeal it (or end it unresolved after the last appeal) at its deadline --
plus reading the juror registry's history from events and rebuilding a drawn jury. The decisions
are `protocol.jury.get_dispute_action` (pure); this module reads the chain and acts.

On the automining devnet a block is mined only when a transaction arrives, so the block after a
challenge (the jury seed) may never come on a quiet chain. There, and only there (anvil on chain
id 31337: `ChainClient.is_anvil_devnet`), a party waiting for the seed block mines an empty one; on a
real chain, or another client, blocks arrive on their own.
"""

from __future__ import annotations

import logging

from eth_account.signers.local import LocalAccount

from node.logs import get_logger, log_event
from protocol.adapters.chain import ChainClient, ContractRevertError
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.finality import FinalEventReader
from protocol.constants import JURY_PARTY_SLACK, MAX_APPEALS, get_appeal_jury_size
from protocol.jury import (
    KIND_ATTESTATION,
    KIND_PLANT,
    DisputeSubject,
    JurorEntry,
    Jury,
    build_juror_registry,
    compute_jury_seed,
    draw_jury,
    get_dispute_action,
    get_pool_index,
)
from protocol.types import AttestationRef, DisputeRecord

logger = get_logger("disputes")

# Reverts that mean "someone else already moved this dispute" (or the step is not possible yet).
RACE_ERRORS = frozenset({"WrongStatus", "JurySeedNotReady", "DeadlinePassed", "DeadlineNotReached"})


class JurorRegistryReader:
    """The juror registry's events (JurorRegistry: JurorRegistered / JurorDeregistered), read incrementally up to
    the final block (reorg-checked, protocol/adapters/finality.py), replayed to the registry as of any block."""

    def __init__(self, chain: ChainClient) -> None:
        self.chain = chain
        self._reader = FinalEventReader(
            chain, chain.deployment.deployed_block, names=["JurorRegistered", "JurorDeregistered"],
            contracts=["JurorRegistry"], label="juror registry",
        )  # fmt: skip

    def read(self, at_block: int | None = None) -> list[JurorEntry]:
        """The active registry as of `at_block` (now when None); raises RegistryBehind past the final block."""
        self._reader.read_new()
        next_block = self._reader.next_block
        if at_block is not None and at_block >= next_block:
            raise ContractRevertError(
                "RegistryBehind", {}, f"juror registry events cover blocks < {next_block}, the jury needs "
                f"block {at_block}; retry once the node has caught up",
            )  # fmt: skip
        return build_juror_registry(self._reader.events, at_block)


def get_drawn_jury(registry: JurorRegistryReader, record: DisputeRecord) -> Jury:
    """The jury `drawJury` recorded, rebuilt from the registry snapshot of the dispute's block."""
    snapshot = registry.read(record.opened_block)
    pool = tuple(
        snapshot[get_pool_index(record.jury_seed, seat, record.pool_size, len(snapshot))]
        for seat in range(min(len(snapshot), record.pool_size))
    )
    jury_size = record.pool_size - JURY_PARTY_SLACK
    return Jury(record.jury_seed, jury_size, record.pool_size, pool, record.eligible, record.appeals)


def get_parties(protocol: ProtocolClient, subject: DisputeSubject, challenger: str) -> tuple[str, ...]:
    """Challenger, defendant (attester, claimer, or the planting solver) and solver: the accounts that may not sit on
    the jury."""
    if subject.kind == KIND_PLANT:
        return (challenger, subject.solver)
    if subject.kind == KIND_ATTESTATION:
        ref = AttestationRef(subject.run_id, subject.round, subject.solver, subject.slot)
        return (challenger, protocol.attester_of(ref), subject.solver)
    return (challenger, protocol.claimer_of(subject.run_id, subject.round))


def draw_dispute_jury(
    protocol: ProtocolClient,
    account: LocalAccount,
    snapshot: list[JurorEntry],
    subject: DisputeSubject,
    record: DisputeRecord,
) -> Jury:
    """Send `drawJury` with the pool the contract will check (seed block hash, registry snapshot, parties)."""
    chain = protocol.chain
    seed_block = chain.get_block(record.opened_block + 1)
    seed = compute_jury_seed(bytes(seed_block["hash"]), subject.dispute_id)
    jury_size = get_appeal_jury_size(protocol.dispute_terms(subject.run_id).jury_size, record.appeals)
    jury = draw_jury(snapshot, seed, jury_size, get_parties(protocol, subject, record.challenger), record.appeals)
    protocol.draw_jury(account, subject, [e.public_key_g1 for e in jury.pool])
    # the chain's bitmap is the jury: drawJury also passes over jurors whose stake no longer covers their reservations
    drawn = protocol.dispute_of(subject.dispute_id)
    log_event(
        logger, "jury drawn", dispute="0x" + subject.dispute_id.hex()[:16], appeals=record.appeals,
        seats=bin(drawn.eligible).count("1"), eligible=hex(drawn.eligible),
    )  # fmt: skip
    return Jury(jury.seed, jury.jury_size, jury.pool_size, jury.pool, drawn.eligible, jury.appeals)


def advance_dispute(
    protocol: ProtocolClient,
    account: LocalAccount,
    registry: JurorRegistryReader,
    subject: DisputeSubject,
    now: int,
) -> DisputeRecord:
    """Take the next permissionless step of a dispute if there is one; returns its record (re-read)."""
    chain = protocol.chain
    record = protocol.dispute_of(subject.dispute_id)
    action = get_dispute_action(record.status, now, record.deadline, chain.block_number(), record.opened_block)
    short = "0x" + subject.dispute_id.hex()[:16]
    try:
        if action == "draw_jury":
            snapshot = registry.read(record.opened_block)
            if not snapshot:
                log_event(logger, "no jurors registered in the dispute's block; it is appealed at its deadline",
                          dispute=short)  # fmt: skip
                return record
            draw_dispute_jury(protocol, account, snapshot, subject, record)
        elif action == "wait_seed_block":
            if chain.is_anvil_devnet():
                chain.mine()  # anvil only: see the module docstring
            return record
        elif action == "execute":
            protocol.execute_dispute(account, subject)
            log_event(logger, "dispute executed", dispute=short)
        elif action == "expire":
            protocol.expire_dispute(account, subject)
            appealed = record.appeals < MAX_APPEALS
            log_event(logger, "jury timed out: appealed" if appealed else "dispute ended unresolved", dispute=short,
                      appeals=record.appeals + 1 if appealed else record.appeals)  # fmt: skip
        else:
            return record
    except ContractRevertError as exc:
        if exc.error not in RACE_ERRORS:
            log_event(logger, f"{action} failed", level=logging.WARNING, dispute=short, error=str(exc))
            raise
        return record
    return protocol.dispute_of(subject.dispute_id)
