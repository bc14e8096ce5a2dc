"""The golden self-check: a forced mismatch is named, the answer is cached per setting, bad files are clear errors."""

from __future__ import annotations

import json

from node.profile_check import check_reproduction
from protocol.adapters.goldens import load_goldens_file
from protocol.execution_pins import CURRENT_PROFILE
from tests.cli_in_process import run_cli


def _goldens_with_one_wrong_hash(tmp_path):
    data = load_goldens_file()
    data["profiles"][CURRENT_PROFILE]["segments"]["gpt2-tiny"] = "0x" + "00" * 32
    path = tmp_path / "goldens.json"
    path.write_text(json.dumps(data))
    return path


def test_a_forced_mismatch_is_named_and_the_answer_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = _goldens_with_one_wrong_hash(tmp_path)
    first = check_reproduction(CURRENT_PROFILE, 1, goldens_path=path)
    assert not first.reproduces and not first.cached
    assert "gpt2-tiny hash differently" in first.reason and "gpt," not in first.reason
    assert first.verdicts == "tolerance"
    assert first.as_dict()["segments"]["gpt"]["match"] is True
    again = check_reproduction(CURRENT_PROFILE, 1, goldens_path=path)
    assert again.cached and again.computed == first.computed and not again.reproduces
    other_threads = check_reproduction(CURRENT_PROFILE, 2, goldens_path=path, use_cache=True)
    assert not other_threads.cached, "another thread count is another setting: checked again"
    assert other_threads.computed == first.computed


def test_profile_check_with_a_missing_goldens_file_exits_1_saying_what_to_do(tmp_path):
    done = run_cli("profile", "check", "--goldens", str(tmp_path / "nope.json"))  # in-process: no start-up
    said = " ".join(done.stderr.split())  # the console wraps long lines
    assert done.returncode == 1
    assert "does not exist" in said and "make goldens" in said
