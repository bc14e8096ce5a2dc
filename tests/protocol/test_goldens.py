"""Golden segments and the pins: what they are made of, how a machine's answer is decided, and the pin switch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from protocol.adapters.execution_env import get_unpinned_environment
from protocol.adapters.goldens import load_goldens, load_goldens_file, write_goldens
from protocol.errors import ConfigError
from protocol.execution_pins import (
    CURRENT_PROFILE,
    PINNED_ENVIRONMENT,
    PINS_SWITCH,
    PROFILE_V1,
    ExecutionEnvironment,
    explain_environment_mismatch,
)
from protocol.goldens import (
    GOLDEN_NAMES,
    GPT2_TINY,
    LLAMA_TINY,
    ProfileGoldens,
    build_golden_config,
    build_golden_dataset,
    decide_reproduction,
    get_golden_segment,
    make_golden_stream,
)

ROOT = Path(__file__).resolve().parents[2]


def _env(**changes) -> ExecutionEnvironment:
    base = {
        "torch_version": "2.13.0+cpu", "aten_capability": "AVX2", "mkl_branch": "AVX2", "mkl_strict": True,
        "onednn_max_isa": "AVX2", "cpu_vendor": "GenuineIntel", "cpu_model": "Xeon", "avx2": True, "avx512f": True,
        "pinned": True,
    }  # fmt: skip
    return ExecutionEnvironment(**{**base, **changes})


def test_golden_models_are_the_examples():
    assert json.loads((ROOT / "examples" / "llama-tiny.json").read_text()) == LLAMA_TINY
    assert json.loads((ROOT / "examples" / "gpt2-tiny.json").read_text()) == GPT2_TINY


def test_golden_stream_is_a_fixed_function_of_nothing():
    stream = make_golden_stream()
    assert stream == make_golden_stream() and len(stream) == 3 * (1 << 16)
    assert stream[:8].hex() == "1150679b317f6b6c" and len(set(stream)) == 256  # SHA-256 counter mode, every byte value
    dataset = build_golden_dataset()
    config = build_golden_config(get_golden_segment("gpt-micro"), dataset, CURRENT_PROFILE)
    assert config.train.micro_batches == 2 and config.profile.name == CURRENT_PROFILE
    assert config.train.num_segments == 1


def test_committed_goldens_cover_every_golden_segment_of_the_current_profile():
    goldens = load_goldens(CURRENT_PROFILE)
    assert goldens is not None and set(goldens.segments) == set(GOLDEN_NAMES)
    assert all(h.startswith("0x") and len(h) == 66 for h in goldens.segments.values())
    assert load_goldens(PROFILE_V1) is None, "the profile that predates the pins has no goldens"


def test_decide_reproduction_needs_every_hash_and_effective_pins():
    goldens = ProfileGoldens(CURRENT_PROFILE, {"a": "0x01", "b": "0x02"}, {"cpu_vendor": "AuthenticAMD"})
    assert decide_reproduction(goldens, {"a": "0x01", "b": "0x02"}, None)[0] is True
    ok, why = decide_reproduction(goldens, {"a": "0x01", "b": "0x03"}, None)
    assert not ok and "b hash differently" in why and "AuthenticAMD" in why
    assert not decide_reproduction(goldens, {"a": "0x01"}, None)[0]
    assert decide_reproduction(goldens, {"a": "0x01", "b": "0x02"}, "pins off") == (False, "pins off")
    assert not decide_reproduction(None, {}, None)[0]


def test_environment_mismatch_names_what_did_not_take():
    assert explain_environment_mismatch(CURRENT_PROFILE, _env()) is None
    assert explain_environment_mismatch(CURRENT_PROFILE, _env(mkl_branch="AUTO")) is None  # MKL on AMD: goldens decide
    assert "dispatches AVX512 kernels" in (
        explain_environment_mismatch(CURRENT_PROFILE, _env(aten_capability="AVX512")) or ""
    )
    assert "strict" in (explain_environment_mismatch(CURRENT_PROFILE, _env(mkl_strict=False)) or "")
    assert PINS_SWITCH in (explain_environment_mismatch(CURRENT_PROFILE, _env(pinned=False)) or "")
    assert "predates the pins" in (explain_environment_mismatch(PROFILE_V1, _env()) or "")
    assert "unknown execution profile" in (explain_environment_mismatch("cpu-fp64-v9", _env()) or "")


def test_goldens_file_round_trips_and_bad_files_are_clear_errors(tmp_path):
    path = tmp_path / "goldens.json"
    write_goldens(CURRENT_PROFILE, {"gpt": "0x" + "ab" * 32}, {"cpu_vendor": "x"}, path)
    assert load_goldens(CURRENT_PROFILE, path) == ProfileGoldens(
        CURRENT_PROFILE, {"gpt": "0x" + "ab" * 32}, {"cpu_vendor": "x"}
    )
    assert load_goldens_file(path)["profiles"].keys() == {CURRENT_PROFILE}
    with pytest.raises(ConfigError, match="does not exist"):
        load_goldens(CURRENT_PROFILE, tmp_path / "missing.json")
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="cannot be read as JSON"):
        load_goldens(CURRENT_PROFILE, path)


def test_pin_function_overrides_the_callers_environment_unless_switched_off():
    names = sorted(PINNED_ENVIRONMENT[CURRENT_PROFILE])
    script = (
        "import json, os; from protocol.adapters.execution_env import pin_execution_environment as pin; "
        f"set_ = pin(); print(json.dumps([set_, {{k: os.environ.get(k) for k in {names!r}}}]))"
    )
    stray = {"MKL_CBWR": "AVX512", "ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41"}
    for switch, expected in (("", PINNED_ENVIRONMENT[CURRENT_PROFILE]), ("off", stray)):
        env = {**os.environ, **stray, PINS_SWITCH: switch}
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
        was_set, seen = json.loads(done.stdout)
        assert seen == expected and was_set == ({} if switch else expected)


def test_an_unpinned_child_environment_drops_every_pin_this_process_set():
    parent = {"PATH": "/bin", **PINNED_ENVIRONMENT[CURRENT_PROFILE]}
    child = get_unpinned_environment(parent, ATEN_CPU_CAPABILITY="default")
    assert child == {"PATH": "/bin", PINS_SWITCH: "off", "ATEN_CPU_CAPABILITY": "default"}


def test_a_config_made_before_the_pins_reads_and_hashes_as_it_did():
    """31d17b0c... is what the code before profile v2 (commit bd55e96) computed for this config."""
    from protocol.config import build_run_config, compute_config_hash, parse_run_config

    old = build_run_config(
        preset="tiny",
        run_seed="0x" + "5e" * 32,
        dataset_root="0x" + "00" * 32,
        overrides={"profile": {"name": PROFILE_V1}},
    )
    expected = "31d17b0c5c3962e4a53cccffd3e7850f0112d64a6f0776b7a9f69c8ce48fc3c9"
    assert compute_config_hash(parse_run_config(old.model_dump(mode="json"))).hex() == expected
    new = build_run_config(preset="tiny", run_seed="0x" + "5e" * 32, dataset_root="0x" + "00" * 32)
    assert new.profile.name == CURRENT_PROFILE and compute_config_hash(new).hex() != expected
    with pytest.raises(ConfigError, match="profile"):
        build_run_config(
            preset="tiny",
            run_seed="0x" + "5e" * 32,
            dataset_root="0x" + "00" * 32,
            overrides={"profile": {"name": "x"}},
        )
