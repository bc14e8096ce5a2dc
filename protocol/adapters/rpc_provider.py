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

It posts through `KeepAliveTransport`, one persistent `http.client` connection per thread, instead of web3's
`requests` session: 0.14 ms of CPU per request against 0.94 ms (2,000 `eth_blockNumber` on anvil here), and a node
sends thousands. Failures surface as the `requests` exceptions the chain client already retries on
(`ConnectionError`, `Timeout`) or reports (`HTTPError`). A URL with credentials in it, or one an environment proxy
applies to, keeps web3's `requests` path, which handles both.
"""

from __future__ import annotations

import http.client
import select
import socket
import threading
import urllib.request
from collections import Counter
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import requests
from web3 import HTTPProvider, Web3
from web3._utils.batching import sort_batch_response_by_response_ids
from web3.types import RPCEndpoint, RPCResponse

DROPPED_MIDDLEWARE = ("validation", "ens_name_to_address")


class KeepAliveTransport:
    """POSTs to one HTTP(S) endpoint over a persistent connection per thread (http.client).

    # INVARIANT: a request is sent at most once. A kept connection the server has closed meanwhile (readable before
    anything was sent: its EOF) is replaced before sending, as urllib3 does; a failure after sending is raised, never
    retried here, so a transaction is never posted twice by the transport.
    """

    def __init__(self, endpoint_uri: str, timeout_s: float, headers: dict[str, str]) -> None:
        parts = urlsplit(endpoint_uri)
        self.endpoint_uri = endpoint_uri
        self.https = parts.scheme == "https"
        self.host = parts.hostname or "localhost"
        self.port = parts.port or (443 if self.https else 80)
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.timeout_s = timeout_s
        self.headers = headers
        self._local = threading.local()

    @staticmethod
    def is_usable_for(endpoint_uri: str) -> bool:
        """Plain http(s) URLs without credentials that no environment proxy applies to."""
        parts = urlsplit(endpoint_uri)
        if parts.scheme not in ("http", "https") or parts.username or parts.password:
            return False
        proxies = urllib.request.getproxies()
        return parts.scheme not in proxies or urllib.request.proxy_bypass(parts.hostname or "")

    def _connection(self) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is not None and conn.sock is not None and _is_dropped(conn.sock):
            conn.close()
        if conn is None:
            cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
            conn = cls(self.host, self.port, timeout=self.timeout_s)
            self._local.conn = conn
        return conn

    def post(self, body: bytes) -> bytes:
        """The response body of POSTing `body`; requests' exceptions on failure."""
        conn = self._connection()
        try:
            conn.request("POST", self.path, body, {**self.headers, "Content-Length": str(len(body))})
            response = conn.getresponse()
            data = response.read()
        except TimeoutError as exc:
            conn.close()
            raise requests.exceptions.Timeout(f"{self.endpoint_uri}: {exc}") from None
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise requests.exceptions.ConnectionError(f"{self.endpoint_uri}: {type(exc).__name__}: {exc}") from None
        if response.will_close:
            conn.close()
        if response.status >= 400:
            raise requests.exceptions.HTTPError(f"{response.status} {response.reason} for url {self.endpoint_uri}")
        return data


def _is_dropped(sock: socket.socket) -> bool:
    """Whether a kept connection can no longer be used: readable with nothing asked is the server's EOF (or junk)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


class CountingHTTPProvider(HTTPProvider):
    """web3's HTTP provider, counting the JSON-RPC requests it sends by method (and sending them over
    `KeepAliveTransport` where it applies)."""

    def __init__(self, endpoint_uri: str, **kwargs: Any) -> None:
        super().__init__(endpoint_uri, **kwargs)
        self.requests: Counter[str] = Counter()
        self._count_lock = threading.Lock()
        timeout_s = float((self._request_kwargs or {}).get("timeout", 30))
        self.transport = (
            KeepAliveTransport(endpoint_uri, timeout_s, self.get_request_headers())
            if KeepAliveTransport.is_usable_for(endpoint_uri)
            else None
        )

    def _make_request(self, method: RPCEndpoint, request_data: bytes) -> bytes:
        if self.transport is None:
            return super()._make_request(method, request_data)
        return self.transport.post(request_data)

    def _count(self, methods: Iterable[str]) -> None:
        with self._count_lock:
            self.requests.update(methods)

    def make_request(self, method: RPCEndpoint, params: Any) -> RPCResponse:
        self._count([method])
        return super().make_request(method, params)

    def make_batch_request(self, batch: list[tuple[RPCEndpoint, Any]]) -> list[RPCResponse] | RPCResponse:
        self._count(method for method, _ in batch)
        if self.transport is None:
            return super().make_batch_request(batch)
        response = self.decode_rpc_response(self.transport.post(self.encode_batch_rpc_request(batch)))
        if not isinstance(response, list):
            return response
        return sort_batch_response_by_response_ids(response)

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
