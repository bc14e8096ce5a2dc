"""The audit's self-contained HTML report: inline styles, matplotlib SVG plots as `data:` images.

No scripts and no external references, so the file opens anywhere without a network. Kept apart
from auditor/report.py so the terminal summary and JSON export never import matplotlib.
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections.abc import Iterable
from typing import Any

from auditor.audit import AuditReport
from auditor.checks import short
from auditor.report import (
    KIND_COLORS,
    LOSS_COLOR,
    SCHEMA,
    SLASH_COLOR,
    STAKE_COLORS,
    _eth,
    _iso,
    _shares,
    build_json,
    describe_plant,
    summarize_plants,
)
from protocol.history.records import RunHistory


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


def _plants_section(h: RunHistory) -> list[str]:
    """The run's plant terms, pool and jackpots per verifier (nothing when the run does not plant)."""
    terms = h.plants.terms
    if terms is None or not terms.rate_bps:
        return []
    rows = [(h.label_of(v), v, _eth(wei)) for v, wei in sorted(h.jackpots.items())]
    anchors = (
        ", ".join(
            f"{h.label_of(a.solver)} ({'before the start' if a.early else f'round {a.round}'})"
            for a in h.plants.anchors
        )
        or "none"
    )
    summary = (
        f"<p>{terms.rate_bps / 100:g}% of commitments planted; jackpot {_eth(terms.jackpot)} ETH per fail on a "
        f"planted commitment, penalty {_eth(terms.penalty)} ETH per pass on one; pool now {_eth(h.plants.pool)} ETH; "
        f"forfeits held until settlement {_eth(sum(r.forfeits_held for r in h.rounds))} ETH; "
        f"anchors: {html.escape(anchors)}</p>"
    )
    table = _table(("verifier", "address", "jackpots (ETH)"), rows, (2,)) if rows else "<p>no jackpot paid</p>"
    return ["<h2>planted faults</h2>", summary, table]


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
    if report.warnings:
        verdict += (
            f'<div class="verdict warn">{len(report.warnings)} warning(s): '
            f"{e('; '.join(w.detail for w in report.warnings))}</div>"
        )
    checks_table = _table(
        ("check", "result", "evidence"),
        [(c.name, ("pass", "pass") if c.passed else ("FAIL", "fail"), c.detail) for c in report.checks]
        + [(w.name, ("WARN", "warn"), w.detail) for w in report.warnings],
    )
    plots = [
        ("loss", plot_loss(report), "held-out loss of θ_r"),
        ("shares", plot_shares(h), "shares per holder"),
        ("stakes", plot_stakes(h), "stake and slashing over time"),
    ]
    figures = "".join(
        f'<figure id="plot-{name}"><img alt="{e(alt)}" src="{uri}"></figure>' for name, uri, alt in plots if uri
    )
    plants = any(rnd.planted for rnd in h.rounds)
    round_rows = []
    for rnd, entry in zip(h.rounds, data["rounds"], strict=True):
        round_rows.append(
            (
                entry["round"],
                entry["phase"],
                short(entry["theta_hash"], 14),
                f"{len(entry['commitments'])} ({len(entry['accepted'])})",
                sum(1 for a in entry["attestations"] if a["kind"] == "pass"),
                sum(1 for a in entry["attestations"] if a["kind"] == "fail"),
                len(entry["disputes"]),
                *([summarize_plants(rnd)] if plants else []),
                "-" if entry["loss"] is None else f"{entry['loss']:.4f}",
                short(entry["settled_theta_hash"], 14),
                "-" if entry["rederived_theta_hash"] is None else ("yes" if entry["rederived"] else "NO"),
            )
        )
    planting = any(rnd.plants_on for rnd in h.rounds)
    commitment_rows = [
        (
            rnd.index,
            h.label_of(c.solver),
            c.solver,
            short(c.root, 14),
            c.tokens,
            c.opening,
            "yes" if rnd.is_accepted(c.solver) else "no",
            *(["yes" if rnd.is_paid(c.solver) else "no", describe_plant(rnd, c)] if planting else []),
            entry["document"],
            entry["checkpoints_checked"],
        )
        for rnd, round_entry in zip(h.rounds, data["rounds"], strict=True)
        for c, entry in zip(rnd.commitments, round_entry["commitments"], strict=True)
    ]
    attestation_rows = [
        (
            entry["round"],
            a["label"],
            h.label_of(a["solver"]),
            a["slot"],
            a["kind"],
            a["state"] + (" (plant)" if a["planted"] else ""),
            "-" if a["segment_index"] is None else a["segment_index"],
        )
        for entry in data["rounds"]
        for a in entry["attestations"]
    ] + [
        (entry["round"], x["label"], h.label_of(x["solver"]), x["slot"], "-", "abstained (reported)", "-")
        for entry in data["rounds"]
        for x in entry["abstentions"]
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
        f"{len(h.settled_rounds)}/{h.terms.max_rounds} rounds settled; run created by {e(h.creator)}; "
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
                *(["plants"] if plants else []),
                "loss of θ_r",
                "θ_(r+1) settled",
                "re-derived",
            ),
            round_rows,
            (0, 4, 5, 6, 8 if plants else 7),
        ),
        *_plants_section(h),
        "<h2>commitments</h2>",
        _table(
            (
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
            ),
            commitment_rows,
            (0, 4, 10 if planting else 8),
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
