"""The audit's terminal summary (rich tables): a pure function of the report model (auditor/report_model.py).

Checks first (a failure is what an operator must see), then rounds, plants, shares, slashes, the ETH balance and
what is pending; a one-line verdict last, so the end of the output says whether the run passed.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from auditor.checks import short
from auditor.report_model import AuditReportModel, RoundView, format_eth, format_iso, format_shares

PENDING_SHOWN_COMPACT = 8
"""Pending items a compact summary (the demo's) lists before pointing at the JSON / HTML report."""


def _print_rounds(model: AuditReportModel, console: Console) -> None:
    rounds = Table(title="rounds", title_justify="left")
    disputes = any(rnd.disputes for rnd in model.rounds)
    plants = any(rnd.plants.planted for rnd in model.rounds)
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
    for rnd in model.rounds:
        rounds.add_row(
            str(rnd.index),
            rnd.phase,
            short(rnd.theta_hash, 10),
            f"{len(rnd.commitments)} ({len(rnd.accepted)})",
            f"{rnd.passes}/{rnd.fails}",
            *([str(len(rnd.disputes))] if disputes else []),
            *([rnd.plants.summary] if plants else []),
            "-" if rnd.loss is None else f"{rnd.loss:.4f}",
            _rederived_cell(rnd),
        )
    if model.final_loss is not None:
        blanks = [""] * (len(columns) - 6)
        rounds.add_row("final", "", short(model.final_theta_hash, 10), "", *blanks, f"{model.final_loss:.4f}", "")
    console.print(rounds)


def _rederived_cell(rnd: RoundView) -> str:
    if rnd.derivation is None:
        return "-"
    return "[green]yes[/]" if rnd.derivation.problem is None else f"[red]{rnd.derivation.problem}[/]"


def _print_plants(model: AuditReportModel, console: Console) -> None:
    plants = model.run.plants
    if plants is None or not plants.terms.rate_bps:
        return
    terms = plants.terms
    jackpots = ", ".join(f"{model.label_of(v)} {format_eth(w)}" for v, w in plants.jackpots.items()) or "none"
    console.print(
        f"plants: {terms.rate_bps / 100:g}% of commitments, jackpot {format_eth(terms.jackpot)} ETH, penalty "
        f"{format_eth(terms.penalty)} ETH; pool {format_eth(plants.pool)} ETH, forfeits held "
        f"{format_eth(plants.forfeits_held)} ETH; jackpots earned (ETH): {jackpots}",
        highlight=False,
    )


def _print_verdict(model: AuditReportModel, console: Console) -> None:
    failed = model.failed
    warned = f"; [bold yellow]{len(model.warnings)} warning(s):[/] " + ", ".join(w.name for w in model.warnings)
    if failed:
        console.print(
            f"[bold red]{len(failed)} of {len(model.checks)} checks failed:[/] "
            + ", ".join(c.name for c in failed)
            + (warned if model.warnings else "")
        )
    else:
        console.print(f"[bold green]all {len(model.checks)} checks passed[/]" + (warned if model.warnings else ""))


def render_terminal(model: AuditReportModel, console: Console, *, compact: bool = False) -> None:
    """Rich tables: checks, rounds, shares, slashes, balance, pending; a one-line verdict last. `compact` leaves out
    the share holders and lists at most PENDING_SHOWN_COMPACT pending items."""
    console.print(
        f"[bold]audit of run {model.run_id}[/] at block {model.block} ({format_iso(model.block_time)}): "
        f"{model.run.rounds_settled}/{model.run.max_rounds} rounds settled, artifacts from {model.sources}"
    )
    table = Table(title="checks", title_justify="left", show_lines=False)
    table.add_column("check")
    table.add_column("result")
    table.add_column("evidence", overflow="fold")
    for c in model.checks:
        table.add_row(c.name, "[green]pass[/]" if c.passed else "[bold red]FAIL[/]", c.detail)
    for w in model.warnings:
        table.add_row(w.name, "[bold yellow]WARN[/]", w.detail)
    console.print(table)
    _print_rounds(model, console)
    _print_plants(model, console)
    if not compact:
        holders = Table(title=f"ownership shares (total {format_shares(model.total_shares)})", title_justify="left")
        holders.add_column("holder")
        holders.add_column("address")
        holders.add_column("shares", justify="right")
        for address, amount in sorted(model.share_balances, key=lambda x: -x[1]):
            holders.add_row(model.label_of(address), address, format_shares(amount))
        console.print(holders)
    if model.slashes:
        slashes = Table(title="slashed", title_justify="left")
        for column in ("participant", "address", "role", "fault", "round", "ETH"):
            slashes.add_column(column)
        for x in model.slashes:
            slashes.add_row(model.label_of(x.account), x.account, x.role, x.fault, str(x.round), format_eth(x.amount))
        console.print(slashes)
    console.print(
        f"contracts hold {format_eth(model.contract_balance)} ETH; "
        f"the events imply {format_eth(model.implied_balance)} ETH"
    )
    if model.pending:
        shown = model.pending[:PENDING_SHOWN_COMPACT] if compact else model.pending
        console.print(f"[bold]pending[/] ({len(model.pending)}):")
        for item in shown:
            console.print(f"  - {item}", highlight=False)
        if len(shown) < len(model.pending):
            console.print(f"  ... and {len(model.pending) - len(shown)} more (see the JSON / HTML report)")
    _print_verdict(model, console)
