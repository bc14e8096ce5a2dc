"""`gradledger devnet up|down|status` on a real anvil: restart keeps the chain."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from protocol.adapters.chain import ChainClient
from protocol.adapters.keys import get_devnet_account

pytestmark = pytest.mark.e2e


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gradledger", *args], capture_output=True, text=True, timeout=120)


def test_up_down_up_keeps_the_chain(tmp_path):
    home = str(tmp_path / "home")
    first = _cli("devnet", "up", "--home", home, "--port", "0", "--json")
    assert first.returncode == 0, first.stderr
    info = json.loads(first.stdout)
    assert info["started"] is True
    try:
        again = json.loads(_cli("devnet", "up", "--home", home, "--json").stdout)
        assert again["started"] is False and again["pid"] == info["pid"]
        client = ChainClient(info["rpc_url"], expected_chain_id=31337)
        receiver = get_devnet_account(7).address
        client.transfer(get_devnet_account(6), receiver, 777)
        balance = client.get_balance(receiver)
        assert _cli("devnet", "down", "--home", home).returncode == 0
        assert _cli("devnet", "status", "--home", home).returncode == 1
        restarted = json.loads(_cli("devnet", "up", "--home", home, "--port", "0", "--json").stdout)
        status = json.loads(_cli("devnet", "status", "--home", home, "--json").stdout)
        assert status["running"] and status["block_number"] >= 1
        assert ChainClient(restarted["rpc_url"]).get_balance(receiver) == balance
    finally:
        _cli("devnet", "down", "--home", home)
