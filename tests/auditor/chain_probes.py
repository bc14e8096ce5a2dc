"""What the auditor's chain tests read the chain and the page with, independently of the code under test: `cast`
(Foundry's own client) for logs and calls, an RPC proxy that drops connections, and headless Chromium."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
from websockets.sync.client import connect

from devnet.toolchain import find_tool
from tests.loopback_server import LoopbackServer

CAST = str(find_tool("cast"))


def cast(rpc: str, *args: str) -> str:
    result = subprocess.run([CAST, *args, "--rpc-url", rpc], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def cast_logs(rpc: str, address: str, signature: str, from_block: int) -> list[dict]:
    out = cast(
        rpc, "logs", "--address", address, "--from-block", str(from_block), "--to-block", "latest", signature, "--json"
    )
    return json.loads(out or "[]")


def cast_uint(rpc: str, *args: str) -> int:
    return int(cast(rpc, "call", *args).split()[0])


def topic_int(topic: str) -> int:
    return int(topic, 16)


def topic_address(topic: str) -> str:
    return "0x" + topic[-40:]


def data_words(data: str) -> list[int]:
    raw = data[2:]
    return [int(raw[i : i + 64], 16) for i in range(0, len(raw), 64)]


class DroppingProxy(LoopbackServer):
    """An HTTP JSON-RPC proxy that forwards the first `limit` requests, then drops every connection."""

    def __init__(self, upstream: str, limit: int | None) -> None:
        self.upstream, self.limit, self.count = upstream, limit, 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                proxy.count += 1
                if proxy.limit is not None and proxy.count > proxy.limit:
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                answer = httpx.post(proxy.upstream, content=body, headers={"Content-Type": "application/json"})
                self.send_response(answer.status_code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

        self.start(Handler)


CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def find_chromium() -> str:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    assert browser, "chromium is not installed: `make setup` installs it (apt-get install -y chromium)"
    return browser


def run_chromium(tmp_path: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Headless Chromium with `args` (a mode such as --screenshot=PATH, and the URL), a profile of its own under
    `tmp_path`, nothing fetched from outside."""
    command = [find_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


class HeadlessPage:
    """A live page in headless Chromium, driven over the DevTools protocol: a page that keeps a connection open (an
    event stream) never lets `--dump-dom` finish, and a live page is what is tested: it must change on its own."""

    def __init__(self, tmp_path: Path, url: str, timeout_s: float = 120) -> None:
        profile = tmp_path / "chromium-live-profile"
        command = [find_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0", url]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.timeout_s = timeout_s
        assert self.process.stderr is not None
        for line in self.process.stderr:  # Chromium names its DevTools endpoint on stderr once it listens
            if line.startswith("DevTools listening on "):
                browser_ws = line.split(" on ", 1)[1].strip()
                break
        else:
            raise AssertionError(f"chromium exited ({self.process.wait()}) before its DevTools endpoint listened")
        threading.Thread(target=self.process.stderr.read, daemon=True).start()  # keep the pipe drained
        http_base = "http://" + browser_ws.split("/")[2]
        (page,) = [t for t in httpx.get(f"{http_base}/json/list").json() if t["type"] == "page"]
        self.exits = contextlib.ExitStack()
        self.socket = self.exits.enter_context(connect(page["webSocketDebuggerUrl"], max_size=None))
        self.next_id = 0

    def _call(self, expression: str) -> dict:
        """Runtime.evaluate's answer (a promise awaited); an `error` when the page navigated away meanwhile."""
        self.next_id += 1
        params = {"expression": expression, "awaitPromise": True, "returnByValue": True}
        self.socket.send(json.dumps({"id": self.next_id, "method": "Runtime.evaluate", "params": params}))
        while True:
            message = json.loads(self.socket.recv(timeout=self.timeout_s))
            if message.get("id") == self.next_id:
                return message

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        message = self._call(expression)
        result = message.get("result", {})
        assert "error" not in message and "exceptionDetails" not in result, message
        return result.get("result", {}).get("value")

    def wait_for(self, condition: str) -> str:
        """Once the JavaScript `condition` holds in the loaded page (checked there every 50 ms), the page's HTML."""
        deadline = time.monotonic() + self.timeout_s
        check = (
            "new Promise(ok => { const check = () => { "
            f"try {{ if (document.readyState === 'complete' && ({condition})) return ok(true); }} catch (e) {{}} "
            "setTimeout(check, 50); }; check(); })"
        )
        while self._call(check).get("result", {}).get("result", {}).get("value") is not True:
            assert time.monotonic() < deadline, f"the page never showed: {condition}"  # the page was (re)loading
        return str(self.evaluate("document.documentElement.outerHTML"))

    def close(self) -> None:
        self.exits.close()
        self.process.kill()
        self.process.wait(30)


def eth_text(wei: int) -> str:
    """The explorer page's `formatUnits`: ETH truncated to 4 decimals, thousands separated."""
    return f"{wei // 10**18:,}.{wei % 10**18 * 10_000 // 10**18:04d}"


def next_change(lines, deadline: float) -> dict:
    """The data of the event stream's next `change` event (keep-alive comments skipped)."""
    for line in lines:
        if line.startswith("data: "):
            return json.loads(line[len("data: ") :])
        assert time.monotonic() < deadline, "the explorer announced no change in time"
    raise AssertionError("the event stream ended")
