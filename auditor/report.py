"""The audit's three outputs: a terminal summary (rich), a JSON export, a self-contained HTML report.

The HTML has no scripts and no external references: styles are inline, the plots (loss per
round, shares per holder, stake and slashing over time) are matplotlib SVGs embedded as
base64 `data:` images, so the file opens anywhere without a network. Files are written
atomically (temp file in the same directory, fsync, rename): a reader never sees half a report.
The JSON schema is documented in docs/audit.md (`schema` = "gradledger-audit/1").
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import fields
from pathlib import Path
from typing import Any, get_args

from rich.console import Console
from rich.table import Table

from auditor.audit import AuditReport
from auditor.checks import judge_document, short
from protocol.hashing import hash_to_hex
from protocol.history.fold import get_round_phase
from protocol.history.records import Commitment, RevenueKind, Round, RunHistory

SCHEMA = "gradledger-audit/1"
KIND_COLORS = {"solver": "#1f77b4", "verifier": "#2ca02c", "juror": "#9467bd"}
LOSS_COLOR = "#1f77b4"
SLASH_COLOR = "#d62728"
STAKE_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")


def _iso(ts: int | None) -> str | None:
    return None if ts is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _eth(wei: int) -> str:
    return f"{wei / 1e18:,.6f}"


def _shares(units: int) -> str:
    return f"{units / 1e18:,.4f}"


def describe_plant(rnd: Round, c: Commitment) -> str:
    """A commitment's plant status in a few words ("-" when the round cannot be planted)."""
    if not rnd.plants_on:
        return "-"
    if not c.plant_eligible:
        return "no eligible anchor: none two rounds old, nor one set before the start (unpaid)"
    if c.disproven:
        return "planted, disproven by a jury (unpaid)"
    if c.planted:
        return "planted"
    if c.revealed:
        return "revealed, not planted"
    return "not revealed, reported" if c.unrevealed_reported else "not revealed (unpaid)"


def summarize_plants(rnd: Round) -> str:
    """A round's plants in one line: planted commitments, lazy passes they caught, jackpots, and the plant disputes
    with the plants they disproved, if any ("-": nothing planted)."""
    planted = len(rnd.planted)
    if not planted:
        return "-"
    caught = len(rnd.lazy_plant_passes)
    line = f"{planted} planted, {caught} lazy pass(es) caught, jackpots {_eth(rnd.jackpots)} ETH"
    disputed = len(rnd.plant_disputes)
    if disputed:
        line += f", {disputed} disputed, {len(rnd.disproven_plants)} disproven"
    returned = sum(a.forfeit for a in rnd.attestations if a.forfeit_release == "returned")
    if returned:
        line += f", forfeits returned {_eth(returned)} ETH"
    if rnd.forfeits_held:
        line += f", forfeits held {_eth(rnd.forfeits_held)} ETH"
    return line


def _plants_json(h: RunHistory) -> dict[str, Any] | None:
    terms = h.plants.terms
    if terms is None:
        return None
    return {
        "rate_bps": terms.rate_bps,
        "jackpot_wei": terms.jackpot,
        "penalty_wei": terms.penalty,
        "pool_wei": h.plants.pool,
        "forfeits_held_wei": sum(rnd.forfeits_held for rnd in h.rounds),
        "anchors": [
            {"solver": a.solver, "label": h.label_of(a.solver), "round": a.round, "early": a.early}
            for a in h.plants.anchors
        ],
        "seed_block": h.plants.seed_block,
        "run_seed_base": h.plants.run_seed_base,
        "jackpots_wei": h.jackpots,
    }


# ---------------------------------------------------------------------------------------------
# JSON


def _round_entries(report: AuditReport) -> list[dict[str, Any]]:
    h = report.history
    derived = {d.round: d for d in report.derivations}
    entries = []
    for rnd in h.rounds:
        minted = {kind: 0 for kind in KIND_COLORS}
        for m in h.mints:
            if m.round == rnd.index:
                minted[m.kind] += m.amount
        commitments = []
        for c in rnd.commitments:
            facts = report.documents.get((rnd.index, c.solver))
            verdict = judge_document(h, facts, report.start_hashes)
            problems = list(facts.checkpoint_problems) if facts else []
            if facts and facts.delta_binding:
                problems.append(facts.delta_binding)
            commitments.append(
                {
                    "solver": c.solver,
                    "label": h.label_of(c.solver),
                    "root": c.root,
                    "delta_hash": c.delta_hash,
                    "tokens": c.tokens,
                    "opening": c.opening,
                    "accepted": rnd.is_accepted(c.solver),
                    "paid": rnd.is_paid(c.solver),
                    "pay": rnd.pay_of(c.solver).name.lower(),
                    "plant": describe_plant(rnd, c),
                    "block": c.block,
                    "time": c.time,
                    "document": "verified" if verdict is None else verdict,
                    "document_at": facts.where if facts else "",
                    "checkpoints_checked": facts.checkpoints_checked if facts else 0,
                    "checkpoint_problems": problems,
                }
            )
        d = derived.get(rnd.index)
        entries.append(
            {
                "round": rnd.index,
                "status": "settled" if rnd.settled else "pending",
                "phase": get_round_phase(h, rnd.index, report.block_time),
                "started_at": rnd.start_time,
                "start_block": rnd.start_block,
                "theta_hash": rnd.theta_hash,
                "settled_theta_hash": rnd.next_theta_hash,
                "rederived_theta_hash": d.derived if d else None,
                "rederived": bool(d and d.problem is None),
                "settled_at": rnd.settled_time,
                "settled_block": rnd.settled_block,
                "claimer": rnd.claimer,
                "loss": report.losses.get(rnd.index),
                "loss_after": report.losses.get(rnd.index + 1) if rnd.settled else None,
                "accepted": list(rnd.accepted),
                "paid": list(rnd.paid),
                "paid_commitments": rnd.paid_commitments,
                "plants": {
                    "planted": [c.solver for c in rnd.planted],
                    "lazy_passes_caught": len(rnd.lazy_plant_passes),
                    "jackpots_wei": rnd.jackpots,
                    "disputed": [d.solver for d in rnd.plant_disputes],
                    "disproven": [c.solver for c in rnd.disproven_plants],
                    "forfeits_held_wei": rnd.forfeits_held,
                },
                "abstentions": [
                    {
                        "solver": x.solver,
                        "slot": x.slot,
                        "verifier": x.verifier,
                        "label": h.label_of(x.verifier),
                        "reporter": x.reporter,
                        "taken_wei": x.taken,
                        "block": x.block,
                        "time": x.time,
                    }
                    for x in rnd.abstentions
                ],
                "standing_checks": rnd.standing_checks,
                "seed": None if rnd.seed is None else {"seed_base": rnd.seed.seed_base, "block": rnd.seed.block_number},
                "commitments": commitments,
                "attestations": [
                    {
                        "solver": a.solver,
                        "slot": a.slot,
                        "verifier": a.verifier,
                        "label": h.label_of(a.verifier),
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
                "shares_minted": minted,
                "pool_released_wei": rnd.pool_released,
            }
        )
    return entries


def _json_value(value: Any) -> Any:
    """A RunTerms field for JSON: hashes (bytes) as 0x-hex, numbers as they are."""
    return hash_to_hex(value) if isinstance(value, bytes) else value


def build_json(report: AuditReport) -> dict[str, Any]:
    """The JSON export (schema in docs/audit.md)."""
    h = report.history
    s = h.terms
    revenue_kinds = get_args(RevenueKind)
    return {
        "schema": SCHEMA,
        "run_id": report.run_id,
        "passed": report.passed,
        "chain_id": report.chain_id,
        "rpc_url": report.rpc_url,
        "audited_block": report.block,
        "audited_at": report.block_time,
        "audited_at_iso": _iso(report.block_time),
        "sources": report.sources,
        "run": {
            "creator": h.creator,
            "share_token": h.share_token,
            "reward_pool_wei": h.reward_pool,
            "created_block": h.created_block,
            "created_at": h.created_time,
            "max_rounds": s.max_rounds,
            "rounds_settled": len(h.settled_rounds),
            "finished": h.finished,
            "settings": {f.name: _json_value(getattr(s, f.name)) for f in fields(s)},
            "plants": _plants_json(h),
        },
        "checks": [c.to_json() for c in report.checks],
        "warnings": [w.to_json() for w in report.warnings],
        "rounds": _round_entries(report),
        "loss": {str(k): v for k, v in sorted(report.losses.items())},
        "slashed": [
            {
                "address": x.account,
                "role": x.role,
                "label": h.label_of(x.account),
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
            for x in h.slashes
        ],
        "shares": dict(h.share_balances),
        "total_shares": h.total_supply,
        "shares_minted": [
            {
                "round": m.round,
                "holder": m.holder,
                "label": h.label_of(m.holder),
                "kind": m.kind,
                "amount": m.amount,
                "block": m.block,
                "transaction": m.transaction_hash,
            }
            for m in h.mints
        ],
        "unclaimed_shares": [
            {"round": c.round, "kind": c.kind, "contribution": c.key, "holder": c.holder, "amount": c.expected}
            for c in report.contributions
            if not c.claimed
        ],
        "participants": [{"address": p.address, "label": p.label, "roles": list(p.roles)} for p in h.participants],
        "stakes": [
            {
                "address": p.account,
                "label": h.label_of(p.account),
                "role": p.role,
                "block": p.block,
                "time": p.time,
                "bonded_wei": p.bonded,
                "unbonding_wei": p.unbonding,
                "change": p.change,
                "amount_wei": p.amount,
            }
            for p in h.stakes
        ],
        "revenue": {
            **{k.replace(" ", "_") + "_wei": h.revenue_total(k) for k in revenue_kinds},
            "flows": [
                {
                    "kind": f.kind,
                    "amount_wei": f.amount,
                    "account": f.account,
                    "round": f.round,
                    "block": f.block,
                    "time": f.time,
                }
                for f in h.revenue
            ],
        },
        "contract_balance_wei": report.contract_balance,
        "implied_balance_wei": report.implied_balance,
        "balances": dict(report.contract_balances),
        "ledger": dict(report.ledger_by_kind),
        "pending": list(report.pending),
        "timings_s": dict(report.timings),
    }


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temp file in the same directory (fsync, rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_outputs(report: AuditReport, json_path: Path | None, html_path: Path | None) -> None:
    """Render everything first, then write each file atomically."""
    rendered = []
    if json_path is not None:
        rendered.append((json_path, json.dumps(build_json(report), indent=1, ensure_ascii=False) + "\n"))
    if html_path is not None:
        from auditor.html_report import render_html  # matplotlib only when HTML is asked for

        rendered.append((html_path, render_html(report)))
    for path, text in rendered:
        write_atomic(path, text)


# ---------------------------------------------------------------------------------------------
# terminal


def print_summary(report: AuditReport, console: Console, *, compact: bool = False) -> None:
    """Rich tables: checks, rounds, shares, slashes, balance, pending; a one-line verdict last."""
    h = report.history
    console.print(
        f"[bold]audit of run {h.run_id}[/] at block {report.block} ({_iso(report.block_time)}): "
        f"{len(h.settled_rounds)}/{h.terms.max_rounds} rounds settled, artifacts from {report.sources}"
    )
    table = Table(title="checks", title_justify="left", show_lines=False)
    table.add_column("check")
    table.add_column("result")
    table.add_column("evidence", overflow="fold")
    for c in report.checks:
        table.add_row(c.name, "[green]pass[/]" if c.passed else "[bold red]FAIL[/]", c.detail)
    for w in report.warnings:
        table.add_row(w.name, "[bold yellow]WARN[/]", w.detail)
    console.print(table)
    rounds = Table(title="rounds", title_justify="left")
    disputes = any(rnd.disputes for rnd in h.rounds)
    plants = any(rnd.planted for rnd in h.rounds)
    columns = [
        "round",
        "status",
        "θ_r",
        "commits (accepted)",
        "pass/fail",
        *(["disputes"] if disputes else []),
        *(["plants"] if plants else []),
        "loss",
        "θ_(r+1) re-derived",
    ]
    for column in columns:
        rounds.add_column(column, justify="right" if column in ("round", "loss", "disputes") else "left")
    derived = {d.round: d for d in report.derivations}
    for rnd in h.rounds:
        passes = sum(1 for a in rnd.attestations if not a.is_fail)
        loss = report.losses.get(rnd.index)
        d = derived.get(rnd.index)
        rederived = "-" if d is None else ("[green]yes[/]" if d.problem is None else f"[red]{d.problem}[/]")
        rounds.add_row(
            str(rnd.index),
            get_round_phase(h, rnd.index, report.block_time),
            short(rnd.theta_hash, 10),
            f"{len(rnd.commitments)} ({len(rnd.accepted)})",
            f"{passes}/{len(rnd.attestations) - passes}",
            *([str(len(rnd.disputes))] if disputes else []),
            *([summarize_plants(rnd)] if plants else []),
            "-" if loss is None else f"{loss:.4f}",
            rederived,
        )
    if h.finished and len(h.rounds) in report.losses:
        blanks = [""] * (len(columns) - 6)
        rounds.add_row(
            "final", "", short(h.rounds[-1].next_theta_hash, 10), "", *blanks, f"{report.losses[len(h.rounds)]:.4f}", ""
        )
    console.print(rounds)
    terms = h.plants.terms
    if terms is not None and terms.rate_bps:
        jackpots = ", ".join(f"{h.label_of(v)} {_eth(w)}" for v, w in h.jackpots.items()) or "none"
        console.print(
            f"plants: {terms.rate_bps / 100:g}% of commitments, jackpot {_eth(terms.jackpot)} ETH, penalty "
            f"{_eth(terms.penalty)} ETH; pool {_eth(h.plants.pool)} ETH, forfeits held "
            f"{_eth(sum(r.forfeits_held for r in h.rounds))} ETH; jackpots earned (ETH): {jackpots}",
            highlight=False,
        )
    if not compact:
        holders = Table(title=f"ownership shares (total {_shares(h.total_supply)})", title_justify="left")
        holders.add_column("holder")
        holders.add_column("address")
        holders.add_column("shares", justify="right")
        for address, amount in sorted(h.share_balances, key=lambda x: -x[1]):
            holders.add_row(h.label_of(address), address, _shares(amount))
        console.print(holders)
    if h.slashes:
        slashes = Table(title="slashed", title_justify="left")
        for column in ("participant", "address", "role", "fault", "round", "ETH"):
            slashes.add_column(column)
        for x in h.slashes:
            slashes.add_row(h.label_of(x.account), x.account, x.role, x.fault, str(x.round), _eth(x.amount))
        console.print(slashes)
    console.print(
        f"contracts hold {_eth(report.contract_balance)} ETH; the events imply {_eth(report.implied_balance)} ETH"
    )
    if report.pending:
        shown = report.pending[:8] if compact else report.pending
        console.print(f"[bold]pending[/] ({len(report.pending)}):")
        for item in shown:
            console.print(f"  - {item}", highlight=False)
        if len(shown) < len(report.pending):
            console.print(f"  ... and {len(report.pending) - len(shown)} more (see the JSON / HTML report)")
    failed = report.failed
    warned = f"; [bold yellow]{len(report.warnings)} warning(s):[/] " + ", ".join(w.name for w in report.warnings)
    if failed:
        console.print(
            f"[bold red]{len(failed)} of {len(report.checks)} checks failed:[/] "
            + ", ".join(c.name for c in failed)
            + (warned if report.warnings else "")
        )
    else:
        console.print(f"[bold green]all {len(report.checks)} checks passed[/]" + (warned if report.warnings else ""))
