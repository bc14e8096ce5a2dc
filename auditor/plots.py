"""The audit report's plots (loss per round, shares per holder, stake and slashing over time): pure functions of
the report model (auditor/report_model.py), each returning a matplotlib SVG as a base64 `data:` URI (None when
there is nothing to draw), so the HTML report embeds them with no external reference.

matplotlib is imported inside `_figure`: only an HTML report pays for it, never the terminal summary or the JSON.
SVGs carry no date (`metadata={"Date": None}`), so the same audit renders the same bytes.
"""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING

from auditor.report_model import SHARE_KINDS, AuditReportModel
from protocol.history.records import StakePoint

if TYPE_CHECKING:  # matplotlib itself is imported only when a figure is drawn
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

KIND_COLORS = dict(zip(SHARE_KINDS, ("#1f77b4", "#2ca02c", "#9467bd"), strict=True))
LOSS_COLOR = "#1f77b4"
SLASH_COLOR = "#d62728"
STAKE_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")


def _svg_data_uri(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode()


def _figure(width: float = 7.5, height: float = 3.3) -> tuple[Figure, Axes]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100)
    return fig, fig.add_subplot(1, 1, 1)


def plot_loss(model: AuditReportModel) -> str | None:
    """Held-out loss of θ_r per round (None: no loss was evaluated)."""
    if not model.losses:
        return None
    fig, ax = _figure()
    xs = sorted(model.losses)
    ax.plot(xs, [model.losses[x] for x in xs], marker="o", color=LOSS_COLOR, linewidth=2.5, markersize=7)
    ax.set_xlabel("round r (θ_r = model after r settled rounds)")
    ax.set_ylabel("held-out loss")
    ax.set_title("loss per round")
    ax.set_xticks(xs)
    ax.grid(alpha=0.3)
    return _svg_data_uri(fig)


def plot_shares(model: AuditReportModel) -> str | None:
    """Shares minted per holder, stacked by kind of work (None: nothing minted)."""
    if not model.mints:
        return None
    holders = sorted({m.holder for m in model.mints}, key=lambda a: model.label_of(a))
    fig, ax = _figure(7.5, max(2.2, 0.55 * len(holders) + 1.2))
    left = [0.0] * len(holders)
    for kind, color in KIND_COLORS.items():
        values = [sum(m.amount for m in model.mints if m.holder == h and m.kind == kind) / 1e18 for h in holders]
        if any(values):
            ax.barh([model.label_of(h) for h in holders], values, left=left, color=color, label=kind)
            left = [a + b for a, b in zip(left, values, strict=True)]
    ax.set_xlabel("shares")
    ax.set_title("shares per holder (minted, by kind of work)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    return _svg_data_uri(fig)


def plot_stakes(model: AuditReportModel) -> str | None:
    """Stake (bonded + unbonding) of every participant and role over time, stacked; slashes marked."""
    if not model.stakes:
        return None
    fig, ax = _figure(7.5, 3.6)
    origin = model.run.created_time or 0
    series: dict[tuple[str, str], list[StakePoint]] = {}
    for p in model.stakes:
        series.setdefault((p.account, p.role), []).append(p)
    end = max(p.time or origin for p in model.stakes)
    end = max([end, *((r.settled_time or r.start_time) for r in model.rounds)])
    minutes = sorted({((p.time or origin) - origin) / 60 for p in model.stakes} | {(end - origin) / 60})

    def value_at(points: list[StakePoint], x: float) -> float:
        current = 0.0
        for p in points:
            if ((p.time or origin) - origin) / 60 <= x:
                current = (p.bonded + p.unbonding) / 1e18
        return current

    lower = [0.0] * len(minutes)
    tops: dict[tuple[str, str], list[float]] = {}
    ordered = sorted(series.items(), key=lambda kv: (model.label_of(kv[0][0]), kv[0][1]))
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
            label=f"{model.label_of(key[0])} ({key[1]})",
        )
        tops[key] = upper
        lower = upper
    for x in model.slashes:
        t = ((x.time or origin) - origin) / 60
        index = max(i for i, m in enumerate(minutes) if m <= t)
        before = tops[(x.account, x.role)][index - 1] if index else 0.0
        ax.plot([t], [before], marker="X", color=SLASH_COLOR, markersize=12, linestyle="none")
        ax.annotate(
            f"{model.label_of(x.account)} slashed {x.amount / 1e18:g} ETH",
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
