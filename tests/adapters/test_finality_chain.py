"""Fees, devnet-only refusals and reorg-safe reading against a real anvil serving a non-devnet chain id (1337).

The chain automines here (blocks arrive with transactions), so every step is deterministic -- and clients that send
use 0 confirmations (on an automining chain no block would ever come on top of the last transaction); the test plays
the reorg itself with `anvil_reorg` through the raw provider (the client refuses anvil_* calls on chain 1337, which is
one of the things tested).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from eth_account import Account
from eth_account.signers.local import LocalAccount
from web3 import Web3

from devnet.anvil import AnvilProcess
from devnet.deploy import build_contracts, deploy_protocol
from protocol.adapters.chain import ChainClient
from protocol.adapters.finality import (
    ChainPolicy,
    DevnetOnlyError,
    DurableReadCursor,
    FinalEventReader,
    set_default_chain_policy,
)
from protocol.adapters.manifest import DeploymentManifest
from protocol.adapters.nodestate import NodeState
from protocol.errors import ConfigError
from protocol.fees import GWEI, FeeCapExceededError

CHAIN_ID = 1337


def fund(rpc_url: str, address: str, eth: int = 100) -> None:
    """Send ETH from anvil's first unlocked account (the test's faucet; no key of ours is involved)."""
    w3 = Web3(Web3.HTTPProvider(rpc_url))
    faucet = w3.eth.accounts[0]
    w3.eth.wait_for_transaction_receipt(
        w3.eth.send_transaction(
            {"from": faucet, "to": address, "value": eth * 10**18, "gasPrice": 2 * w3.eth.gas_price}
        )
    )


def raw_rpc(rpc_url: str, method: str, params: list) -> object:
    response = Web3(Web3.HTTPProvider(rpc_url)).provider.make_request(method, params)  # type: ignore[arg-type]
    assert "error" not in response, response
    return response["result"]


@pytest.fixture(scope="module")
def chain1337() -> Iterator[AnvilProcess]:
    with AnvilProcess(chain_id=CHAIN_ID) as anvil:
        yield anvil


@pytest.fixture(scope="module")
def operator(chain1337) -> LocalAccount:
    account = Account.create()
    fund(chain1337.rpc_url, account.address)
    return account


@pytest.fixture(scope="module")
def deployed(chain1337, operator) -> DeploymentManifest:
    return deploy_protocol(
        ChainClient(chain1337.rpc_url, policy=ChainPolicy(confirmations=0)), operator, build_contracts()
    )


def test_devnet_only_calls_are_refused_outside_31337(chain1337):
    client = ChainClient(chain1337.rpc_url)
    before = client.block_number()
    for call in (
        lambda: client.mine(),
        lambda: client.mine_blocks(3),
        lambda: client.increase_time(60),
        lambda: client.mine_at(2**40),
        lambda: client.set_block_timestamp_interval(1),
    ):
        with pytest.raises(DevnetOnlyError, match=r"anvil devnet call .* runs anvil/\S+ on chain 1337"):
            call()
    assert client.block_number() == before  # nothing was mined
    assert client.confirmations == 2  # the default off the devnet


def test_a_fee_above_the_cap_is_not_sent(chain1337, operator):
    base_fee = int(ChainClient(chain1337.rpc_url).get_block("latest")["baseFeePerGas"])
    capped = ChainClient(
        chain1337.rpc_url, policy=ChainPolicy(max_fee_wei=base_fee // 2, priority_fee_wei=0, confirmations=0)
    )
    nonce = capped.w3.eth.get_transaction_count(operator.address)
    with pytest.raises(FeeCapExceededError) as caught:
        capped.transfer(operator, operator.address, 1)
    assert "--max-fee-gwei" in str(caught.value) and "base fee" in str(caught.value)
    assert capped.w3.eth.get_transaction_count(operator.address, "pending") == nonce  # nothing reached the chain

    cap = base_fee * 3
    roomy = ChainClient(
        chain1337.rpc_url, policy=ChainPolicy(max_fee_wei=cap, priority_fee_wei=base_fee // 10, confirmations=0)
    )
    result = roomy.transfer(operator, operator.address, 1)
    sent = roomy.w3.eth.get_transaction(result.transaction_hash)
    assert sent["maxFeePerGas"] <= cap and sent["maxPriorityFeePerGas"] == base_fee // 10


def test_legacy_chains_pay_gas_price_under_the_cap():
    with AnvilProcess(chain_id=CHAIN_ID, extra_args=("--hardfork", "berlin")) as anvil:
        account = Account.create()
        fund(anvil.rpc_url, account.address)
        client = ChainClient(anvil.rpc_url, policy=ChainPolicy(confirmations=0))
        assert client.get_block("latest").get("baseFeePerGas") is None
        price = client.w3.eth.gas_price
        sent = client.w3.eth.get_transaction(client.transfer(account, account.address, 1).transaction_hash)
        assert sent["gasPrice"] == price and sent["type"] == 0
        with pytest.raises(FeeCapExceededError, match="legacy gas pricing"):
            ChainClient(anvil.rpc_url, policy=ChainPolicy(max_fee_wei=price - 1, confirmations=0)).transfer(
                account, account.address, 1
            )


def test_policy_options_are_checked():
    assert ChainPolicy.from_gwei(30, 1.5, 3) == ChainPolicy(30 * GWEI, 1_500_000_000, 3)
    with pytest.raises(ConfigError, match="above --max-fee-gwei"):
        ChainPolicy.from_gwei(1, 2, None)
    with pytest.raises(ConfigError, match="--confirmations"):
        ChainPolicy.from_gwei(None, None, -1)


def test_process_policy_applies_to_new_clients(chain1337):
    try:
        set_default_chain_policy(ChainPolicy(confirmations=5))
        assert ChainClient(chain1337.rpc_url).confirmations == 5
    finally:
        set_default_chain_policy(ChainPolicy())
    assert ChainClient(chain1337.rpc_url).confirmations == 2


def test_readers_drop_orphaned_events_and_read_again(chain1337, operator, deployed, tmp_path):
    client = ChainClient(chain1337.rpc_url, deployed, policy=ChainPolicy(confirmations=0))
    reader = FinalEventReader(client, deployed.deployed_block, names=["PeerAnnounced"], contracts=["PeerDirectory"])
    cursor_state = NodeState(tmp_path / "state.sqlite")
    cursor = DurableReadCursor(client, cursor_state, "peers", deployed.deployed_block)

    def read_cursor() -> list[str]:
        events = cursor.span(names=["PeerAnnounced"], contracts=["PeerDirectory"])
        cursor.advance()
        return [e.args["url"] for e in events]

    client.send(operator, "PeerDirectory", "announce", "http://kept")
    reader.read_new()
    assert read_cursor() == ["http://kept"]
    first = client.send(operator, "PeerDirectory", "announce", "http://orphaned")
    raw = raw_rpc(chain1337.rpc_url, "eth_getRawTransactionByHash", [first.transaction_hash])
    assert [e.args["url"] for e in reader.read_new().new] == ["http://orphaned"]
    assert read_cursor() == ["http://orphaned"]

    # a reorg of depth 1 replaces the block of "orphaned" by an empty one: the readers drop it
    raw_rpc(chain1337.rpc_url, "anvil_reorg", [1, []])
    update = reader.read_new()
    assert update.reorganised and [e.args["url"] for e in update.dropped] == ["http://orphaned"]
    assert [e.args["url"] for e in reader.events] == ["http://kept"]
    assert read_cursor() == [] and cursor.reorgs == 1 and cursor.last_fork is not None

    # the nonce the dropped transaction used is free again: the client signs it anew, without a gap
    client.send(operator, "PeerDirectory", "announce", "http://after")
    assert [e.args["url"] for e in reader.read_new().new] == ["http://after"]
    assert read_cursor() == ["http://after"]

    # a reorg that re-includes a transaction in another block: read once, at its new place
    raw_rpc(chain1337.rpc_url, "anvil_reorg", [1, []])
    raw_rpc(chain1337.rpc_url, "anvil_reorg", [1, [[raw, 0]]])
    update = reader.read_new()
    assert update.reorganised
    assert [e.args["url"] for e in reader.events] == ["http://kept", "http://orphaned"]
    assert read_cursor() == ["http://orphaned"]
    fresh = client.get_events(deployed.deployed_block, names=["PeerAnnounced"], contracts=["PeerDirectory"])
    assert [(e.block_number, e.log_index) for e in reader.events] == [(e.block_number, e.log_index) for e in fresh]

    # a cursor reopened from the node's SQLite keeps the remembered hashes (a restart after a reorg still sees it)
    reopened = DurableReadCursor(client, cursor_state, "peers", deployed.deployed_block)
    assert reopened.progress == cursor.progress
