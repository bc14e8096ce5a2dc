"""bench/diloco_table.py: every arm's gaps against the base run, and the options an arm changed."""

from __future__ import annotations

import json
from pathlib import Path

from bench.diloco_table import get_changed_options, main

BASE_TRAIN = {"inner_steps": 10, "outer_lr": 0.7, "codec": "none"}  # written before the later options existed


def _write(path: Path, summary: dict) -> Path:
    path.write_text(json.dumps({"summary": summary}))
    return path


def test_get_changed_options_reads_options_the_base_predates_as_their_defaults():
    assert get_changed_options({**BASE_TRAIN, "aggregate": "mean", "clip_to_median_norm": False}, BASE_TRAIN) == "-"
    changed = {**BASE_TRAIN, "clip_to_median_norm": True, "codec": "int1-c4096-k56-r30"}
    assert get_changed_options(changed, BASE_TRAIN) == "clip_to_median_norm=True"


def test_main_puts_every_codec_arm_against_the_base_runs_sync_and_diloco(tmp_path, capsys):
    base = _write(
        tmp_path / "base.json",
        {"H": 10, "sync_eval_loss": 1.0, "diloco_eval_loss": 1.1, "train_config": BASE_TRAIN, "codecs": []},
    )
    codec = {
        "name": "int1-c4096-k56-r30", "eval_loss": 1.21, "bits_per_parameter": 0.151, "ratio_ours": 1060.6,
        "ratio_per_round_vs_dense": 212.1, "ratio_per_step_vs_dp_upload": 2121.2,
    }  # fmt: skip
    arm = _write(
        tmp_path / "arm.json",
        {"H": 10, "train_config": {**BASE_TRAIN, "inner_optimizer": "muon"}, "codecs": [codec]},
    )
    rows = main(["--base", str(base), str(base), str(arm)])
    assert [r["arm"] for r in rows] == ["synchronous", "DiLoCo H = 10, fp32", "int1-c4096-k56-r30"]
    assert (rows[2]["vs_sync_pct"], rows[2]["vs_diloco_pct"], rows[2]["options"]) == (
        21.0,
        10.0,
        "inner_optimizer=muon",
    )
    table = capsys.readouterr().out
    assert "| int1-c4096-k56-r30 | inner_optimizer=muon | 0.151 | 1,061x | 212x | 2,121x | 1.2100 | +21.00% |" in table
