"""Round duties every role shares around the opening: draw the seed, report commitments left unopened.

The round's seed is the RANDAO value of a block fixed when the round started (proven by the block's header,
which `ProtocolClient.draw_seed` fetches); anyone draws it once that block is mined, and the first draw wins (the
value is the same for everyone). Solvers need it to open their
commitments, verifiers to attest, so both draw it when nobody has. After `open_end` a commitment that
was neither opened nor reported is reported by whoever sees it first -- the whistleblower, a verifier
holding one of its seats, or the coordinator, which must, because the round cannot settle before every
commitment is resolved (docs/contracts.md, "Opening"). Reports earn nothing (the slash goes to the pool),
so these are duties, not races.
"""

from __future__ import annotations

import logging

from eth_account.signers.local import LocalAccount

from node.logs import log_event
from protocol.adapters.chain import ChainClient, ContractRevertError
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.runs import RunContext
from protocol.types import Opening, RoundTimes


def reach_past_block(chain: ChainClient, target: int) -> bool:
    """Whether the chain is past block `target`, mining the empty blocks up to it on an automining devnet.

    An automining devnet mines only on transactions, so there the empty blocks are mined here (same timestamp unless
    the devnet stamps a fixed interval: no window moves); a real chain, and a devnet mining on an interval (`anvil
    --block-time`), bring the block by themselves: mining there would move the chain's time on by a block per block
    mined. Callers mine only once the block may exist (after the commit window for a seed block, after the start for
    the run seed block): blocks mined at one timestamp earlier would break the rule that blocks are at least
    blockSeconds apart, which every seed block's position relies on.
    """
    block = chain.block_number()
    if block > target:
        return True
    if not chain.is_anvil_devnet() or not chain.is_automining():
        return False
    chain.mine_blocks(target - block + 1, interval_s=0)
    return True


def draw_round_seed(protocol: ProtocolClient, account: LocalAccount, run_id: int, times: RoundTimes) -> bool:
    """Draw the current round's seed once the block after its seed block (whose mixHash is the RANDAO value revealed
    in the seed block) is mined (`reach_past_block`: mined here on an automining devnet); False while waiting."""
    if not reach_past_block(protocol.chain, times.randao_block):
        return False
    try:
        protocol.draw_seed(account, run_id, times.round)
    except ContractRevertError as exc:
        if exc.error != "SeedAlreadyDrawn":
            raise
    return True


def get_unresolved_commitments(protocol: ProtocolClient, ctx: RunContext, round_index: int) -> tuple[str, ...]:
    """Solvers of `round_index` whose commitment is neither opened nor reported unopened yet."""
    committed = protocol.get_commitments(ctx.run_id, round_index, ctx.created_block)
    return tuple(s for s in committed if protocol.opening_state(ctx.run_id, round_index, s) == Opening.NONE)


def report_unopened(
    protocol: ProtocolClient, account: LocalAccount, log: logging.Logger, run_id: int, round_index: int, solver: str
) -> bool:
    """Report one unopened commitment (after open_end); False when someone resolved it first."""
    try:
        result = protocol.report_unopened(account, run_id, round_index, solver)
    except ContractRevertError as exc:
        if exc.error not in ("AlreadyResolved", "WrongRound"):
            raise
        return False
    log_event(
        log, "reported unopened commitment", level=logging.WARNING, run=run_id, round=round_index, solver=solver,
        tx=result.transaction_hash,
    )  # fmt: skip
    return True


def report_unresolved_commitments(
    protocol: ProtocolClient, account: LocalAccount, log: logging.Logger, ctx: RunContext, round_index: int
) -> None:
    """Report every commitment of `round_index` neither opened nor reported yet (call after open_end)."""
    for solver in get_unresolved_commitments(protocol, ctx, round_index):
        report_unopened(protocol, account, log, ctx.run_id, round_index, solver)
