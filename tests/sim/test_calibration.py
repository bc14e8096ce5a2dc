"""`gradledger calibrate` and its measurements (sim/calibration.py) on tiny settings: real training, seconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import sim.calibration
from adversary.behaviours import Behaviour
from gradledger.run_inputs import load_thresholds_file
from protocol.adapters.execution_env import get_unpinned_environment, read_execution_environment
from protocol.config import RunConfig, build_run_config, parse_model_config
from protocol.execution_pins import CURRENT_PROFILE, PINNED_ENVIRONMENT, PINS_SWITCH
from protocol.hashing import hash_to_hex
from sim.calibration import (
    MIN_TRIALS,
    TrialPlan,
    analyse,
    get_cross_profiles,
    get_cross_trials_per_segment,
    measure_trials,
    plan_full_calibration,
)
from sim.hardware_trials import HARDWARE_PATHS, HardwarePathError, explain_hardware_path_failure
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
                                          "threads-4", "another-process"}  # fmt: skip
    assert {r["name"] for r in rows if r["kind"] == "honest-cross"} == {
        "fused-1", "fused-2", "fused-sdpa-1", "fused-sdpa-2",
        "hw-native-1", "hw-native-2", "hw-portable-1", "hw-portable-2",
    }  # fmt: skip
    cheats = {r["name"] for r in rows if r["kind"] == "attack-cross"}
    assert cheats == {b.value for b in Behaviour}
    reused = [r for r in rows if r["kind"] == "attack-cross" and r["name"] == Behaviour.REUSED_UPDATE.value]
    assert len(reused) == (config.train.num_segments - 1) * 4 and all(r["segment"] > 0 for r in reused)
    # the re-judgement mirrors judge_tolerance on every measured trial
    assert count_verdict_disagreements(rows, config.thresholds) == 0


def _native_capability() -> str:
    """The kernels torch dispatches to in a fresh process with the pins off: this CPU's own."""
    code = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    env = get_unpinned_environment(os.environ)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_hardware_paths_replay_every_segment_on_unpinned_kernels(llama_trials) -> None:
    config, rows = llama_trials
    hardware = [r for r in rows if r["kind"] == "honest-cross" and r["name"].startswith("hw-")]
    labels = {f"hw-{path}-{threads}" for path in HARDWARE_PATHS for threads in (1, 2)}
    assert {r["name"] for r in hardware} == labels
    assert len(hardware) == config.train.num_segments * len(labels)
    assert all(r["accepted"] for r in hardware)  # hardware drift within the run's thresholds: no false positive
    capability = {path: {r["aten_capability"] for r in hardware if r["path"] == path} for path in HARDWARE_PATHS}
    # the worker really ran the unpinned kernels: the CPU's own (AVX-512 on an AVX-512 CPU), and the portable ones
    native = _native_capability()
    assert capability["native"] == {native}
    if read_execution_environment().avx512f:
        assert native != "AVX2"
    assert capability["portable"] == {"DEFAULT"}
    assert all("STRICT" not in r["mkl_mode"] for r in hardware)
    assert {r["mkl_mode"] for r in hardware if r["path"] == "portable"} <= {"COMPATIBLE", "no MKL"}
    # ... and computed other bits than the pinned profile (whose replays are bit-identical)
    assert any(r["relative_error"] > 0 for r in hardware if r["path"] == "portable")
    summary = analyse(rows, config.thresholds)
    assert summary["hardware_paths"]["portable"]["aten_capability"] == "DEFAULT"
    assert set(summary["honest_cross"]["hw-native-1"]["honest_max"]) == set(sim.calibration.METRICS)


def test_a_hardware_path_that_does_not_take_fails_before_training(corpus, tiny_config) -> None:
    before = dict(os.environ)
    pinned_after_all = {PINS_SWITCH: "on", **PINNED_ENVIRONMENT[CURRENT_PROFILE]}
    with pytest.raises(HardwarePathError, match="hardware path 'pinned-after-all': the pins are on"):
        measure_trials(
            tiny_config, corpus, TrialPlan(1, 1, 1, 1), hardware_paths={"pinned-after-all": pinned_after_all}
        )
    assert dict(os.environ) == before  # the path's environment was only the worker's


def _environment(**changes: object) -> dict:
    unpinned = {"aten_capability": "AVX512", "mkl_branch": "OFF", "mkl_strict": False, "avx512f": True, "pinned": False}
    return {**unpinned, **changes}


def test_a_hardware_worker_must_run_the_path_it_was_started_for() -> None:
    portable = HARDWARE_PATHS["portable"]
    assert explain_hardware_path_failure({}, _environment(), {}) is None
    assert explain_hardware_path_failure(portable, _environment(aten_capability="DEFAULT", mkl_branch="COMPATIBLE"),
                                         portable) is None  # fmt: skip
    assert explain_hardware_path_failure({}, _environment(aten_capability="AVX2", avx512f=False), {}) is None
    problems = {
        "pins are on": ({}, _environment(pinned=True), {}),
        "leaked": ({}, _environment(), {"MKL_CBWR": "AVX2,STRICT"}),
        "pinned AVX2 kernels on an AVX-512 CPU": ({}, _environment(aten_capability="AVX2"), {}),
        "asked for default": (portable, _environment(mkl_branch="COMPATIBLE"), portable),
        "asked for MKL_CBWR=COMPATIBLE": (portable, _environment(aten_capability="DEFAULT"), portable),
        "STRICT": ({}, _environment(mkl_strict=True), {}),
    }
    for expected, (requested, environment, process_env) in problems.items():
        assert expected in (explain_hardware_path_failure(requested, environment, process_env) or ""), expected


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
