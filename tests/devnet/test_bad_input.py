"""Bad input at the command line: one clear error line, exit status 1, nothing changed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from protocol.adapters.keys import get_devnet_account
from protocol.types import ROLE_SOLVER

pytestmark = pytest.mark.e2e


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gradledger", *args], capture_output=True, text=True, timeout=120)


def _assert_clean_error(result: subprocess.CompletedProcess, message: str) -> None:
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr, result.stderr
    assert message in " ".join(result.stderr.split()), result.stderr


def test_missing_manifest(tmp_path):
    result = _cli("solver", "stake", "--amount", "1", "--home", str(tmp_path), "--devnet-account", "1")
    _assert_clean_error(result, "no deployment manifest at")
    _assert_clean_error(result, "run `gradledger deploy` first")


def test_wrong_chain_id(deployment, tmp_path):
    manifest = json.loads(deployment.manifest_path.read_text())
    manifest["chain_id"] = 1
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    rpc = deployment.protocol.chain.rpc_url
    result = _cli(
        "solver", "stake", "--amount", "1", "--home", str(tmp_path), "--rpc-url", rpc, "--devnet-account", "1"
    )
    _assert_clean_error(result, "serves chain id 31337, expected 1")


def test_unreachable_rpc(deployment, tmp_path):
    (tmp_path / "manifest.json").write_text(deployment.manifest_path.read_text())
    args = ["--home", str(tmp_path), "--rpc-url", "http://127.0.0.1:9", "--devnet-account", "1"]
    _assert_clean_error(
        _cli("solver", "stake", "--amount", "1", *args), "cannot reach the chain RPC at http://127.0.0.1:9"
    )


def test_unstaked_solver_cannot_join_and_nothing_moves(deployment, corpus, tmp_path):
    from tests.chain_fixtures import prepare_run

    setup = prepare_run(deployment, corpus, tmp_path / "home", [], [])
    run_id = setup.create(wait_for_nodes=False)
    protocol, account = deployment.protocol, get_devnet_account(17)
    before = protocol.chain.get_balance(account.address)
    args = ["--home", str(setup.home), "--rpc-url", protocol.chain.rpc_url, "--devnet-account", "17"]
    result = _cli("solver", "stake", "--amount", "0", "--run", str(run_id), *args)
    _assert_clean_error(
        result,
        "RunRegistry.join reverted with InsufficientFreeStake(bonded=0, reserved=0, requested=10000000000000000000)",
    )
    assert not protocol.has_joined(run_id, account.address)
    assert protocol.bonded_of(account.address, ROLE_SOLVER) == 0
    assert protocol.chain.get_balance(account.address) == before, "a reverted estimate costs nothing"


def test_bad_amount_is_rejected_before_any_transaction(deployment, tmp_path):
    (tmp_path / "manifest.json").write_text(deployment.manifest_path.read_text())
    result = _cli("solver", "stake", "--amount", "-1", "--home", str(tmp_path), "--devnet-account", "1")
    assert result.returncode == 2 and "Invalid value for '--amount'" in result.stderr
