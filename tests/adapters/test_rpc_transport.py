"""The JSON-RPC transport (protocol/adapters/rpc_provider.py `KeepAliveTransport`): one kept connection per thread,
a dropped one replaced before sending, every request sent at most once, and failures as the `requests` exceptions
the chain client retries on. Against real HTTP servers on loopback (a small JSON-RPC stub, and anvil)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from devnet.anvil import AnvilProcess
from protocol.adapters.chain import ChainClient
from protocol.adapters.rpc_provider import CountingHTTPProvider, KeepAliveTransport


class Stub(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, mode: str) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.mode = mode  # "ok", "close-after-answer", "drop-without-answer", "error-500"
        self.requests = 0
        self.connections: set[tuple[str, int]] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Stub

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests += 1
        self.server.connections.add(self.client_address)
        if self.server.mode == "drop-without-answer":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        status = 500 if self.server.mode == "error-500" else 200
        payload = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": "0x2a"}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        if self.server.mode == "close-after-answer":
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(payload)


@contextmanager
def stub(mode: str) -> Iterator[Stub]:
    server = Stub(mode)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_requests_in_one_thread_share_one_connection_succeeds():
    with stub("ok") as server:
        provider = CountingHTTPProvider(server.url, request_kwargs={"timeout": 5})
        assert provider.transport is not None
        for _ in range(20):
            assert provider.make_request("eth_blockNumber", [])["result"] == "0x2a"
        assert server.requests == 20 and len(server.connections) == 1
        assert provider.requests["eth_blockNumber"] == 20


def test_a_connection_the_server_closed_is_replaced_before_sending_succeeds():
    with stub("close-after-answer") as server:
        provider = CountingHTTPProvider(server.url, request_kwargs={"timeout": 5})
        for _ in range(5):
            assert provider.make_request("eth_chainId", [])["result"] == "0x2a"
        assert server.requests == 5 and len(server.connections) == 5


def test_a_request_dropped_after_sending_is_raised_not_sent_again_reverts():
    with stub("drop-without-answer") as server:
        provider = CountingHTTPProvider(server.url, request_kwargs={"timeout": 5})
        with pytest.raises(requests.exceptions.ConnectionError):
            provider.make_request("eth_sendRawTransaction", ["0x00"])
        assert server.requests == 1, "the transport sent a request twice"


def test_an_http_error_status_is_an_http_error_reverts():
    with stub("error-500") as server:
        provider = CountingHTTPProvider(server.url, request_kwargs={"timeout": 5})
        with pytest.raises(requests.exceptions.HTTPError, match="500"):
            provider.make_request("eth_blockNumber", [])


def test_nothing_listening_is_a_connection_error_reverts():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connections are refused
        provider = CountingHTTPProvider(f"http://127.0.0.1:{port}/", request_kwargs={"timeout": 5})
        with pytest.raises(requests.exceptions.ConnectionError):
            provider.make_request("eth_blockNumber", [])


@pytest.mark.parametrize(
    ("url", "env", "usable"),
    [
        ("http://127.0.0.1:8545", {}, True),
        ("https://rpc.example.org/v1/key", {}, True),
        ("https://user:secret@rpc.example.org", {}, False),  # credentials: requests sends them as basic auth
        ("http://rpc.example.org", {"http_proxy": "http://proxy:3128"}, False),
        ("http://127.0.0.1:8545", {"http_proxy": "http://proxy:3128", "no_proxy": "127.0.0.1"}, True),
        ("ws://127.0.0.1:8546", {}, False),
    ],
)
def test_keep_alive_is_used_only_where_requests_adds_nothing_succeeds(monkeypatch, url, env, usable):
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert KeepAliveTransport.is_usable_for(url) is usable


def test_a_restarted_anvil_is_reached_again_on_the_same_port_succeeds():
    """The kept connection dies with the process; the next request opens a new one before sending (no error, no
    retry by the chain client: the provider is asked directly)."""
    with AnvilProcess() as anvil:
        provider = ChainClient(anvil.rpc_url).provider
        assert provider.transport is not None
        assert "result" in provider.make_request("eth_blockNumber", [])
        port = anvil.port
    with AnvilProcess(port=port) as again:
        assert again.rpc_url == anvil.rpc_url
        assert "result" in provider.make_request("eth_blockNumber", [])
