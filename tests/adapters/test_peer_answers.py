"""A hostile peer's answers cannot kill the node that asks (issue 18: the other direction of the HTTP guard).

The attack: a solver (or any announced peer) answers `/identity`, `/commitments/...` or a vote list with 100,000
nested `[`. A node parsing it with plain `json` in a process where py_ecc raised the recursion limit to 100,000
(every node: BLS) overflows its stack and dies without a word (exit 139) -- a cheater could silence every
verifier of its round. Each call runs in a child process, so a crash fails the test instead of killing pytest.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from fastapi import FastAPI
from fastapi.responses import Response

from protocol.adapters.http import serve_in_thread

DEEP = b"[" * 100_000
CHILD = """
import sys, py_ecc  # noqa: F401  (raises the recursion limit to 100,000, as in every node)
from protocol.adapters.http import PeerError, PeerSet
from protocol.commitment import CommitmentDocError, decode_commitment_doc
url = sys.argv[1]
peers = PeerSet([url])
assert peers.url_of("0x" + "11" * 20) is None
assert peers.find_role("solver") == []
assert peers.get_json_list(url, "/jury/votes/1") == []
try:
    peers.get_json(url, "/commitments/1/0")
    raise SystemExit("a deep answer was accepted")
except PeerError as exc:
    assert "nested more than" in str(exc), exc
document = peers.get_json(url, "/shallow")["document"]  # shallow outside, 100,000 deep inside the string
try:
    decode_commitment_doc(document.encode())
    raise SystemExit("a deep document was accepted")
except CommitmentDocError as exc:
    assert "nested more than" in str(exc), exc
print("survived")
"""


@pytest.fixture(scope="module")
def hostile_peer():
    app = FastAPI()

    @app.get("/shallow")
    def shallow() -> dict:
        return {"document": DEEP.decode()}

    @app.get("/{path:path}")
    def deep(path: str) -> Response:
        return Response(DEEP, media_type="application/json")

    server = serve_in_thread(app)
    yield server.url
    server.stop()


def test_deep_json_answers_are_refused_unparsed_and_the_node_lives(hostile_peer):
    child = subprocess.run([sys.executable, "-c", CHILD, hostile_peer], capture_output=True, text=True, timeout=120)
    assert child.returncode == 0 and "survived" in child.stdout, (child.returncode, child.stderr[-2000:])


def test_an_oversized_answer_is_not_read_past_the_limit(hostile_peer, monkeypatch):
    import protocol.adapters.http as http

    monkeypatch.setattr(http, "MAX_PEER_JSON_BYTES", 1_000)
    with pytest.raises(http.PeerError, match="answered more than 1,000 bytes"):
        http.PeerSet([hostile_peer]).get_json(hostile_peer, "/anything")
