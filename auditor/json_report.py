"""The audit's JSON export: a pure function of the report model (auditor/report_model.py).

The schema is documented in docs/audit.md (`schema` = "gradledger-audit/1"): keys are snake_case, amounts carry
their unit (`_wei`, share units without one), hashes are 0x-hex, and only plain JSON types appear, so the export
round-trips through `json.loads(json.dumps(...))` unchanged.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from auditor.report_model import AuditReportModel, CommitmentView, PlantsView, RoundView, format_iso
from protocol.hashing import hash_to_hex

SCHEMA = "gradledger-audit/1"


def _json_value(value: Any) -> Any:
    """A RunTerms field for JSON: hashes (bytes) as 0x-hex, numbers as they are."""
    return hash_to_hex(value) if isinstance(value, bytes) else value


def _plants_json(model: AuditReportModel, plants: PlantsView | None) -> dict[str, Any] | None:
    if plants is None:
        return None
    return {
        "rate_bps": plants.terms.rate_bps,
        "jackpot_wei": plants.terms.jackpot,
        "penalty_wei": plants.terms.penalty,
        "pool_wei": plants.pool,
        "forfeits_held_wei": plants.forfeits_held,
        "anchors": [
            {"solver": a.solver, "label": model.label_of(a.solver), "round": a.round, "early": a.early}
            for a in plants.anchors
        ],
        "seed_block": plants.seed_block,
        "run_seed_base": plants.run_seed_base,
        "jackpots_wei": dict(plants.jackpots),
    }


def _commitment_json(view: CommitmentView) -> dict[str, Any]:
    c = view.commitment
    return {
        "solver": c.solver,
        "label": view.label,
        "root": c.root,
        "delta_hash": c.delta_hash,
        "tokens": c.tokens,
        "opening": c.opening,
        "accepted": view.accepted,
        "paid": view.paid,
        "pay": view.pay,
        "plant": view.plant,
        "block": c.block,
        "time": c.time,
        "document": view.document,
        "document_at": view.document_at,
        "checkpoints_checked": view.checkpoints_checked,
        "checkpoint_problems": list(view.checkpoint_problems),
    }


def _round_json(model: AuditReportModel, rnd: RoundView) -> dict[str, Any]:
    return {
        "round": rnd.index,
        "status": "settled" if rnd.settled else "pending",
        "phase": rnd.phase,
        "started_at": rnd.start_time,
        "start_block": rnd.start_block,
        "theta_hash": rnd.theta_hash,
        "settled_theta_hash": rnd.next_theta_hash,
        "rederived_theta_hash": rnd.derivation.derived if rnd.derivation else None,
        "rederived": rnd.rederived,
        "settled_at": rnd.settled_time,
        "settled_block": rnd.settled_block,
        "claimer": rnd.claimer,
        "loss": rnd.loss,
        "loss_after": rnd.loss_after,
        "accepted": list(rnd.accepted),
        "paid": list(rnd.paid),
        "paid_commitments": rnd.paid_commitments,
        "plants": {
            "planted": list(rnd.plants.planted),
            "lazy_passes_caught": rnd.plants.lazy_passes_caught,
            "jackpots_wei": rnd.plants.jackpots,
            "disputed": list(rnd.plants.disputed),
            "disproven": list(rnd.plants.disproven),
            "forfeits_held_wei": rnd.plants.forfeits_held,
        },
        "abstentions": [
            {
                "solver": x.solver,
                "slot": x.slot,
                "verifier": x.verifier,
                "label": model.label_of(x.verifier),
                "reporter": x.reporter,
                "taken_wei": x.taken,
                "block": x.block,
                "time": x.time,
            }
            for x in rnd.abstentions
        ],
        "standing_checks": rnd.standing_checks,
        "seed": None if rnd.seed is None else {"seed_base": rnd.seed.seed_base, "block": rnd.seed.block_number},
        "commitments": [_commitment_json(c) for c in rnd.commitments],
        "attestations": [
            {
                "solver": a.solver,
                "slot": a.slot,
                "verifier": a.verifier,
                "label": model.label_of(a.verifier),
                "kind": a.kind,
                "state": a.state,
                "sample_index": a.sample_index,
                "segment_index": a.segment_index,
                "planted": a.planted,
                "jackpot_wei": a.jackpot,
                "forfeit_wei": a.forfeit,
                "forfeit_release": a.forfeit_release,
                "block": a.block,
                "time": a.time,
            }
            for a in rnd.attestations
        ],
        "disputes": [
            {
                "dispute_id": x.dispute_id,
                "kind": x.kind,
                "status": x.status,
                "solver": x.solver,
                "slot": x.slot,
                "segment_index": x.segment_index,
                "claim_nonce": x.claim_nonce,
                "challenger": x.challenger,
                "challenger_wins": x.challenger_wins,
                "signers": x.signer_count,
                "winner": x.winner,
                "total_wei": x.total,
                "to_winner_wei": x.to_winner,
                "to_pool_wei": x.to_pool,
            }
            for x in rnd.disputes
        ],
        "claims": [
            {
                "claimer": x.claimer,
                "theta_hash": x.theta_hash,
                "nonce": x.nonce,
                "status": x.status,
                "bond_wei": x.bond,
                "bond_withdrawn": x.bond_withdrawn,
            }
            for x in rnd.claims
        ],
        "shares_minted": dict(rnd.shares_minted),
        "pool_released_wei": rnd.pool_released,
    }


def render_json(model: AuditReportModel) -> dict[str, Any]:
    """The JSON export (schema in docs/audit.md)."""
    run = model.run
    return {
        "schema": SCHEMA,
        "run_id": model.run_id,
        "passed": model.passed,
        "chain_id": model.chain_id,
        "rpc_url": model.rpc_url,
        "audited_block": model.block,
        "audited_at": model.block_time,
        "audited_at_iso": format_iso(model.block_time),
        "sources": model.sources,
        "run": {
            "creator": run.creator,
            "share_token": run.share_token,
            "reward_pool_wei": run.reward_pool,
            "created_block": run.created_block,
            "created_at": run.created_time,
            "max_rounds": run.max_rounds,
            "rounds_settled": run.rounds_settled,
            "finished": run.finished,
            "settings": {f.name: _json_value(getattr(run.terms, f.name)) for f in fields(run.terms)},
            "plants": _plants_json(model, run.plants),
        },
        "checks": [c.to_json() for c in model.checks],
        "warnings": [w.to_json() for w in model.warnings],
        "rounds": [_round_json(model, rnd) for rnd in model.rounds],
        "loss": {str(k): v for k, v in model.losses.items()},
        "slashed": [
            {
                "address": x.account,
                "role": x.role,
                "label": model.label_of(x.account),
                "amount_wei": x.amount,
                "requested_wei": x.requested,
                "fault": x.fault,
                "round": x.round,
                "solver": x.solver,
                "slot": x.slot,
                "fault_key": x.fault_key,
                "block": x.block,
                "time": x.time,
                "transaction": x.transaction_hash,
            }
            for x in model.slashes
        ],
        "shares": dict(model.share_balances),
        "total_shares": model.total_shares,
        "shares_minted": [
            {
                "round": m.round,
                "holder": m.holder,
                "label": model.label_of(m.holder),
                "kind": m.kind,
                "amount": m.amount,
                "block": m.block,
                "transaction": m.transaction_hash,
            }
            for m in model.mints
        ],
        "unclaimed_shares": [
            {"round": c.round, "kind": c.kind, "contribution": c.key, "holder": c.holder, "amount": c.expected}
            for c in model.unclaimed
        ],
        "participants": [{"address": p.address, "label": p.label, "roles": list(p.roles)} for p in model.participants],
        "stakes": [
            {
                "address": p.account,
                "label": model.label_of(p.account),
                "role": p.role,
                "block": p.block,
                "time": p.time,
                "bonded_wei": p.bonded,
                "unbonding_wei": p.unbonding,
                "change": p.change,
                "amount_wei": p.amount,
            }
            for p in model.stakes
        ],
        "revenue": {
            **{kind.replace(" ", "_") + "_wei": wei for kind, wei in model.revenue_totals.items()},
            "flows": [
                {
                    "kind": f.kind,
                    "amount_wei": f.amount,
                    "account": f.account,
                    "round": f.round,
                    "block": f.block,
                    "time": f.time,
                }
                for f in model.revenue_flows
            ],
        },
        "contract_balance_wei": model.contract_balance,
        "implied_balance_wei": model.implied_balance,
        "balances": dict(model.contract_balances),
        "ledger": dict(model.ledger_by_kind),
        "pending": list(model.pending),
        "timings_s": dict(model.timings),
    }
