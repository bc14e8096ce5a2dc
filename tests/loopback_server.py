"""A test's own HTTP server on a free loopback port, served from a thread (RPC proxies that play another client or
drop connections: tests/adapters/test_devnet_client.py, tests/auditor/chain_probes.py)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LoopbackServer:
    """Serves `handler` on 127.0.0.1 at a port the kernel picks (`url`) until `close()`."""

    def start(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
