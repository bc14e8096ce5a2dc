"""A node refuses a chain that is not its manifest's even when the chain id and every contract address match (issue 39:
a node pointed at a second local devnet staked on the wrong chain). Two real anvils, both chain id 31337, the same
deployer and nonces, so the same contract addresses: only the deployment block's hash tells them apart. The second
devnet starts at another time (`--timestamp`), as a second devnet started later does; two anvils started in the same
second with the same transactions are the same chain, block for block, and nothing could tell them apart."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from devnet.anvil import AnvilProcess
from devnet.deploy import build_contracts, deploy_protocol
from gradledger.cli import app
from protocol.adapters.chain import ChainClient, WrongChainError
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.manifest import write_manifest


def test_a_second_devnet_with_the_same_addresses_is_refused_before_any_transaction(tmp_path):
    with AnvilProcess() as first, AnvilProcess(extra_args=("--timestamp", "1900000000")) as second:
        out = build_contracts()
        mine = deploy_protocol(ChainClient(first.rpc_url), get_devnet_account(0), out)
        other = deploy_protocol(ChainClient(second.rpc_url), get_devnet_account(0), out)
        assert {n: r.address for n, r in mine.contracts.items()} == {n: r.address for n, r in other.contracts.items()}
        assert mine.chain_id == other.chain_id == 31337 and mine.deployed_block_hash != other.deployed_block_hash

        ChainClient(first.rpc_url, mine)  # its own chain: accepted
        with pytest.raises(WrongChainError, match=r"serves chain id 31337 but its block \d+ is 0x[0-9a-f]+, not the"):
            ChainClient(second.rpc_url, mine)

        # the CLI says so and sends nothing: the account's nonce on the other chain is unchanged
        write_manifest(tmp_path / "manifest.json", mine)
        staker = get_devnet_account(7)
        before = ChainClient(second.rpc_url).w3.eth.get_transaction_count(staker.address)
        args = ["solver", "stake", "--amount", "1", "--devnet-account", "7", "--home", str(tmp_path)]
        result = CliRunner().invoke(app, [*args, "--rpc-url", second.rpc_url])
        assert isinstance(result.exception, WrongChainError), (result.exception, result.output)
        assert "another chain (a second devnet" in str(result.exception)
        assert ChainClient(second.rpc_url).w3.eth.get_transaction_count(staker.address) == before
