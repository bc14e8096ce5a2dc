"""A real S3-compatible server for tests: moto's standalone server (devnet/s3server.py) on a free loopback port.

One server per test session (it starts in about a second); each test gets its own bucket, and the AWS environment
variables point boto3 -- and any node process the test starts -- at the server. Import the fixtures into a test
module through tests/conftest.py.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import threading
from collections.abc import Iterator

import pytest

from devnet.s3server import LocalS3Server

_buckets = itertools.count(1)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[LocalS3Server]:
    with LocalS3Server() as server:
        yield server


@pytest.fixture
def s3_bucket(s3_server: LocalS3Server, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh bucket on the session's server, with AWS_* pointing at it for this test (and its subprocesses)."""
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    name = f"gradledger-test-{next(_buckets)}"
    s3_server.create_bucket(name)
    return name


class DropFirstConnections:
    """A loopback TCP relay to `target_port` that resets its first `drop` connections, then relays bytes both ways.

    A real transient network failure (the client sees a reset connection), without mocking boto3 or the server.
    """

    def __init__(self, target_port: int, drop: int) -> None:
        self.target_port = target_port
        self.remaining = drop
        self.dropped = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.remaining > 0:
                self.remaining -= 1
                self.dropped += 1
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                client.close()  # RST: "connection reset by peer"
                continue
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(1 << 16):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.stopping.set()
        self.listener.close()
