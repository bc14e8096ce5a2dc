"""Bad input at the command line: one clear error line, exit status 1, nothing changed.

Each command runs in the test's own process (tests/cli_in_process.py: the real entry point and its error handling,
against the session's real anvil), so a refused input costs no interpreter start-up (issue 38).
"""

from __future__ import annotations

import json

import pytest
from eth_account import Account

from protocol.adapters.keys import PRIVATE_KEY_ENV, get_devnet_account
from protocol.types import ROLE_SOLVER
from tests.cli_in_process import CliResult, run_cli


def _assert_clean_error(result: CliResult, message: str) -> None:
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr, result.stderr
    assert message in " ".join(result.stderr.split()), result.stderr


def test_missing_manifest(tmp_path):
    result = run_cli("solver", "stake", "--amount", "1", "--home", str(tmp_path), "--devnet-account", "1")
    _assert_clean_error(result, "no deployment manifest at")
    _assert_clean_error(result, "run `gradledger deploy` first")


def test_wrong_chain_id(deployment, tmp_path):
    manifest = json.loads(deployment.manifest_path.read_text())
    manifest["chain_id"] = 1
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    rpc = deployment.protocol.chain.rpc_url
    result = run_cli(
        "solver", "stake", "--amount", "1", "--home", str(tmp_path), "--rpc-url", rpc, "--devnet-account", "1"
    )
    _assert_clean_error(result, "serves chain id 31337, expected 1")


def test_unreachable_rpc(deployment, tmp_path):
    (tmp_path / "manifest.json").write_text(deployment.manifest_path.read_text())
    args = ["--home", str(tmp_path), "--rpc-url", "http://127.0.0.1:9", "--devnet-account", "1"]
    _assert_clean_error(
        run_cli("solver", "stake", "--amount", "1", *args), "cannot reach the chain RPC at http://127.0.0.1:9"
    )


def test_unstaked_solver_cannot_join_and_nothing_moves(deployment, corpus, tmp_path):
    from tests.chain_fixtures import prepare_run

    setup = prepare_run(deployment, corpus, tmp_path / "home", [], [])
    run_id = setup.create(wait_for_nodes=False)
    # a fresh key: every devnet account may have been staked by another test on this session's chain
    protocol, account = deployment.protocol, Account.create()
    protocol.chain.transfer(get_devnet_account(0), account.address, 10**18)
    before = protocol.chain.get_balance(account.address)
    args = ["--home", str(setup.home), "--rpc-url", protocol.chain.rpc_url]
    result = run_cli(
        "solver", "stake", "--amount", "0", "--run", str(run_id), *args, env={PRIVATE_KEY_ENV: account.key.hex()}
    )
    _assert_clean_error(
        result,
        "RunRegistry.join reverted with InsufficientFreeStake(bonded=0, reserved=0, requested=10000000000000000000)",
    )
    assert not protocol.has_joined(run_id, account.address)
    assert protocol.bonded_of(account.address, ROLE_SOLVER) == 0
    assert protocol.chain.get_balance(account.address) == before, "a reverted estimate costs nothing"


def test_bad_amount_is_rejected_before_any_transaction(deployment, tmp_path):
    (tmp_path / "manifest.json").write_text(deployment.manifest_path.read_text())
    result = run_cli("solver", "stake", "--amount", "-1", "--home", str(tmp_path), "--devnet-account", "1")
    assert result.returncode == 2 and "Invalid value for '--amount'" in result.stderr


@pytest.mark.parametrize(
    ("amount", "message"),
    [
        ("inf", "inf is not an amount of ETH"),
        ("nan", "Invalid value for '--amount'"),  # click's own range check refuses it first
        ("1e-30", "is less than 1 wei (1e-18 ETH) and would be sent as 0"),
        ("0", "0 ETH deposits nothing; give a positive amount, or --run N"),
    ],
)
@pytest.mark.parametrize("role", ["solver", "verifier"])
def test_amounts_that_are_no_amount_are_usage_errors_before_any_transaction(
    deployment, tmp_path, role, amount, message
):
    """`inf` used to end in a traceback, 1e-30 was staked as 0 without a word, 0 sent nothing and said ok."""
    (tmp_path / "manifest.json").write_text(deployment.manifest_path.read_text())
    protocol, account = deployment.protocol, get_devnet_account(13)
    nonce = protocol.chain.w3.eth.get_transaction_count(account.address)
    args = ["--home", str(tmp_path), "--rpc-url", protocol.chain.rpc_url, "--devnet-account", "13"]
    result = run_cli(role, "stake", "--amount", amount, *args)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result
    assert message in " ".join(result.stderr.replace("│", " ").split()), result.stderr
    assert protocol.chain.w3.eth.get_transaction_count(account.address) == nonce, "nothing was sent"


def test_keystore_and_devnet_account_together_are_refused(deployment, tmp_path):
    """One of the two used to be ignored without a word: a node signing with a key its operator did not mean."""
    (tmp_path / "manifest.json").write_text(deployment.manifest_path.read_text())
    keystore = tmp_path / "key.json"
    keystore.write_text("{}")
    args = ["--home", str(tmp_path), "--rpc-url", deployment.protocol.chain.rpc_url]
    result = run_cli("solver", "stake", "--amount", "1", *args, "--keystore", str(keystore), "--devnet-account", "13")
    _assert_clean_error(result, f"--keystore {keystore} and --devnet-account 13 both name a signing key: choose one")
