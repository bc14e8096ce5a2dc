"""`gradledger.cli.main(argv)` in the test's process (tests/cli_in_process.py): the exit status and the one error line
a process would show, and nothing a command set for its process left behind for the next test."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from protocol.adapters.finality import get_default_chain_policy
from tests.cli_in_process import run_cli


def test_a_refused_input_is_one_error_line_and_exit_1_and_leaves_no_process_state(tmp_path: Path) -> None:
    policy, handlers = get_default_chain_policy(), list(logging.getLogger("gradledger").handlers)
    assert "GRADLEDGER_TEST_MARKER" not in os.environ
    args = ["solver", "stake", "--amount", "1", "--home", str(tmp_path), "--devnet-account", "1", "--max-fee-gwei", "7"]
    result = run_cli(*args, env={"GRADLEDGER_TEST_MARKER": "1"})
    assert result.returncode == 1, result
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(error_lines) == 1 and "no deployment manifest at" in " ".join(result.stderr.split()), result.stderr
    assert result.stdout == ""
    # the command set a 7 gwei fee cap for its process and was given an environment variable: both are gone
    assert get_default_chain_policy() == policy and policy.max_fee_wei is None
    assert "GRADLEDGER_TEST_MARKER" not in os.environ
    assert logging.getLogger("gradledger").handlers == handlers


def test_a_usage_error_exits_2_and_help_exits_0() -> None:
    usage = run_cli("solver", "stake", "--amount", "-1")
    assert usage.returncode == 2 and "Invalid value for '--amount'" in usage.stderr, usage
    shown = run_cli("--help")
    assert shown.returncode == 0 and "Usage:" in shown.stdout and "solver" in shown.stdout, shown


def test_demo_set_of_h_or_an_unknown_key_is_refused_before_any_devnet_starts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    fixed = run_cli("demo", "--home", str(home), "--set", "train.inner_steps=5")
    assert fixed.returncode == 1 and "the demo's H and k are its scenario's" in fixed.stderr, fixed
    typo = run_cli("demo", "--home", str(home), "--set", "train.agregate=senders")
    assert typo.returncode == 1 and "aggregate" in " ".join(typo.stderr.split()), typo  # the nearest valid name
    adversarial = run_cli("demo", "--adversarial", "--set", "train.codec=int1-c4096-k56-r30")
    shown = " ".join(adversarial.stderr.translate(str.maketrans("", "", "│╭╮╰╯─")).split())  # rich's usage box
    assert adversarial.returncode == 2 and "built-in model and config only" in shown, adversarial
    assert not (home / "devnet").exists() and not (home / "manifest.json").exists()
