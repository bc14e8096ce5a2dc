"""The audit's self-contained HTML report: a pure function of the report model (auditor/report_model.py).

No scripts and no external references, so the file opens anywhere without a network: styles are inline and the
plots (auditor/plots.py) are SVGs embedded as `data:` images. Kept apart from the terminal summary and the JSON
export so those never import matplotlib.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from typing import Any

from auditor.checks import short
from auditor.json_report import SCHEMA
from auditor.plots import plot_loss, plot_shares, plot_stakes
from auditor.report_model import AuditReportModel, format_eth, format_iso, format_shares

_CSS = """
body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:24px auto;max-width:1180px;color:#222}
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
.meta{color:#555;font-size:13px}.verdict{padding:10px 14px;border-radius:6px;font-weight:600;margin:14px 0}
.ok{background:#e6f4ea;color:#1e6b34}.bad{background:#fde8e8;color:#9b1c1c}.warn{background:#fff4d6;color:#7a5300}
table{border-collapse:collapse;font-size:13px;width:100%;margin:8px 0}
th,td{border:1px solid #ddd;padding:4px 7px;text-align:left;vertical-align:top}th{background:#f4f4f4}
td.pass{color:#1e6b34;font-weight:600}td.fail{color:#9b1c1c;font-weight:700}td.warn{color:#7a5300;font-weight:700}code{font-size:12px}
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


def _plants_section(model: AuditReportModel) -> list[str]:
    """The run's plant terms, pool and jackpots per verifier (nothing when the run does not plant)."""
    plants = model.run.plants
    if plants is None or not plants.terms.rate_bps:
        return []
    terms = plants.terms
    rows = [(model.label_of(v), v, format_eth(wei)) for v, wei in sorted(plants.jackpots.items())]
    anchors = (
        ", ".join(
            f"{model.label_of(a.solver)} ({'before the start' if a.early else f'round {a.round}'})"
            for a in plants.anchors
        )
        or "none"
    )
    summary = (
        f"<p>{terms.rate_bps / 100:g}% of commitments planted; jackpot {format_eth(terms.jackpot)} ETH per fail on a "
        f"planted commitment, penalty {format_eth(terms.penalty)} ETH per pass on one; "
        f"pool now {format_eth(plants.pool)} ETH; "
        f"forfeits held until settlement {format_eth(plants.forfeits_held)} ETH; "
        f"anchors: {html.escape(anchors)}</p>"
    )
    table = _table(("verifier", "address", "jackpots (ETH)"), rows, (2,)) if rows else "<p>no jackpot paid</p>"
    return ["<h2>planted faults</h2>", summary, table]


def _verdict(model: AuditReportModel) -> str:
    e = html.escape
    failed = model.failed
    verdict = (
        f'<div class="verdict ok">all {len(model.checks)} checks passed</div>'
        if not failed
        else f'<div class="verdict bad">{len(failed)} of {len(model.checks)} checks failed: '
        f"{e(', '.join(c.name for c in failed))}</div>"
    )
    if model.warnings:
        verdict += (
            f'<div class="verdict warn">{len(model.warnings)} warning(s): '
            f"{e('; '.join(w.detail for w in model.warnings))}</div>"
        )
    return verdict


def _rounds_table(model: AuditReportModel) -> str:
    plants = any(rnd.plants.planted for rnd in model.rounds)
    rows = [
        (
            rnd.index,
            rnd.phase,
            short(rnd.theta_hash, 14),
            f"{len(rnd.commitments)} ({len(rnd.accepted)})",
            rnd.passes,
            rnd.fails,
            len(rnd.disputes),
            *([rnd.plants.summary] if plants else []),
            "-" if rnd.loss is None else f"{rnd.loss:.4f}",
            short(rnd.next_theta_hash, 14),
            "-" if rnd.derivation is None or rnd.derivation.derived is None else ("yes" if rnd.rederived else "NO"),
        )
        for rnd in model.rounds
    ]
    headers = (
        "round",
        "status",
        "θ_r",
        "commitments (accepted)",
        "passes",
        "fails",
        "disputes",
        *(["plants"] if plants else []),
        "loss of θ_r",
        "θ_(r+1) settled",
        "re-derived",
    )
    return _table(headers, rows, (0, 4, 5, 6, 8 if plants else 7))


def _commitments_table(model: AuditReportModel) -> str:
    planting = any(rnd.plants_on for rnd in model.rounds)
    rows = [
        (
            rnd.index,
            c.label,
            c.commitment.solver,
            short(c.commitment.root, 14),
            c.commitment.tokens,
            c.commitment.opening,
            "yes" if c.accepted else "no",
            *(["yes" if c.paid else "no", c.plant] if planting else []),
            c.document,
            c.checkpoints_checked,
        )
        for rnd in model.rounds
        for c in rnd.commitments
    ]
    headers = (
        "round",
        "solver",
        "address",
        "root",
        "tokens",
        "opening",
        "Δ accepted",
        *(["paid", "plant"] if planting else []),
        "document",
        "checkpoints",
    )
    return _table(headers, rows, (0, 4, 10 if planting else 8))


def _attestations_table(model: AuditReportModel) -> str:
    rows = [
        (
            rnd.index,
            model.label_of(a.verifier),
            model.label_of(a.solver),
            a.slot,
            a.kind,
            a.state + (" (plant)" if a.planted else ""),
            "-" if a.segment_index is None else a.segment_index,
        )
        for rnd in model.rounds
        for a in rnd.attestations
    ] + [
        (rnd.index, model.label_of(x.verifier), model.label_of(x.solver), x.slot, "-", "abstained (reported)", "-")
        for rnd in model.rounds
        for x in rnd.abstentions
    ]
    return _table(("round", "verifier", "solver", "slot", "kind", "state", "segment"), rows, (0, 3))


def _disputes_section(model: AuditReportModel) -> str:
    rows = [
        (
            rnd.index,
            x.kind,
            short(x.dispute_id, 14),
            model.label_of(x.challenger),
            x.status,
            {True: "challenger", False: "defendant", None: "-"}[x.challenger_wins],
            x.signer_count,
            format_eth(x.total),
        )
        for rnd in model.rounds
        for x in rnd.disputes
    ]
    if not rows:
        return "<p>no challenges</p>"
    headers = ("round", "kind", "dispute", "challenger", "status", "winner", "signers", "ETH at stake")
    return _table(headers, rows, (0, 6))


def render_html(model: AuditReportModel) -> str:
    """A self-contained HTML report: no scripts, no external references."""
    e = html.escape
    run = model.run
    plots = [
        ("loss", plot_loss(model), "held-out loss of θ_r"),
        ("shares", plot_shares(model), "shares per holder"),
        ("stakes", plot_stakes(model), "stake and slashing over time"),
    ]
    figures = "".join(
        f'<figure id="plot-{name}"><img alt="{e(alt)}" src="{uri}"></figure>' for name, uri, alt in plots if uri
    )
    checks_table = _table(
        ("check", "result", "evidence"),
        [(c.name, ("pass", "pass") if c.passed else ("FAIL", "fail"), c.detail) for c in model.checks]
        + [(w.name, ("WARN", "warn"), w.detail) for w in model.warnings],
    )
    share_rows = [
        (model.label_of(a), a, format_shares(v)) for a, v in sorted(model.share_balances, key=lambda x: -x[1])
    ]
    slash_rows = [
        (model.label_of(x.account), x.account, x.role, x.fault, x.round, format_eth(x.amount)) for x in model.slashes
    ]
    balance_rows = [(name, format_eth(wei)) for name, wei in sorted(model.contract_balances.items())]
    balance_rows.append(("total held", format_eth(model.contract_balance)))
    balance_rows.append(("implied by the events", format_eth(model.implied_balance)))
    ledger_rows = [(kind, format_eth(wei)) for kind, wei in sorted(model.ledger_by_kind.items())]
    revenue_rows = [(kind, format_eth(wei)) for kind, wei in model.revenue_totals.items()]
    participants = [(p.label, p.address, ", ".join(p.roles)) for p in model.participants]
    pending = "".join(f"<li>{e(p)}</li>" for p in model.pending) or "<li>nothing pending</li>"
    sections = [
        f"<h1>gradledger audit: run {model.run_id}</h1>",
        f'<p class="meta">chain {model.chain_id} at block {model.block} ({e(str(format_iso(model.block_time)))}); '
        f"{run.rounds_settled}/{run.max_rounds} rounds settled; run created by {e(run.creator)}; "
        f"share token {e(run.share_token)}; artifacts from {e(model.sources)}</p>",
        _verdict(model),
        "<h2>checks</h2>",
        checks_table,
        "<h2>plots</h2>",
        f'<div class="plots">{figures}</div>',
        "<h2>rounds</h2>",
        _rounds_table(model),
        *_plants_section(model),
        "<h2>commitments</h2>",
        _commitments_table(model),
        "<h2>attestations</h2>",
        _attestations_table(model),
        "<h2>challenges and verdicts</h2>",
        _disputes_section(model),
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
        f'<p class="meta">gradledger audit, schema {SCHEMA}; timings {e(json.dumps(dict(model.timings)))}</p>',
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>gradledger audit of run {model.run_id}</title><style>{_CSS}</style></head>"
        f"<body>{''.join(sections)}</body></html>\n"
    )
