"""`gradledger calibrate` and its measurements (sim/calibration.py) on tiny settings: real training, seconds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import sim.calibration
from adversary.behaviours import Behaviour
from gradledger.commands.calibrate import load_thresholds_file
from protocol.config import RunConfig, build_run_config, parse_model_config
from protocol.hashing import hash_to_hex
from sim.calibration import (
    MIN_TRIALS,
    TrialPlan,
    get_cross_profiles,
    get_cross_trials_per_segment,
    measure_trials,
    plan_full_calibration,
)
from sim.threshold_choice import count_verdict_disagreements, summarize_calibration
from tests.conftest import RUN_SEED
from tests.sim.test_threshold_choice import _trials

ROOT = Path(__file__).resolve().parents[2]
LLAMA = ROOT / "examples" / "llama-tiny.json"


def _llama_config(corpus, preset: str) -> RunConfig:
    model = parse_model_config(json.loads(LLAMA.read_text()))
    return build_run_config(preset=preset, run_seed=RUN_SEED, dataset_root=hash_to_hex(corpus[0].root), model=model)


@pytest.fixture(scope="module")
def llama_trials(corpus) -> tuple[RunConfig, list[dict]]:
    config = _llama_config(corpus, "tiny")
    return config, measure_trials(
        config, corpus, TrialPlan(rounds=1, jobs_per_round=1, trajectory_solvers=1, workers=1)
    )


def test_pinned_replays_are_bit_identical_and_every_cheat_is_measured(llama_trials) -> None:
    config, rows = llama_trials
    exact = [r for r in rows if r["kind"] == "honest-exact"]
    assert exact and all(r["accepted"] for r in exact)
    assert {r["name"] for r in exact} <= {"threads-2", "threads-1-deterministic", "threads-2-deterministic",
                                          "another-process"}  # fmt: skip
    assert {r["name"] for r in rows if r["kind"] == "honest-cross"} == {
        "fused-1", "fused-2", "fused-sdpa-1", "fused-sdpa-2"
    }  # fmt: skip
    cheats = {r["name"] for r in rows if r["kind"] == "attack-cross"}
    assert cheats == {b.value for b in Behaviour}
    reused = [r for r in rows if r["kind"] == "attack-cross" and r["name"] == Behaviour.REUSED_UPDATE.value]
    assert len(reused) == (config.train.num_segments - 1) * 4 and all(r["segment"] > 0 for r in reused)
    # the re-judgement mirrors judge_tolerance on every measured trial
    assert count_verdict_disagreements(rows, config.thresholds) == 0


def test_calibrated_thresholds_accept_honest_work_and_catch_every_cheat(llama_trials) -> None:
    config, rows = llama_trials
    choice, summary = summarize_calibration(rows, config)
    assert summary["false_positives"] == 0
    assert summary["min_detection_rate"] == 1.0
    assert set(summary["attacks"]) == {b.value for b in Behaviour}
    assert choice.safety_factor > 1.0
    assert summary["margins"]["safety_factor"] == choice.safety_factor


def test_the_full_plan_gives_every_cheat_enough_trials(corpus) -> None:
    for config in (
        _llama_config(corpus, "default"),
        build_run_config(run_seed=RUN_SEED, dataset_root="0x" + "11" * 32),
    ):
        plan = plan_full_calibration(config)
        scarcest = plan.jobs * (config.train.num_segments - 1) * get_cross_trials_per_segment(config)
        assert scarcest >= MIN_TRIALS
    assert list(get_cross_profiles(_llama_config(corpus, "tiny"))) == ["fused", "fused-sdpa"]


def test_calibrate_command_writes_thresholds(tmp_path: Path) -> None:
    out = tmp_path / "calibration"
    command = [sys.executable, "-m", "gradledger", "calibrate", "--preset", "tiny", "--rounds", "1",
               "--jobs-per-round", "1", "--workers", "1", "--out", str(out), "--json"]  # fmt: skip
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    for key in ("honest_trials", "false_positives", "min_detection_rate", "threshold_margin", "attacks", "margins"):
        assert key in summary
    assert summary["false_positives"] == 0 and summary["min_detection_rate"] == 1.0
    written = json.loads((out / "thresholds.json").read_text())
    assert written["model"]["architecture"] == "gpt" and written["model_config_hash"].startswith("0x")
    assert load_thresholds_file(out / "thresholds.json").model_dump() == summary["thresholds"]
    assert (out / "calibration.png").stat().st_size > 0


def test_calibrate_refuses_when_a_cheat_hides_in_honest_drift(tmp_path, monkeypatch, capsys) -> None:
    from gradledger.cli import main

    monkeypatch.setattr(sim.calibration, "measure_trials", lambda *args, **kwargs: _trials(noise_global=0.0008))
    monkeypatch.setattr(sys, "argv", ["gradledger", "calibrate", "--preset", "tiny", "--rounds", "1",
                                      "--out", str(tmp_path)])  # fmt: skip
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 1
    error = "".join(capsys.readouterr().err.split())  # rich wraps the line anywhere
    assert "cheat'noise-1pct'sitsinsidethehonestrangeoneverymetric" in error
    assert not (tmp_path / "thresholds.json").exists()
    assert (tmp_path / "calibration.png").exists()
