"""The audit's three outputs: a terminal summary (rich), a JSON export, a self-contained HTML report.

The HTML has no scripts and no external references: styles are inline, the plots (loss per
round, shares per holder, stake and slashing over time) are matplotlib SVGs embedded as
base64 `data:` images, so the file opens anywhere without a network. Files are written
atomically (temp file in the same directory, fsync, rename): a reader never sees half a report.
The JSON schema is documented in docs/audit.md (`schema` = "gradledger-audit/1").
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from auditor.audit import AuditReport
from auditor.checks import judge_document, short
from protocol.history import get_round_phase
from protocol.run_records import RunHistory

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
                    "accepted": rnd.is_accepted(c.solver),
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
                "accepted_tokens": rnd.accepted_tokens,
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


def build_json(report: AuditReport) -> dict[str, Any]:
    """The JSON export (schema in docs/audit.md)."""
    h = report.history
    s = h.settings
    revenue_kinds = (
        "reward pool",
        "pool funded",
        "pool released",
        "revenue paid",
        "revenue withdrawn",
        "unowned swept",
    )
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
            "settings": {k: getattr(s, k) for k in s.__dataclass_fields__},
        },
        "checks": [c.to_json() for c in report.checks],
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
        f"{len(h.settled_rounds)}/{h.settings.max_rounds} rounds settled, artifacts from {report.sources}"
    )
    table = Table(title="checks", title_justify="left", show_lines=False)
    table.add_column("check")
    table.add_column("result")
    table.add_column("evidence", overflow="fold")
    for c in report.checks:
        table.add_row(c.name, "[green]pass[/]" if c.passed else "[bold red]FAIL[/]", c.detail)
    console.print(table)
    rounds = Table(title="rounds", title_justify="left")
    disputes = any(rnd.disputes for rnd in h.rounds)
    columns = [
        "round",
        "status",
        "θ_r",
        "commits (accepted)",
        "pass/fail",
        *(["disputes"] if disputes else []),
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
            "-" if loss is None else f"{loss:.4f}",
            rederived,
        )
    if h.finished and len(h.rounds) in report.losses:
        blanks = [""] * (len(columns) - 6)
        rounds.add_row(
            "final", "", short(h.rounds[-1].next_theta_hash, 10), "", *blanks, f"{report.losses[len(h.rounds)]:.4f}", ""
        )
    console.print(rounds)
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
    if failed:
        console.print(
            f"[bold red]{len(failed)} of {len(report.checks)} checks failed:[/] " + ", ".join(c.name for c in failed)
        )
    else:
        console.print(f"[bold green]all {len(report.checks)} checks passed[/]")


# ---------------------------------------------------------------------------------------------
# HTML


def _svg_data_uri(fig: Any) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode()


def _figure(width: float = 7.5, height: float = 3.3):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100)
    return fig, fig.add_subplot(1, 1, 1)


def plot_loss(report: AuditReport) -> str | None:
    if not report.losses:
        return None
    fig, ax = _figure()
    xs = sorted(report.losses)
    ax.plot(xs, [report.losses[x] for x in xs], marker="o", color=LOSS_COLOR, linewidth=2.5, markersize=7)
    ax.set_xlabel("round r (θ_r = model after r settled rounds)")
    ax.set_ylabel("held-out loss")
    ax.set_title("loss per round")
    ax.set_xticks(xs)
    ax.grid(alpha=0.3)
    return _svg_data_uri(fig)


def plot_shares(history: RunHistory) -> str | None:
    if not history.mints:
        return None
    holders = sorted({m.holder for m in history.mints}, key=lambda a: history.label_of(a))
    fig, ax = _figure(7.5, max(2.2, 0.55 * len(holders) + 1.2))
    left = [0.0] * len(holders)
    for kind, color in KIND_COLORS.items():
        values = [sum(m.amount for m in history.mints if m.holder == h and m.kind == kind) / 1e18 for h in holders]
        if any(values):
            ax.barh([history.label_of(h) for h in holders], values, left=left, color=color, label=kind)
            left = [a + b for a, b in zip(left, values, strict=True)]
    ax.set_xlabel("shares")
    ax.set_title("shares per holder (minted, by kind of work)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    return _svg_data_uri(fig)


def plot_stakes(history: RunHistory) -> str | None:
    """Stake (bonded + unbonding) of every participant and role over time, stacked; slashes marked."""
    if not history.stakes:
        return None
    fig, ax = _figure(7.5, 3.6)
    origin = history.created_time or 0
    series: dict[tuple[str, str], list[Any]] = {}
    for p in history.stakes:
        series.setdefault((p.account, p.role), []).append(p)
    end = max(p.time or origin for p in history.stakes)
    end = max([end, *((r.settled_time or r.start_time) for r in history.rounds)])
    minutes = sorted({((p.time or origin) - origin) / 60 for p in history.stakes} | {(end - origin) / 60})

    def value_at(points: list[Any], x: float) -> float:
        current = 0.0
        for p in points:
            if ((p.time or origin) - origin) / 60 <= x:
                current = (p.bonded + p.unbonding) / 1e18
        return current

    lower = [0.0] * len(minutes)
    tops: dict[tuple[str, str], list[float]] = {}
    ordered = sorted(series.items(), key=lambda kv: (history.label_of(kv[0][0]), kv[0][1]))
    for n, (key, points) in enumerate(ordered):
        upper = [low + value_at(points, x) for low, x in zip(lower, minutes, strict=True)]
        ax.fill_between(
            minutes,
            lower,
            upper,
            step="post",
            color=STAKE_COLORS[n % len(STAKE_COLORS)],
            linewidth=0.6,
            edgecolor="white",
            label=f"{history.label_of(key[0])} ({key[1]})",
        )
        tops[key] = upper
        lower = upper
    for x in history.slashes:
        t = ((x.time or origin) - origin) / 60
        index = max(i for i, m in enumerate(minutes) if m <= t)
        before = tops[(x.account, x.role)][index - 1] if index else 0.0
        ax.plot([t], [before], marker="X", color=SLASH_COLOR, markersize=12, linestyle="none")
        ax.annotate(
            f"{history.label_of(x.account)} slashed {x.amount / 1e18:g} ETH",
            (t, before),
            textcoords="offset points",
            xytext=(6, 6),
            color=SLASH_COLOR,
            fontsize=8,
        )
    ax.set_ylim(0, max(max(lower), 1e-9) * 1.15)
    ax.set_xlabel("minutes since the run was created")
    ax.set_ylabel("stake (ETH), stacked")
    ax.set_title("stake and slashing over time")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(alpha=0.3)
    return _svg_data_uri(fig)


_CSS = """
body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:24px auto;max-width:1180px;color:#222}
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
.meta{color:#555;font-size:13px}.verdict{padding:10px 14px;border-radius:6px;font-weight:600;margin:14px 0}
.ok{background:#e6f4ea;color:#1e6b34}.bad{background:#fde8e8;color:#9b1c1c}
table{border-collapse:collapse;font-size:13px;width:100%;margin:8px 0}
th,td{border:1px solid #ddd;padding:4px 7px;text-align:left;vertical-align:top}th{background:#f4f4f4}
td.pass{color:#1e6b34;font-weight:600}td.fail{color:#9b1c1c;font-weight:700}code{font-size:12px}
.plots{display:flex;flex-wrap:wrap;gap:12px}.plots figure{margin:0;flex:0 1 calc(50% - 6px)}
.plots img{width:100%;border:1px solid #eee}.num{text-align:right;font-variant-numeric:tabular-nums}
"""


def _table(headers: Iterable[str], rows: Iterable[Iterable[Any]], numeric: Iterable[int] = ()) -> str:
    right = set(numeric)
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for i, value in enumerate(row):
            if isinstance(value, tuple):  # (html already escaped, css class)
                cells.append(f'<td class="{value[1]}">{value[0]}</td>')
            else:
                cls = ' class="num"' if i in right else ""
                cells.append(f"<td{cls}>{html.escape(str(value))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def render_html(report: AuditReport) -> str:
    """A self-contained HTML report: no scripts, no external references."""
    h = report.history
    data = build_json(report)
    e = html.escape
    failed = report.failed
    verdict = (
        f'<div class="verdict ok">all {len(report.checks)} checks passed</div>'
        if not failed
        else f'<div class="verdict bad">{len(failed)} of {len(report.checks)} checks failed: '
        f"{e(', '.join(c.name for c in failed))}</div>"
    )
    checks_table = _table(
        ("check", "result", "evidence"),
        [(c.name, ("pass", "pass") if c.passed else ("FAIL", "fail"), c.detail) for c in report.checks],
    )
    plots = [
        ("loss", plot_loss(report), "held-out loss of θ_r"),
        ("shares", plot_shares(h), "shares per holder"),
        ("stakes", plot_stakes(h), "stake and slashing over time"),
    ]
    figures = "".join(
        f'<figure id="plot-{name}"><img alt="{e(alt)}" src="{uri}"></figure>' for name, uri, alt in plots if uri
    )
    round_rows = []
    for entry in data["rounds"]:
        round_rows.append(
            (
                entry["round"],
                entry["phase"],
                short(entry["theta_hash"], 14),
                f"{len(entry['commitments'])} ({len(entry['accepted'])})",
                sum(1 for a in entry["attestations"] if a["kind"] == "pass"),
                sum(1 for a in entry["attestations"] if a["kind"] == "fail"),
                len(entry["disputes"]),
                "-" if entry["loss"] is None else f"{entry['loss']:.4f}",
                short(entry["settled_theta_hash"], 14),
                "-" if entry["rederived_theta_hash"] is None else ("yes" if entry["rederived"] else "NO"),
            )
        )
    commitment_rows = [
        (
            entry["round"],
            c["label"],
            c["solver"],
            short(c["root"], 14),
            c["tokens"],
            "yes" if c["accepted"] else "no",
            c["document"],
            c["checkpoints_checked"],
        )
        for entry in data["rounds"]
        for c in entry["commitments"]
    ]
    attestation_rows = [
        (
            entry["round"],
            a["label"],
            h.label_of(a["solver"]),
            a["slot"],
            a["kind"],
            a["state"],
            "-" if a["segment_index"] is None else a["segment_index"],
        )
        for entry in data["rounds"]
        for a in entry["attestations"]
    ]
    dispute_rows = [
        (
            entry["round"],
            x["kind"],
            short(x["dispute_id"], 14),
            h.label_of(x["challenger"]),
            x["status"],
            {True: "challenger", False: "defendant", None: "-"}[x["challenger_wins"]],
            x["signers"],
            _eth(x["total_wei"]),
        )
        for entry in data["rounds"]
        for x in entry["disputes"]
    ]
    share_rows = [(h.label_of(a), a, _shares(v)) for a, v in sorted(h.share_balances, key=lambda x: -x[1])]
    slash_rows = [
        (x["label"], x["address"], x["role"], x["fault"], x["round"], _eth(x["amount_wei"])) for x in data["slashed"]
    ]
    balance_rows = [(name, _eth(wei)) for name, wei in sorted(report.contract_balances.items())]
    balance_rows.append(("total held", _eth(report.contract_balance)))
    balance_rows.append(("implied by the events", _eth(report.implied_balance)))
    ledger_rows = [(kind, _eth(wei)) for kind, wei in sorted(report.ledger_by_kind.items())]
    revenue = data["revenue"]
    revenue_rows = [(k.removesuffix("_wei").replace("_", " "), _eth(v)) for k, v in revenue.items() if k != "flows"]
    participants = [(p["label"], p["address"], ", ".join(p["roles"])) for p in data["participants"]]
    pending = "".join(f"<li>{e(p)}</li>" for p in report.pending) or "<li>nothing pending</li>"
    sections = [
        f"<h1>gradledger audit: run {h.run_id}</h1>",
        f'<p class="meta">chain {report.chain_id} at block {report.block} ({e(str(_iso(report.block_time)))}); '
        f"{len(h.settled_rounds)}/{h.settings.max_rounds} rounds settled; run created by {e(h.creator)}; "
        f"share token {e(h.share_token)}; artifacts from {e(report.sources)}</p>",
        verdict,
        "<h2>checks</h2>",
        checks_table,
        "<h2>plots</h2>",
        f'<div class="plots">{figures}</div>',
        "<h2>rounds</h2>",
        _table(
            (
                "round",
                "status",
                "θ_r",
                "commitments (accepted)",
                "passes",
                "fails",
                "disputes",
                "loss of θ_r",
                "θ_(r+1) settled",
                "re-derived",
            ),
            round_rows,
            (0, 4, 5, 6, 7),
        ),
        "<h2>commitments</h2>",
        _table(
            ("round", "solver", "address", "root", "tokens", "accepted", "document", "checkpoints"),
            commitment_rows,
            (0, 4, 7),
        ),
        "<h2>attestations</h2>",
        _table(("round", "verifier", "solver", "slot", "kind", "state", "segment"), attestation_rows, (0, 3)),
        "<h2>challenges and verdicts</h2>",
        _table(
            ("round", "kind", "dispute", "challenger", "status", "winner", "signers", "ETH at stake"),
            dispute_rows,
            (0, 6),
        )
        if dispute_rows
        else "<p>no challenges</p>",
        "<h2>slashed</h2>",
        _table(("participant", "address", "role", "fault", "round", "ETH"), slash_rows, (4, 5))
        if slash_rows
        else "<p>nobody was slashed</p>",
        "<h2>ownership shares</h2>",
        _table(("holder", "address", "shares"), share_rows, (2,)),
        "<h2>revenue</h2>",
        _table(("flow", "ETH"), revenue_rows, (1,)),
        "<h2>ETH held by the contracts</h2>",
        _table(("contract", "ETH"), balance_rows, (1,)),
        _table(("ledger (events)", "ETH"), ledger_rows, (1,)),
        "<h2>participants</h2>",
        _table(("label", "address", "roles"), participants),
        "<h2>pending</h2>",
        f"<ul>{pending}</ul>",
        f'<p class="meta">gradledger audit, schema {SCHEMA}; timings {e(json.dumps(report.timings))}</p>',
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>gradledger audit of run {h.run_id}</title><style>{_CSS}</style></head>"
        f"<body>{''.join(sections)}</body></html>\n"
    )
