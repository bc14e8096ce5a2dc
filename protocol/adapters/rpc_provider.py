"""The JSON-RPC connection a `ChainClient` talks through: web3's HTTP provider, counted and without the chatter.

Two things web3.py does by default cost a node most of its requests (issue 39, "a chatty chain client": 43,000 of
92,000 requests in one Hardhat run were `eth_chainId`):

- its `validation` middleware asks the node for `eth_chainId` before every `eth_call`, `eth_estimateGas` and
  `eth_sendTransaction` to compare with the transaction's chain id. `ChainClient` reads the chain id once, refuses
  an RPC whose id differs from the manifest's, and signs every transaction with that id itself (EIP-155: a signed
  transaction cannot execute on another chain), so the check is dropped;
- its `ens_name_to_address` middleware walks every request's parameters looking for ENS names; gradledger passes
  only checksummed addresses.

`CountingHTTPProvider` counts every request it sends by method (a batch counts each request in it), so a node's
RPC budget can be read (`requests`) rather than guessed.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from typing import Any

from web3 import HTTPProvider, Web3
from web3.types import RPCEndpoint, RPCResponse

DROPPED_MIDDLEWARE = ("validation", "ens_name_to_address")


class CountingHTTPProvider(HTTPProvider):
    """web3's HTTP provider, counting the JSON-RPC requests it sends by method."""

    def __init__(self, endpoint_uri: str, **kwargs: Any) -> None:
        super().__init__(endpoint_uri, **kwargs)
        self.requests: Counter[str] = Counter()
        self._count_lock = threading.Lock()

    def _count(self, methods: Iterable[str]) -> None:
        with self._count_lock:
            self.requests.update(methods)

    def make_request(self, method: RPCEndpoint, params: Any) -> RPCResponse:
        self._count([method])
        return super().make_request(method, params)

    def make_batch_request(self, requests: list[tuple[RPCEndpoint, Any]]) -> list[RPCResponse] | RPCResponse:
        self._count(method for method, _ in requests)
        return super().make_batch_request(requests)

    @property
    def total_requests(self) -> int:
        with self._count_lock:
            return sum(self.requests.values())


def connect_web3(rpc_url: str, timeout_s: float) -> tuple[Web3, CountingHTTPProvider]:
    """A Web3 on `rpc_url` through a counting provider, without the per-request chain-id and ENS middleware."""
    provider = CountingHTTPProvider(rpc_url, request_kwargs={"timeout": timeout_s})
    w3 = Web3(provider)
    for name in DROPPED_MIDDLEWARE:
        w3.middleware_onion.remove(name)
    return w3, provider
