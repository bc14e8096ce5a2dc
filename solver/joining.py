"""Whether a solver can join its run: the stake check that runs before any `join` transaction.

An unstaked solver used to retry `join` every second forever, each time reverting with InsufficientFreeStake
(issue 18). The node now checks first and waits with one message that says how much stake is missing and the
command that deposits it; it joins as soon as the stake is there (RunNode.start retries).
"""

from __future__ import annotations

import logging

from eth_account.signers.local import LocalAccount

from node.logs import log_event
from protocol.adapters.chain import ContractRevertError
from protocol.adapters.contracts import ProtocolClient
from protocol.errors import GradledgerError
from protocol.ledger import format_eth
from protocol.types import ROLE_SOLVER


class StakeNeededError(GradledgerError):
    """A solver has too little free solver stake to join its run; the message says how much and how to add it."""


def verify_stake_covers(protocol: ProtocolClient, solver: str, run_id: int, needed_wei: int) -> None:
    """Raise StakeNeededError unless `solver`'s free solver stake covers `needed_wei` (the run's solverMinStake)."""
    bonded, _, _, reserved = protocol.stake_of(solver, ROLE_SOLVER)
    free = max(bonded - reserved, 0)
    if free >= needed_wei:
        return
    held = f"{format_eth(bonded)} ETH bonded"
    if reserved:
        held += f", {format_eth(reserved)} ETH reserved by other runs"
    raise StakeNeededError(
        f"solver {solver} cannot join run {run_id}: it needs {format_eth(needed_wei)} ETH of free solver stake (the "
        f"run's solverMinStake) and has {format_eth(free)} ETH ({held}); deposit the rest with `gradledger solver "
        f"stake --amount {format_eth(needed_wei - free)} --run {run_id}` and the same key options as this node; "
        "this node joins as soon as the stake is there"
    )


def ensure_joined(
    protocol: ProtocolClient, account: LocalAccount, log: logging.Logger, run_id: int, min_stake_wei: int
) -> None:
    """Join the run if this staked solver has not yet (idempotent).

    Without enough free solver stake it raises StakeNeededError naming the stake needed and the command that
    deposits it, before any transaction (a join would only revert with InsufficientFreeStake). The node waits
    rather than exits: `RunNode.start` retries, logs the cause once, and joins as soon as the stake is there
    (the operator may stake from another terminal after starting the node; docs/nodes.md)."""
    if protocol.has_joined(run_id, account.address):
        return
    verify_stake_covers(protocol, account.address, run_id, min_stake_wei)
    try:
        protocol.join_run(account, run_id)
        log_event(log, "joined", run=run_id, solver=account.address)
    except ContractRevertError as exc:
        if exc.error != "AlreadyJoined":
            raise
