"""The protocol in code: pure, deterministic functions every role shares (see docs/protocol.md)."""
