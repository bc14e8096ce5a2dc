"""The HTTP guard every node is served behind (protocol/adapters/http_guard.py), attacked on a real server.

The hostile requests found in the field go to a node app served by `serve_in_thread` in a child process that
imported py_ecc, as a verifier does: py_ecc raises the recursion limit to 100,000, so before the guard a JSON
body of 100,000 `[` overflowed the C stack of the server thread and the process died of SIGSEGV. A child process
keeps that crash (were it to come back) from taking the test run with it, and lets the test see it die.
"""

from __future__ import annotations

import json
import select
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi import FastAPI, HTTPException
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from protocol.adapters.http import serve_in_thread
from protocol.adapters.http_guard import DEFAULT_LIMITS, HttpLimits
from protocol.bounded_json import find_json_depth

CHILD = """
import sys, py_ecc  # noqa: F401  (raises the recursion limit, as in a verifier)
from tests.adapters.test_http_guard import make_hostile_target, SHORT_DEADLINES
from protocol.adapters.http import serve_in_thread
server = serve_in_thread(make_hostile_target(), limits=SHORT_DEADLINES)
print(server.url, flush=True)
sys.stdin.read()
"""
SHORT_DEADLINES = HttpLimits(body_deadline_s=1.0, head_deadline_s=1.0)
"""So the slow-client tests end in a second; every other limit is the default every node runs with."""


class Vote(BaseModel):
    seat: int
    signature: str


def make_hostile_target() -> FastAPI:
    """A node app with the body-taking route shapes the services have (`payload: dict`, a pydantic model)."""
    from protocol.adapters.artifacts import LocalArtifactStore
    from protocol.adapters.http import make_node_app

    app = make_node_app("verifier", "0x" + "11" * 20, LocalArtifactStore("/nonexistent-store"))

    @app.post("/jury/votes")
    def post_vote(payload: dict) -> dict:
        return {"keys": len(payload)}

    @app.post("/model")
    def post_model(vote: Vote) -> dict:
        return {"seat": vote.seat}

    @app.get("/echo/{name}")
    def echo(name: str) -> dict:
        raise HTTPException(400, f"no such name {name!r}")

    return app


@contextmanager
def hostile_target() -> Iterator[tuple[str, subprocess.Popen]]:
    process = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        url = process.stdout.readline().decode().strip()
        assert url.startswith("http://"), f"the server did not start (exit code {process.poll()})"
        yield url, process
    finally:
        process.stdin.close()
        process.terminate()
        process.wait(timeout=20)


@pytest.fixture(scope="module")
def target() -> Iterator[tuple[str, subprocess.Popen]]:
    with hostile_target() as served:
        yield served


def assert_alive(url: str, process: subprocess.Popen) -> None:
    assert process.poll() is None, f"the server process died (exit code {process.returncode})"
    assert httpx.get(f"{url}/health", timeout=10).status_code == 200


def send_streamed(url: str, path: str, total: int, chunk: bytes, content_length: bool = True) -> tuple[bytes, int]:
    """POST `total` bytes of `chunk`s over a raw socket, reading between chunks; (response, bytes sent).

    The client stops sending as soon as the server answered or closed, as a real client would; how much it
    had sent by then tells whether the server refused early or read the whole body first.
    """
    host, port = urlsplit(url).hostname, urlsplit(url).port
    framing = f"Content-Length: {total}" if content_length else "Transfer-Encoding: chunked"
    head = f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n{framing}\r\n\r\n"
    sent, response = 0, b""
    with socket.create_connection((host, port), timeout=60) as sock:
        sock.sendall(head.encode())
        try:
            while sent < total:
                if select.select([sock], [], [], 0)[0]:
                    break
                piece = chunk[: total - sent]
                sock.sendall(piece if content_length else b"%x\r\n%b\r\n" % (len(piece), piece))
                sent += len(piece)
            if not content_length and sent >= total:
                sock.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server refused and closed: read what it answered
        try:
            while data := sock.recv(65536):
                response += data
                if response_complete(response):
                    break
        except (ConnectionResetError, TimeoutError):
            pass
    return response, sent


def response_complete(response: bytes) -> bool:
    head, sep, body = response.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return False


def status_of(response: bytes) -> int:
    assert response.startswith(b"HTTP/1.1 "), f"no HTTP response: {response[:200]!r}"
    return int(response.split(b" ", 2)[1])


# -- the attacks found in the field -----------------------------------------------------------------------------


def test_100000_deep_json_is_refused_and_the_process_lives(target):
    url, process = target
    for body in (b"[" * 100_000, b'{"a":' + b"[" * 100_000, b"[" * 100_000 + b"]" * 100_000):
        response = httpx.post(f"{url}/jury/votes", content=body, headers={"content-type": "application/json"})
        assert 400 <= response.status_code < 500, response.status_code
        assert len(response.content) < 2048
        assert_alive(url, process)


def test_40_mb_body_is_refused_early_without_echo(target):
    url, process = target
    response, sent = send_streamed(url, "/jury/votes", 40_000_000, b'"' + b"a" * 65_535)
    assert status_of(response) == 413
    assert sent < 4_000_000, f"the server read {sent} bytes of a body it refuses by its length"
    assert b"aaaa" not in response and len(response) < 2048
    assert_alive(url, process)


# -- the guard's limits ---------------------------------------------------------------------------------------


def test_deep_json_within_the_size_limit_is_refused_before_parsing(target):
    url, process = target
    for body in (b"[" * 3000, b'{"a":' * 600 + b"1" + b"}" * 600, b'{"seat": [[[' * 20):
        response = httpx.post(f"{url}/jury/votes", content=body, headers={"content-type": "application/json"})
        assert response.status_code == 400 and "nested deeper than 32" in response.json()["detail"]
    flat = httpx.post(f"{url}/jury/votes", json={"a": [[["[[[[[[" * 100]]], "b": "]]]" * 100})
    assert flat.status_code == 200 and flat.json() == {"keys": 2}, "brackets inside strings are not nesting"
    assert_alive(url, process)


def test_chunked_bodies_are_refused_as_they_grow(target):
    url, process = target
    for path, chunk in (("/jury/votes", b"[" * 65_536), ("/model", b'"' + b"a" * 65_535), ("/health", b"x" * 65_536)):
        response, sent = send_streamed(url, path, 100_000_000, chunk, content_length=False)
        assert status_of(response) == 413, (path, response[:200])
        assert sent < 10_000_000, f"{path}: the server read {sent} bytes of a 100 MB body before refusing it"
        assert b"aaaa" not in response and b"[[[[" not in response
    assert_alive(url, process)


def test_100_mb_json_string_is_refused_by_its_length(target):
    url, process = target
    response, sent = send_streamed(url, "/model", 100_000_000, b'"' + b"a" * 1_048_575)
    assert status_of(response) == 413 and sent < 10_000_000 and len(response) < 2048
    assert_alive(url, process)


def test_validation_errors_say_what_is_wrong_without_the_input(target):
    url, _ = target
    response = httpx.post(f"{url}/model", json={"seat": "7" * 3000 + "x", "signature": ["s" * 3000]})
    assert response.status_code == 422
    assert "7777" not in response.text and "ssss" not in response.text and len(response.content) < 2048
    assert {tuple(e["loc"]) for e in response.json()["detail"]} == {("body", "seat"), ("body", "signature")}
    assert all(e["msg"] for e in response.json()["detail"])
    broken = httpx.post(f"{url}/model", content=b'{"seat": 1, "signature": "' + b"q" * 3000)
    assert broken.status_code == 422 and "qqqq" not in broken.text and broken.json()["detail"][0]["msg"]


def test_error_details_are_bounded(target):
    url, _ = target
    response = httpx.get(f"{url}/echo/{'n' * 10_000}")
    assert response.status_code == 400 and len(response.content) < 1024 and "characters cut" in response.text
    assert httpx.get(f"{url}/echo/{'n' * 20_000}").status_code in (400, 431)  # past h11's 16 KiB head limit
    refused = httpx.post(f"{url}/echo/{'n' * 10_000}", content=b"x" * 100_000)
    assert refused.status_code == 413 and "nnnn" not in refused.text and len(refused.content) < 1024


def test_a_slow_body_gets_408_and_frees_the_connection(target):
    url, process = target
    host, port = urlsplit(url).hostname, urlsplit(url).port
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.sendall(f"POST /jury/votes HTTP/1.1\r\nHost: {host}\r\nContent-Length: 200\r\n\r\n".encode())
        sent = 0
        while not select.select([sock], [], [], 0.1)[0]:  # a byte every 0.1 s: 20 s for the whole body
            sock.sendall(b"[")
            sent += 1
            assert sent < 200, "the server waited for the whole slow body"
        response = sock.recv(65536)
        assert status_of(response) == 408
        assert_eventually_closed(sock)
    assert_alive(url, process)


def test_a_slow_request_head_is_cut_off(target):
    url, process = target
    host, port = urlsplit(url).hostname, urlsplit(url).port
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.sendall(f"GET /health HTTP/1.1\r\nHost: {host}\r\nX-Slow: ".encode())
        sent = 0
        while not select.select([sock], [], [], 0.1)[0]:
            sock.sendall(b"a")
            sent += 1
            assert sent < 200, "the server waited for the whole slow head"
        assert_eventually_closed(sock)
    assert_alive(url, process)


def assert_eventually_closed(sock: socket.socket) -> None:
    """The server closed the connection: reads end (EOF or reset) rather than time out."""
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass


def test_a_full_lane_answers_503_while_health_and_the_vote_exchange_answer():
    """Handlers blocked in one lane take no slot of another and none of the threadpool /health needs."""
    entered, release = threading.Semaphore(0), threading.Event()
    app = make_hostile_target()

    @app.get("/stuck")
    def stuck() -> dict:
        entered.release()
        release.wait(30)
        return {}

    limits = HttpLimits(lane_slots={"default": 2, "jury": 2}, lane_wait_s=0.2)
    server = serve_in_thread(app, limits=limits)
    try:
        with httpx.Client(timeout=30) as client:
            blocked = [threading.Thread(target=client.get, args=(f"{server.url}/stuck",)) for _ in range(2)]
            for thread in blocked:
                thread.start()
            for _ in blocked:
                assert entered.acquire(timeout=30)
            busy = client.get(f"{server.url}/stuck")
            assert busy.status_code == 503 and "busy" in busy.json()["detail"]
            assert client.get(f"{server.url}/health").status_code == 200
            assert client.post(f"{server.url}/jury/votes", json={"seat": 1}).status_code == 200
            release.set()
            for thread in blocked:
                thread.join(30)
            assert client.get(f"{server.url}/stuck").status_code == 200, "the slots came back"
    finally:
        release.set()
        server.stop()


def json_depth(value) -> int:
    if isinstance(value, list):
        return 1 + max((json_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((json_depth(v) for v in value.values()), default=0)
    return 0


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab\n'),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='[]{}"\\a'), inner, max_size=3),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None, database=None)
@given(JSON)
def test_depth_scan_equals_the_nesting_of_any_json_document(value):
    data = json.dumps(value).encode()
    assert find_json_depth(data, 1_000) == json_depth(value)
    assert find_json_depth(data, 1) == min(json_depth(value), 2), "it stops once past the limit"


def test_every_route_limit_holds_a_vote_and_the_vote_lane_is_its_own():
    vote = b'{"dispute_id": "0x' + b"ab" * 32 + b'", "seat": 12, "juror": "0x' + b"cd" * 20 + b'", '
    vote += b'"challenger_wins": true, "signature": "0x' + b"ef" * 96 + b'"}'
    route = DEFAULT_LIMITS.route_of("POST", "/jury/votes")
    assert len(vote) * 8 < route.max_body_bytes <= DEFAULT_LIMITS.max_body_bytes and route.lane == "jury"
    assert DEFAULT_LIMITS.route_of("GET", "/jury/votes/0x12").lane == "jury"
    assert sum(DEFAULT_LIMITS.lane_slots.values()) < 40, "the lanes leave anyio's 40 threads room for /health"
