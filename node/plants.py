"""Planted-fault duties shared by the roles (docs/planted-faults.md): a solver's chain, anchor, plant and reveal,
and reporting plants left unrevealed.

A solver's chain of round secrets comes from its account key (`protocol.planting.compute_chain_seed`), so a
restarted node recomputes it and nothing secret is stored. While its run plants (`rate_bps > 0`), a solver
registers the chain's anchor once, right after joining (or as soon as the creator sets the terms); from two rounds
later (from round 0 if both came before the run started, after the run seed is drawn) it trains each round the plant
draw selects on the planted batches (the one training implementation with the round's secret) and reveals
every eligible round's secret in the reveal window (`protocol.planting.is_in_reveal_window`: from attestEnd to the
middle of the challenge window).
A solver that does not reveal is slashed by whoever reports it after the window (the whistleblower does):
unprovable must not mean unpunished.
"""

from __future__ import annotations

import logging

from eth_account.signers.local import LocalAccount

from node.logs import log_event
from node.opening import reach_past_block
from protocol.adapters.chain import ContractRevertError
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.runs import RunContext
from protocol.constants import SEED_HORIZON_BLOCKS
from protocol.hashing import Hash32, hash_to_hex
from protocol.planting import (
    compute_chain_seed,
    compute_secret_chain,
    get_plant_anchor,
    get_round_secret,
    is_in_reveal_window,
    is_reveal_overdue,
    is_round_planted,
)
from protocol.types import Opening, RoundTimes

ZERO_HASH = bytes(32)


def get_secret_chain(account: LocalAccount, ctx: RunContext) -> tuple[Hash32, ...]:
    """This account's chain of round secrets for the run (s_0 .. s_N, N = maxRounds)."""
    return compute_secret_chain(compute_chain_seed(bytes(account.key), ctx.run_id), ctx.terms.max_rounds)


def ensure_plant_anchor(
    protocol: ProtocolClient, account: LocalAccount, log: logging.Logger, ctx: RunContext
) -> int | None:
    """Register the account's anchor if the run plants and it has none; returns the anchor's round (None: the run
    does not plant). Idempotent: a restart finds the anchor on-chain."""
    if protocol.plant_terms(ctx.run_id).rate_bps == 0:
        return None
    anchor_round = protocol.plant_anchor_round(ctx.run_id, account.address)
    if anchor_round is not None:
        return anchor_round
    anchor = get_plant_anchor(get_secret_chain(account, ctx))
    try:
        protocol.set_plant_anchor(account, ctx.run_id, anchor)
    except ContractRevertError as exc:
        if exc.error != "AnchorAlreadySet":
            raise
    anchor_round = protocol.plant_anchor_round(ctx.run_id, account.address)
    log_event(log, "plant anchor set", run=ctx.run_id, round=anchor_round, anchor=hash_to_hex(anchor)[:18])
    return anchor_round


def get_plant_secret(
    protocol: ProtocolClient, account: LocalAccount, ctx: RunContext, round_index: int
) -> Hash32 | None:
    """The round's secret if this account must plant its commitment of `round_index`, else None.

    Known when the round starts: eligibility (anchor two rounds old, or registered before the start of a run whose
    terms were too), the rate, and round r - 1's seed base (round 0: the run seed, `get_pending_run_seed_block` says
    when to draw it first); a round whose previous seed was never drawn is not planted (Plants._isPlanted).
    """
    if not protocol.plant_of(ctx.run_id, round_index, account.address).eligible:
        return None
    if round_index == 0:
        run_seed = protocol.run_seed(ctx.run_id)
        if not run_seed.drawn:
            return None
        previous_base = run_seed.seed_base
    else:
        previous_base = protocol.seed_base(ctx.run_id, round_index - 1)
        if previous_base == ZERO_HASH:
            return None
    secret = get_round_secret(get_secret_chain(account, ctx), round_index)
    rate = protocol.plant_terms(ctx.run_id).rate_bps
    planted = is_round_planted(secret, ctx.run_id, round_index, account.address, previous_base, rate)
    return secret if planted else None


def get_pending_run_seed_block(
    protocol: ProtocolClient, address: str, ctx: RunContext, round_index: int, block: int
) -> int:
    """The block whose header proves the run seed this solver must see drawn before it trains round `round_index`
    (the run seed block's successor: `RunSeed.randao_block`; 0: none pending).

    INVARIANT: an early anchor's round 0 is planted or not by the run seed as Plants will read it at the reveal, so
    the node trains round 0 only once the seed is drawn, or once it never can be (the EVM serves the block's hash for
    SEED_HORIZON_BLOCKS blocks only; an undrawn run seed leaves round 0 unplanted on-chain too).
    """
    if round_index != 0 or protocol.plant_terms(ctx.run_id).rate_bps == 0:
        return 0
    run_seed = protocol.run_seed(ctx.run_id)
    if run_seed.seed_block == 0 or run_seed.drawn or block > run_seed.randao_block + SEED_HORIZON_BLOCKS:
        return 0
    return run_seed.randao_block if protocol.plant_of(ctx.run_id, 0, address).eligible else 0


def draw_run_seed(protocol: ProtocolClient, account: LocalAccount, log: logging.Logger, ctx: RunContext) -> bool:
    """Plants.drawRunSeed once the block after the run seed block is mined (`reach_past_block`: mined here on an
    automining devnet, which the node calls only after round 0 started); False while waiting for it. Anyone may
    draw; a solver that must know round 0's plant draw does it, and someone else's draw landing first is fine."""
    if not reach_past_block(protocol.chain, protocol.run_seed(ctx.run_id).randao_block):
        return False
    try:
        result = protocol.draw_run_seed(account, ctx.run_id)
    except ContractRevertError as exc:
        if exc.error != "RunSeedAlreadyDrawn":
            raise
        return True
    log_event(log, "run seed drawn", run=ctx.run_id, tx=result.transaction_hash)
    return True


def is_reveal_due(protocol: ProtocolClient, address: str, ctx: RunContext, times: RoundTimes, now: int) -> bool:
    """Whether this solver must reveal the current round's secret now: inside the window, its opened commitment
    eligible, not yet revealed."""
    if not is_in_reveal_window(times, now):
        return False
    if protocol.opening_state(ctx.run_id, times.round, address) != Opening.OPENED:
        return False
    status = protocol.plant_of(ctx.run_id, times.round, address)
    return status.eligible and not status.revealed


def reveal_round_secret(
    protocol: ProtocolClient, account: LocalAccount, log: logging.Logger, ctx: RunContext, round_index: int
) -> bool:
    """Reveal the round's secret (in its window); returns whether the commitment was planted."""
    secret = get_round_secret(get_secret_chain(account, ctx), round_index)
    result = protocol.reveal_plant(account, ctx.run_id, round_index, secret)
    planted = any(e.name == "PlantRevealed" and e.args["planted"] for e in result.events)
    log_event(log, "plant revealed", run=ctx.run_id, round=round_index, planted=planted, tx=result.transaction_hash)
    return planted


def get_unrevealed_commitments(
    protocol: ProtocolClient, ctx: RunContext, times: RoundTimes, now: int
) -> tuple[str, ...]:
    """Solvers of the current round that owe a reveal and did not make it (after the reveal window)."""
    if not is_reveal_overdue(times, now):
        return ()
    if protocol.plant_terms(ctx.run_id).rate_bps == 0:
        return ()
    out = []
    for solver in protocol.get_commitments(ctx.run_id, times.round, ctx.created_block):
        if protocol.opening_state(ctx.run_id, times.round, solver) != Opening.OPENED:
            continue
        status = protocol.plant_of(ctx.run_id, times.round, solver)
        if status.eligible and not status.revealed and not status.reported:
            out.append(solver)
    return tuple(out)


def report_unrevealed_commitments(
    protocol: ProtocolClient,
    account: LocalAccount,
    log: logging.Logger,
    ctx: RunContext,
    times: RoundTimes,
    now: int,
) -> int:
    """Report every plant of the current round left unrevealed (the solver is slashed into the plant pool);
    returns how many were reported. A report someone else made first is skipped."""
    reported = 0
    for solver in get_unrevealed_commitments(protocol, ctx, times, now):
        try:
            result = protocol.report_unrevealed(account, ctx.run_id, times.round, solver)
        except ContractRevertError as exc:
            if exc.error != "NotOwed":  # reported by someone else first
                raise
            continue
        reported += 1
        log_event(
            log, "reported unrevealed plant", level=logging.WARNING, run=ctx.run_id, round=times.round, solver=solver,
            tx=result.transaction_hash,
        )  # fmt: skip
    return reported
