"""Choosing `ReplayThresholds` from calibration trials (sim/calibration.py), and the refusal rule.

What a threshold must do. `judge_tolerance` rejects a cross-profile replay as soon as ANY of its five
distances exceeds its threshold (the two sketch distances first, then the three exact ones). So:

- an honest replay is accepted only if it is within the threshold on EVERY metric: each threshold must
  lie above the largest honest distance on its metric (its "honest floor": the largest honest distance
  measured, at least the metric's resolution, so a metric on which no drift was seen is not set to 0);
- a cheat is caught if it exceeds the threshold on AT LEAST ONE metric. A cheating trial at or below the
  honest floor on every metric cannot be rejected by any thresholds that accept honest work: that is the
  refusal rule (`CalibrationRefused`, naming the cheat and its closest metric).

How the thresholds are chosen: one safety factor for everything. Each cheating trial t stands out most on
some metric, by the ratio R_t = distance / honest floor there. The hardest trial has the smallest R; the
safety factor is mu = sqrt(min R_t), and every threshold is mu x its honest floor. Then honest work has
margin mu on every metric and every measured cheat exceeds the threshold of its best metric by at least mu
(R_t / mu >= mu): the geometric midpoint between honest drift and the hardest cheat, the largest worst-case
margin any thresholds can give on both sides. A metric is never set tighter than the weakest link needs,
so drift on a profile the calibration could not produce has the same room everywhere. Two metrics are
bounded by what unrelated updates give (half the sign bits differ; orthogonal updates): their thresholds
are capped there (`SOFT_CAPS`).
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from protocol.config import ReplayThresholds, RunConfig
from protocol.errors import GradledgerError
from sim.calibration import METRICS, analyse, get_threshold_value, group_rows
from sim.trials import Row

FLOAT32_RESOLUTION = 2.0**-23
SOFT_CAPS = {"hamming": 0.5, "one_minus_cosine": 1.0}
"""Unrelated updates sit here (half the sign bits differ; orthogonal): thresholds above it only loosen."""
THIN_MARGIN = 2.0
"""Below this safety factor the thresholds are written with a warning: drift a little beyond the measured
profiles would reject honest work, or a cheat a little closer would pass."""


class CalibrationRefused(GradledgerError):
    """The measurements admit no thresholds: some cheat cannot be told from honest drift, or honest
    replays under the pinned profile were not bit-identical."""


@dataclass(frozen=True)
class MetricChoice:
    """One metric's threshold and the evidence it was chosen from."""

    metric: str
    threshold: float
    honest_max: float
    honest_floor: float
    closest_cheat: float | None
    """The smallest cheating distance above the threshold on this metric (None: no trial exceeds it)."""
    catches: tuple[str, ...]
    """The cheats with trials above the threshold on this metric."""

    def to_json(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "honest_max": self.honest_max,
            "honest_floor": self.honest_floor,
            "honest_margin": self.threshold / self.honest_floor,
            "closest_cheat": self.closest_cheat,
            "cheat_margin": self.closest_cheat / self.threshold if self.closest_cheat is not None else None,
            "catches": list(self.catches),
        }


@dataclass(frozen=True)
class ThresholdChoice:
    """Chosen thresholds with their evidence (`margins` in thresholds.json)."""

    thresholds: ReplayThresholds
    safety_factor: float
    """mu: every threshold's margin over honest drift, and every cheat's least margin over its threshold."""
    hardest: dict[str, Any]
    """The cheating trial that set mu: cheat, metric, distance, honest floor, where."""
    metrics: dict[str, MetricChoice] = field(default_factory=dict)

    def get_margins(self) -> dict[str, Any]:
        return {
            "safety_factor": self.safety_factor,
            "hardest_trial": self.hardest,
            "metrics": {metric: choice.to_json() for metric, choice in self.metrics.items()},
        }


def get_metric_resolution(config: RunConfig) -> dict[str, float]:
    """The smallest nonzero value each distance can take: one sketch bit, one quantum of the quantized
    log2 norm, float32 rounding for the exact distances."""
    return {
        "hamming": 1.0 / config.sketch.bits,
        "log2_norm": 1.0 / config.sketch.norm_scale,
        "relative_error": FLOAT32_RESOLUTION,
        "one_minus_cosine": FLOAT32_RESOLUTION,
        "global_relative_error": FLOAT32_RESOLUTION,
    }


def compute_honest_floor(rows: list[Row], config: RunConfig) -> dict[str, float]:
    """Per metric: max(largest honest cross-profile distance, the metric's resolution)."""
    honest = [r for r in rows if r["kind"] == "honest-cross"]
    if not honest:
        raise CalibrationRefused("no honest cross-profile trials were measured; run more jobs (--rounds)")
    resolution = get_metric_resolution(config)
    return {m: max(max(r[m] for r in honest), resolution[m]) for m in METRICS}


def _attack_trials(rows: list[Row]) -> list[Row]:
    # A precheck rejection does not depend on thresholds: such a trial is caught whatever they are.
    return [r for r in rows if r["kind"] == "attack-cross" and r["method"] != "precheck"]


def _best_metric(row: Row, floor: dict[str, float]) -> tuple[str, float]:
    ratios = {m: row[m] / floor[m] for m in METRICS}
    best = max(METRICS, key=lambda m: ratios[m])
    return best, ratios[best]


def verify_exact_replays(rows: list[Row]) -> None:
    """Refuse when an honest replay under the pinned profile was not bit-identical: exact verdicts would
    reject honest work, which no tolerance threshold repairs."""
    mismatches: defaultdict[str, int] = defaultdict(int)
    for row in rows:
        if row["kind"] == "honest-exact" and not row["accepted"]:
            mismatches[row["name"]] += 1
    if mismatches:
        detail = ", ".join(f"{name}: {count}" for name, count in sorted(mismatches.items()))
        raise CalibrationRefused(
            f"honest replays under the pinned execution profile were not bit-identical ({detail}); this model is "
            "not deterministic under the profile, so exact verdicts would reject honest work. Use a model whose "
            "ops are thread-invariant (elementary norms, eager attention) before calibrating"
        )


def describe_inseparable(rows: list[Row], floor: dict[str, float]) -> str | None:
    """Why no thresholds exist (the refusal message), or None when every cheating trial stands out."""
    inside: dict[str, list[tuple[Row, str]]] = defaultdict(list)
    trials: dict[str, int] = defaultdict(int)
    for row in _attack_trials(rows):
        trials[row["name"]] += 1
        metric, ratio = _best_metric(row, floor)
        if ratio <= 1.0:
            inside[row["name"]].append((row, metric))
    if not inside:
        return None
    parts = []
    for name, found in sorted(inside.items()):
        row, metric = max(found, key=lambda item: item[0][item[1]] / floor[item[1]])
        parts.append(
            f"cheat {name!r} sits inside the honest range on every metric in {len(found)} of {trials[name]} trials "
            f"(e.g. round {row['round']}, segment {row['segment']}, profile {row.get('profile', '?')}; its closest "
            f"metric is {metric}: {row[metric]:.3g} against an honest maximum of {floor[metric]:.3g})"
        )
    return (
        "; ".join(parts) + ". No thresholds reject it without rejecting honest cross-profile replays, so none are "
        "written: runs of this model must verify under the pinned profile (exact verdicts), or change the training "
        "settings (e.g. more steps per segment) and calibrate again"
    )


def _round_below(value: float, low: float) -> float:
    """`value` rounded down to 3 significant digits when that stays above `low` (readable JSON; rounding down
    keeps every cheat above its threshold)."""
    if value <= 0 or not math.isfinite(value):
        return value
    scale = 10.0 ** (math.floor(math.log10(value)) - 2)
    rounded = math.floor(value / scale) * scale
    rounded = float(f"{rounded:.3g}")
    return rounded if low < rounded <= value else value


def choose_thresholds(rows: list[Row], config: RunConfig) -> ThresholdChoice:
    """Thresholds from the trials (module docstring); raises CalibrationRefused when none exist."""
    floor = compute_honest_floor(rows, config)
    refusal = describe_inseparable(rows, floor)
    if refusal:
        raise CalibrationRefused(refusal)
    attacks = _attack_trials(rows)
    if not attacks:
        raise CalibrationRefused("no cheating trials were measured; run more jobs (--rounds)")
    hardest_row = min(attacks, key=lambda r: _best_metric(r, floor)[1])
    hardest_metric, hardest_ratio = _best_metric(hardest_row, floor)
    safety = math.sqrt(hardest_ratio)
    honest = [r for r in rows if r["kind"] == "honest-cross"]
    metrics = {}
    for metric in METRICS:
        value = floor[metric] * safety
        if metric in SOFT_CAPS and floor[metric] < SOFT_CAPS[metric]:
            value = min(value, SOFT_CAPS[metric])
        value = _round_below(value, floor[metric])
        above = [r for r in attacks if r[metric] > value]
        metrics[metric] = MetricChoice(
            metric,
            value,
            max(r[metric] for r in honest),
            floor[metric],
            min((r[metric] for r in above), default=None),
            tuple(sorted({r["name"] for r in above})),
        )
    thresholds = ReplayThresholds(
        max_hamming_fraction=min(metrics["hamming"].threshold, 1.0),
        max_log2_norm_diff=metrics["log2_norm"].threshold,
        max_relative_error=metrics["relative_error"].threshold,
        min_cosine=max(1.0 - metrics["one_minus_cosine"].threshold, -1.0),
        max_global_relative_error=metrics["global_relative_error"].threshold,
    )
    hardest = {
        "cheat": hardest_row["name"],
        "metric": hardest_metric,
        "distance": hardest_row[hardest_metric],
        "honest_floor": floor[hardest_metric],
        "round": hardest_row["round"],
        "segment": hardest_row["segment"],
        "profile": hardest_row.get("profile"),
    }
    return ThresholdChoice(thresholds, safety, hardest, metrics)


# ---------------------------------------------------------------------------------------
# Re-judging


def is_accepted_under(row: Row, thresholds: ReplayThresholds) -> bool:
    """`judge_tolerance`'s verdict on a measured cross-profile trial, under other thresholds (the same
    comparisons in the same order; `count_verdict_disagreements` checks the two agree)."""
    if row["method"] == "precheck":
        return False
    if row["hamming"] > thresholds.max_hamming_fraction or row["log2_norm"] > thresholds.max_log2_norm_diff:
        return False
    return (
        row["relative_error"] <= thresholds.max_relative_error
        and row["cosine"] >= thresholds.min_cosine
        and row["global_relative_error"] <= thresholds.max_global_relative_error
    )


def count_verdict_disagreements(rows: list[Row], thresholds: ReplayThresholds) -> int:
    """Cross-profile trials whose recorded `judge_tolerance` verdict (under `thresholds`, the ones they were
    judged with) differs from `is_accepted_under`: 0 unless the re-judgement stopped mirroring the verdict."""
    return sum(
        is_accepted_under(r, thresholds) != r["accepted"] for r in rows if r["kind"] in ("honest-cross", "attack-cross")
    )


def rejudge(rows: list[Row], thresholds: ReplayThresholds) -> list[Row]:
    """Every trial with its cross-profile verdict recomputed under `thresholds` (exact verdicts unchanged)."""
    return [
        {**r, "accepted": is_accepted_under(r, thresholds)} if r["kind"] in ("honest-cross", "attack-cross") else r
        for r in rows
    ]


def check_holdout(rows: list[Row], config: RunConfig) -> dict[str, Any] | None:
    """Out-of-sample check: thresholds chosen from the even trajectory rounds judge the odd ones and vice
    versa (the in-sample verdicts are right by construction; this shows how much the margins are needed)."""
    halves = [[r for r in rows if r["round"] % 2 == parity] for parity in (0, 1)]
    if not all(any(r["kind"] == "honest-cross" for r in half) for half in halves):
        return None
    honest = false_positives = 0
    caught: dict[str, list[bool]] = defaultdict(list)
    refused = []
    for chosen_from, judged in ((halves[0], halves[1]), (halves[1], halves[0])):
        try:
            thresholds = choose_thresholds(chosen_from, config).thresholds
        except CalibrationRefused as exc:
            refused.append(str(exc))
            continue
        for row in rejudge(judged, thresholds):
            if row["kind"] == "honest-cross":
                honest += 1
                false_positives += not row["accepted"]
            elif row["kind"] == "attack-cross":
                caught[row["name"]].append(not row["accepted"])
    rates = {name: sum(values) / len(values) for name, values in sorted(caught.items())}
    return {
        "split": "thresholds from even trajectory rounds judge odd rounds, and vice versa",
        "honest_cross_trials": honest,
        "false_positives": false_positives,
        "attacks": rates,
        "min_detection_rate": min(rates.values()) if rates else None,
        "refused": refused,
    }


def get_honest_max_by_round(rows: list[Row]) -> dict[str, dict[str, float]]:
    """Largest honest cross-profile distance per trajectory round: whether drift grows as training goes on
    (then a calibration must cover as many rounds as the run will train)."""
    by_round: dict[int, list[Row]] = defaultdict(list)
    for row in rows:
        if row["kind"] == "honest-cross":
            by_round[row["round"]].append(row)
    return {str(r): {m: max(row[m] for row in group) for m in METRICS} for r, group in sorted(by_round.items())}


def summarize_calibration(rows: list[Row], config: RunConfig) -> tuple[ThresholdChoice, dict[str, Any]]:
    """Choose thresholds from the trials and re-judge every trial under them: (choice, summary with the
    benchmark keys). Raises CalibrationRefused when honest pinned-profile replays were not bit-identical, when
    a cheat sits inside the honest range, or when the re-judgement no longer mirrors `judge_tolerance`."""
    verify_exact_replays(rows)
    disagreements = count_verdict_disagreements(rows, config.thresholds)
    if disagreements:
        raise CalibrationRefused(
            f"re-judging the measured distances disagrees with judge_tolerance on {disagreements} trials under the "
            "run's own thresholds: is_accepted_under no longer mirrors the verdict (a bug); no thresholds written"
        )
    choice = choose_thresholds(rows, config)
    summary = analyse(rejudge(rows, choice.thresholds), choice.thresholds)
    summary["margins"] = choice.get_margins()
    summary["safety_factor"] = choice.safety_factor
    summary["holdout"] = check_holdout(rows, config)
    summary["honest_max_by_round"] = get_honest_max_by_round(rows)
    if choice.safety_factor < THIN_MARGIN:
        summary["warning"] = (
            f"safety factor {choice.safety_factor:.2f} is below {THIN_MARGIN}: the hardest cheat "
            f"({choice.hardest['cheat']}, {choice.hardest['metric']}) is close to honest drift"
        )
    return choice, summary


# ---------------------------------------------------------------------------------------
# Plot


def write_plot(rows: list[Row], thresholds: ReplayThresholds | None, path: Path, title: str) -> None:
    """One panel per metric: honest cross-profile distances against each attack's, log scale, with the
    thresholds as dashed lines (none when calibration refused)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(1, len(METRICS), figsize=(4.2 * len(METRICS), 5.5))
    attacks = group_rows(rows, "attack-cross")
    labels = ["honest", *attacks]
    floor = 1e-9
    for axis, metric in zip(axes, METRICS, strict=True):
        groups = [[r[metric] for r in rows if r["kind"] == "honest-cross"]]
        groups += [[r[metric] for r in attacks[name]] for name in attacks]
        for i, values in enumerate(groups):
            jitter = random.Random(i)
            ys = [max(v, floor) for v in values]
            xs = [i + jitter.uniform(-0.3, 0.3) for _ in ys]
            axis.scatter(xs, ys, s=4, alpha=0.5, color="tab:green" if i == 0 else "tab:red")
        if thresholds is not None:
            axis.axhline(get_threshold_value(thresholds, metric), color="black", linestyle="--", label="threshold")
            axis.legend(fontsize=7)
        axis.set_yscale("log")
        axis.set_xticks(range(len(labels)))
        axis.set_xticklabels(labels, rotation=70, fontsize=7)
        axis.set_title(metric.replace("_", " "), fontsize=9)
        axis.grid(alpha=0.3, axis="y")
    figure.suptitle(title)
    figure.tight_layout()
    tmp = path.with_name(path.stem + ".tmp.png")
    figure.savefig(tmp, dpi=100)
    plt.close(figure)
    tmp.replace(path)
