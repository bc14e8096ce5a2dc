"""bench/rpc_budget.py's instrument: the counting JSON-RPC proxy in front of a real anvil counts every request a client
sends through it, a batch request by request, and tells a head poll (the head the previous head read saw) apart."""

from __future__ import annotations

from collections import Counter

from bench.rpc_budget import HEAD_POLL, CountingProxy, per_block
from protocol.adapters.chain import ChainClient


def test_proxy_counts_every_request_and_the_head_polls_succeeds(deployment):
    proxy = CountingProxy(deployment.anvil.rpc_url)
    try:
        client = ChainClient(proxy.url, deployment.protocol.chain.manifest)
        client.get_block("latest")
        client.get_block("latest")  # the same head: a poll
        deployment.protocol.chain.mine()  # not through the proxy: not counted
        client.get_block("latest")  # a new head: not a poll
        client.get_block_timestamps([1, 2, 3])  # one batch of three
        counted = proxy.snapshot()
        assert counted == client.provider.requests + Counter({HEAD_POLL: 1}), "the proxy and the client disagree"
        assert counted["eth_getBlockByNumber"] >= 3 + 3  # three heads, the batch of three
        assert per_block({"node": counted}, 1)["node"] == sum(client.provider.requests.values())
        assert per_block({"node": counted}, 1, polls=False)["node"] == sum(client.provider.requests.values()) - 1
    finally:
        proxy.close()
