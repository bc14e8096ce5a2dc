"""JSON from someone else, parsed only once it is known to be shallow.

Python's `json` parser recurses once per nesting level, and py_ecc (imported by every node for BLS) raises the
recursion limit to 100,000: 100,000 nested `[` (200 KB) then overflow the C stack and kill the process without a
word (issue 18). So every JSON a peer sends -- a request body (protocol/adapters/http_guard.py), a peer's answer
(protocol/adapters/http.py PeerSet), a commitment document a solver serves (protocol/commitment.py) -- is first
scanned for bracket depth, a loop over the raw bytes that never recurses, and refused past MAX_JSON_DEPTH.
"""

from __future__ import annotations

import json
import re
from typing import Any

from protocol.errors import GradledgerError

MAX_JSON_DEPTH = 32
"""Deeper than anything gradledger sends (a vote or a commitment document nests 3 levels)."""

_JSON_TOKENS = re.compile(rb'"(?:[^"\\]+|\\.)*"?|[\[\]{}]')
"""A JSON string (escapes skipped, an unterminated one runs to the end) or a bracket."""


class JsonTooDeepError(GradledgerError, ValueError):
    """JSON nested deeper than allowed: refused unparsed (a ValueError too, like any malformed JSON)."""


def find_json_depth(data: bytes, limit: int) -> int:
    """The deepest bracket nesting of `data` outside strings, stopping early once it exceeds `limit`.

    A scan over raw bytes, not a parse: it never recurses, and its cost is linear in the input, which the
    caller's size limit bounds. Malformed JSON is left for the parser to refuse.
    """
    depth = deepest = 0
    for match in _JSON_TOKENS.finditer(data):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        elif token in (b"]", b"}"):
            depth = max(depth - 1, 0)
    return deepest


def load_bounded_json(data: bytes | str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """`json.loads` of JSON at most `max_depth` deep; JsonTooDeepError (unparsed) otherwise."""
    raw = data.encode() if isinstance(data, str) else data
    depth = find_json_depth(raw, max_depth)
    if depth > max_depth:
        raise JsonTooDeepError(f"JSON nested more than {max_depth} levels deep: refused unparsed")
    return json.loads(raw)
