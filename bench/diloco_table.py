"""The codec table of docs/benchmarks.md from bench/diloco.py's JSON files: every arm under the three counts.

    python bench/diloco_table.py --base bench/out/diloco-long-base.json bench/out/diloco-long-*.json

`--base` is the run with the synchronous and uncompressed DiLoCo arms (the same setting); every other file adds its
compressed arms (`--skip-baselines --skip-uncompressed`). Prints a Markdown table, then one JSON object (its rows)
as the last line. The ratios are bench/diloco.py's (sim/byte_counts.py); the options column names every train
option an arm changed from the base run (aggregate, clipping, inner optimizer, ...).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from protocol.config import TrainConfig


def load_summary(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())["summary"]


def get_changed_options(train: dict[str, Any], base: dict[str, Any]) -> str:
    """The train options an arm set differently from the base run (the codec is its own column); an option the base
    run's JSON predates was at its default there."""
    defaults = {k: field.default for k, field in TrainConfig.model_fields.items()}
    changed = [f"{k}={v}" for k, v in sorted(train.items()) if k != "codec" and base.get(k, defaults.get(k)) != v]
    return ", ".join(changed) or "-"


def build_rows(base: dict[str, Any], arms: list[dict[str, Any]]) -> list[dict[str, Any]]:
    sync, diloco = base["sync_eval_loss"], base["diloco_eval_loss"]
    rows = [
        {"arm": "synchronous", "options": "-", "eval_loss": sync},
        {"arm": f"DiLoCo H = {base['H']}, fp32", "options": "-", "eval_loss": diloco},
    ]
    for arm in arms:
        options = get_changed_options(arm["train_config"], base["train_config"])
        for codec in arm["codecs"]:
            rows.append({"arm": codec["name"], "options": options, **codec})
    for row in rows:
        row["vs_sync_pct"] = round(100 * (row["eval_loss"] - sync) / sync, 2)
        row["vs_diloco_pct"] = round(100 * (row["eval_loss"] - diloco) / diloco, 2)
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| arm | options | bits / param | ours | per round vs fp32 Δ | per step vs DP upload | final loss | vs sync | "
        "vs DiLoCo |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        ratios = [row.get(k) for k in ("bits_per_parameter", "ratio_ours", "ratio_per_round_vs_dense")]
        ratios.append(row.get("ratio_per_step_vs_dp_upload"))
        cells = ["" if v is None else f"{v:,.3g}" if i == 0 else f"{v:,.0f}x" for i, v in enumerate(ratios)]
        lines.append(
            f"| {row['arm']} | {row['options']} | {' | '.join(cells)} | {row['eval_loss']:.4f} | "
            f"{row['vs_sync_pct']:+.2f}% | {row['vs_diloco_pct']:+.2f}% |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, required=True, help="JSON of the run with the sync and DiLoCo arms")
    parser.add_argument("arms", type=Path, nargs="*", help="JSON files with compressed arms")
    args = parser.parse_args(argv)
    base = load_summary(args.base)
    arms = [load_summary(p) for p in args.arms if p.resolve() != args.base.resolve()]
    rows = build_rows(base, [base, *arms])
    print(format_table(rows))
    print(json.dumps(rows))
    return rows


if __name__ == "__main__":
    main()
