"""Threshold choice from measured trials (sim/threshold_choice.py), on hand-made distances: no training."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from gradledger.run_inputs import load_thresholds_file
from protocol.config import ReplayThresholds, RunConfig
from protocol.errors import ConfigError, GradledgerError
from sim.threshold_choice import (
    CalibrationRefused,
    check_holdout,
    choose_thresholds,
    get_metric_resolution,
    is_accepted_under,
    rejudge,
    summarize_calibration,
    verify_exact_replays,
)

HONEST = {
    "hamming": 0.02,
    "log2_norm": 0.0,
    "relative_error": 0.05,
    "one_minus_cosine": 0.001,
    "global_relative_error": 0.001,
}


def _cross(kind: str, name: str, round_index: int = 0, **distances: float) -> dict:
    values = {**HONEST, **distances}
    row = {
        "kind": kind,
        "name": name,
        "method": "distance",
        "round": round_index,
        "segment": 0,
        "profile": "fused-1",
        "cosine": 1.0 - values["one_minus_cosine"],
        "worst_hamming_tensor": "param/x",
        **values,
    }
    # what judge_tolerance said under the run's (default) thresholds
    return {**row, "accepted": is_accepted_under(row, ReplayThresholds())}


def _trials(noise_global: float = 0.01) -> list[dict]:
    rows = []
    for r in range(4):
        rows.append(_cross("honest-cross", "fused-1", r))
        rows.append(_cross("honest-cross", "fused-2", r, hamming=0.01, global_relative_error=0.0005))
        rows.append({"kind": "honest-exact", "name": "threads-2", "accepted": True, "method": "exact", "round": r})
        # hidden from every metric but the whole-update error
        rows.append(_cross("attack-cross", "noise-1pct", r, global_relative_error=noise_global))
        # far out on the sketch
        rows.append(_cross("attack-cross", "forged-checkpoint", r, hamming=0.5, log2_norm=3.0))
    return rows


def test_thresholds_sit_at_one_safety_factor_above_honest_drift(tiny_config: RunConfig) -> None:
    rows = _trials()
    choice = choose_thresholds(rows, tiny_config)
    # the hardest cheat: noise at 0.01 against an honest 0.001 on the whole-update error -> sqrt(10)
    assert choice.safety_factor == pytest.approx(math.sqrt(10))
    assert choice.hardest["cheat"] == "noise-1pct" and choice.hardest["metric"] == "global_relative_error"
    t = choice.thresholds
    assert 0.001 < t.max_global_relative_error < 0.01
    assert t.max_global_relative_error == pytest.approx(0.001 * math.sqrt(10), rel=0.01)
    assert t.max_hamming_fraction == pytest.approx(0.02 * math.sqrt(10), rel=0.01)
    # no honest drift on the norm: its floor is one quantum of the quantized log2 norm, not 0
    assert t.max_log2_norm_diff == pytest.approx(math.sqrt(10) / tiny_config.sketch.norm_scale, rel=0.01)
    assert 1.0 - t.min_cosine == pytest.approx(0.001 * math.sqrt(10), rel=0.01)
    rejudged = rejudge(rows, t)
    assert all(r["accepted"] for r in rejudged if r["kind"].startswith("honest"))
    assert not any(r["accepted"] for r in rejudged if r["kind"] == "attack-cross")
    margins = choice.get_margins()
    assert margins["metrics"]["global_relative_error"]["catches"] == ["noise-1pct"]
    assert margins["metrics"]["log2_norm"]["catches"] == ["forged-checkpoint"]


def test_a_cheat_inside_the_honest_range_on_every_metric_is_refused(tiny_config: RunConfig) -> None:
    rows = _trials(noise_global=0.0008)  # below the honest 0.001 too
    with pytest.raises(CalibrationRefused) as refused:
        choose_thresholds(rows, tiny_config)
    message = str(refused.value)
    assert "'noise-1pct'" in message and "every metric" in message and "4 of 4 trials" in message
    assert re.search(
        r"closest metric is (hamming|log2_norm|relative_error|one_minus_cosine|global_relative_error)", message
    )
    assert isinstance(refused.value, GradledgerError)


def test_one_metric_is_enough_to_separate_a_cheat(tiny_config: RunConfig) -> None:
    # inside the honest range on four metrics, out only on the per-tensor cosine
    rows = [r for r in _trials() if r["name"] != "noise-1pct"]
    rows.append(_cross("attack-cross", "scaled-update", one_minus_cosine=0.004, global_relative_error=0.0009))
    choice = choose_thresholds(rows, tiny_config)
    assert choice.hardest["metric"] == "one_minus_cosine"
    assert choice.safety_factor == pytest.approx(2.0)
    assert not any(r["accepted"] for r in rejudge(rows, choice.thresholds) if r["kind"] == "attack-cross")


def test_a_not_bit_identical_pinned_replay_is_refused() -> None:
    rows = [{"kind": "honest-exact", "name": "threads-2-deterministic", "accepted": False, "method": "exact"}]
    with pytest.raises(CalibrationRefused, match=r"not bit-identical .*threads-2-deterministic: 1"):
        verify_exact_replays(rows)


def test_rejudging_follows_judge_tolerance_order() -> None:
    row = _cross("attack-cross", "x", hamming=0.2)
    assert not is_accepted_under(row, ReplayThresholds(max_hamming_fraction=0.15))
    assert is_accepted_under(row, ReplayThresholds(max_hamming_fraction=0.25))
    assert not is_accepted_under({**row, "method": "precheck"}, ReplayThresholds(max_hamming_fraction=0.25))
    assert not is_accepted_under(row, ReplayThresholds(max_hamming_fraction=0.25, min_cosine=0.9995))


def test_summary_and_holdout(tiny_config: RunConfig) -> None:
    rows = _trials()
    choice, summary = summarize_calibration(rows, tiny_config)
    assert summary["false_positives"] == 0 and summary["min_detection_rate"] == 1.0
    assert summary["honest_cross_trials"] == 8
    assert summary["honest_max_by_round"]["3"]["global_relative_error"] == 0.001
    assert summary["thresholds"] == choice.thresholds.model_dump()
    holdout = check_holdout(rows, tiny_config)
    assert holdout is not None and holdout["false_positives"] == 0 and holdout["min_detection_rate"] == 1.0
    assert check_holdout([r for r in rows if r["round"] == 0], tiny_config) is None


def test_hardware_drift_sets_the_honest_floor_like_an_emulated_profile(tiny_config: RunConfig) -> None:
    rows = _trials()
    rows.append(_cross("honest-cross", "hw-portable-1", 2, global_relative_error=0.002))  # twice the fused drift
    choice, summary = summarize_calibration(rows, tiny_config)
    assert choice.metrics["global_relative_error"].honest_floor == 0.002
    assert choice.safety_factor == pytest.approx(math.sqrt(0.01 / 0.002))
    assert summary["false_positives"] == 0 and summary["min_detection_rate"] == 1.0
    assert summary["honest_cross"]["hw-portable-1"]["honest_max"]["global_relative_error"] == 0.002
    assert summary["honest_cross"]["fused-1"]["honest_max"]["global_relative_error"] == 0.001


def test_resolution_of_each_metric(tiny_config: RunConfig) -> None:
    resolution = get_metric_resolution(tiny_config)
    assert resolution["hamming"] == 1 / tiny_config.sketch.bits
    assert resolution["log2_norm"] == 1 / tiny_config.sketch.norm_scale


def test_load_thresholds_file(tmp_path: Path) -> None:
    thresholds = ReplayThresholds(max_global_relative_error=0.0002, min_cosine=0.999)
    path = tmp_path / "thresholds.json"
    path.write_text('{"thresholds": ' + thresholds.model_dump_json() + ', "margins": {}}')
    assert load_thresholds_file(path) == thresholds
    path.write_text(thresholds.model_dump_json())  # a bare thresholds object
    assert load_thresholds_file(path) == thresholds
    with pytest.raises(ConfigError, match="does not exist"):
        load_thresholds_file(tmp_path / "missing.json")
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="not readable JSON"):
        load_thresholds_file(path)
    path.write_text('{"thresholds": {"max_hamming_fraction": 2.0}}')
    with pytest.raises(ConfigError, match="max_hamming_fraction"):
        load_thresholds_file(path)
    path.write_text('{"thresholds": {"max_hamming": 0.1}}')
    with pytest.raises(ConfigError, match="invalid thresholds"):
        load_thresholds_file(path)
