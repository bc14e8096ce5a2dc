"""The chain client's devnet controls against a real anvil: big mining in bounded chunks, every answer checked.

Why (issue 38): `bench/gas.py` died at load 10-17 with a ReadTimeout inside one `anvil_mine` of the seed-block gap,
and an anvil error reply to a clock call used to be dropped, leaving the chain where it was without a word.
"""

from __future__ import annotations

from typing import Any

import pytest

from devnet.anvil import AnvilProcess
from protocol.adapters.chain import ChainClient, ChainError
from protocol.adapters.devnet_controls import MINE_CHUNK_BLOCKS


class RecordingClient(ChainClient):
    """A real client that also notes each devnet call it makes (the calls still go to anvil)."""

    def __init__(self, rpc_url: str) -> None:
        self.devnet_calls: list[tuple[str, list[Any]]] = []
        super().__init__(rpc_url)

    def _devnet_request(self, method: str, params: list[Any], *, retry: bool = True) -> Any:
        self.devnet_calls.append((method, params))
        return super()._devnet_request(method, params, retry=retry)


@pytest.fixture(scope="module")
def anvil():
    with AnvilProcess() as process:
        yield process


def test_many_blocks_are_mined_in_bounded_chunks_to_the_exact_count(anvil):
    client = RecordingClient(anvil.rpc_url)
    start = client.block_number()
    count = 3 * MINE_CHUNK_BLOCKS + 5
    client.mine_blocks(count, interval_s=0)
    assert client.block_number() == start + count
    sizes = [int(params[0], 16) for method, params in client.devnet_calls if method == "anvil_mine"]
    assert sizes == [MINE_CHUNK_BLOCKS] * 3 + [5]


def test_mining_nothing_sends_nothing(anvil):
    client = RecordingClient(anvil.rpc_url)
    start = client.block_number()
    client.mine_blocks(0)
    client.mine_blocks(-3)
    assert client.block_number() == start
    assert client.devnet_calls == []


def test_a_refused_devnet_call_raises_instead_of_passing_silently(anvil):
    client = ChainClient(anvil.rpc_url)
    client.mine()
    past = client.get_block("latest")["timestamp"] - 100
    with pytest.raises(ChainError, match="evm_setNextBlockTimestamp failed"):
        client.mine_at(past)
