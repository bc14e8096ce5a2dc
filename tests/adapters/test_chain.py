"""Chain client against a real anvil: transfers, retries, wrong chain, unreachable RPC."""

from __future__ import annotations

import pytest

from devnet.anvil import AnvilProcess
from protocol.adapters.chain import ChainClient, ChainUnavailableError, WrongChainError
from protocol.adapters.keys import KeyLoadError, get_devnet_account, load_account
from protocol.adapters.nodestate import NodeState


@pytest.fixture(scope="module")
def anvil():
    with AnvilProcess() as process:
        yield process


def test_transfer_and_nonce_management(anvil):
    client = ChainClient(anvil.rpc_url, expected_chain_id=31337)
    sender, receiver = get_devnet_account(3), get_devnet_account(4).address
    before = client.get_balance(receiver)
    results = [client.transfer(sender, receiver, 1000 + i) for i in range(3)]
    assert [r.gas_used for r in results] == [21000] * 3
    assert client.get_balance(receiver) == before + 3003
    # A second client for the same account (another process) resyncs its nonce from the node.
    other = ChainClient(anvil.rpc_url)
    other.transfer(sender, receiver, 1)
    client.transfer(sender, receiver, 1)
    assert client.get_balance(receiver) == before + 3005


def test_wrong_chain_id_is_a_clear_error(anvil):
    with pytest.raises(WrongChainError, match="serves chain id 31337, expected 1"):
        ChainClient(anvil.rpc_url, expected_chain_id=1)


def test_unreachable_rpc_is_a_clear_error():
    with pytest.raises(ChainUnavailableError, match="cannot reach the chain RPC"):
        ChainClient("http://127.0.0.1:9", max_retries=1)


def test_devnet_keys_are_refused_on_other_chains(monkeypatch):
    with pytest.raises(KeyLoadError, match="refused on chain 1"):
        get_devnet_account(0, chain_id=1)
    monkeypatch.delenv("GRADLEDGER_PRIVATE_KEY", raising=False)
    with pytest.raises(KeyLoadError, match="no signing key"):
        load_account()


def test_node_state_survives_reopen(tmp_path):
    state = NodeState(tmp_path / "node.sqlite")
    state.put("round", "1:0", {"status": "committed", "root": "0xab"})
    state.set_cursor("events", 42)
    state.close()
    again = NodeState(tmp_path / "node.sqlite")
    assert again.get("round", "1:0") == {"root": "0xab", "status": "committed"}
    assert again.get_cursor("events", 0) == 42
    again.put("round", "1:1", {"status": "training"})
    assert [k for k, _ in again.list("round")] == ["1:0", "1:1"]
