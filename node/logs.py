"""Structured logs: one line per event, `key=value` pairs (or JSON with GRADLEDGER_LOG_JSON=1).

Nodes log through `get_logger(name).info("event", extra={"fields": {...}})` via `log_event`,
never print, so a log line is both readable and machine-parseable.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import Any


class _Formatter(logging.Formatter):
    def __init__(self, as_json: bool) -> None:
        super().__init__()
        self.as_json = as_json

    def format(self, record: logging.LogRecord) -> str:
        fields: dict[str, Any] = getattr(record, "fields", {})
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"
        if self.as_json:
            return json.dumps(
                {
                    "ts": stamp,
                    "level": record.levelname.lower(),
                    "logger": record.name,
                    "event": record.getMessage(),
                    **fields,
                },
                default=str,
            )
        pairs = " ".join(
            f"{k}={json.dumps(v, default=str) if isinstance(v, str) and ' ' in v else v}" for k, v in fields.items()
        )
        return f"{stamp} {record.levelname.lower():<5} {record.name} {record.getMessage()} {pairs}".rstrip()


def configure_logging(level: str | None = None) -> None:
    """Send gradledger's logs to stderr in the structured format; idempotent."""
    root = logging.getLogger("gradledger")
    if getattr(root, "_gradledger_configured", False):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter(as_json=os.environ.get("GRADLEDGER_LOG_JSON") == "1"))
    root.addHandler(handler)
    root.setLevel((level or os.environ.get("GRADLEDGER_LOG_LEVEL", "INFO")).upper())
    root.propagate = False
    root._gradledger_configured = True  # type: ignore[attr-defined]


def get_logger(name: str) -> logging.Logger:
    return logging.getLogger(f"gradledger.{name}")


def log_event(logger: logging.Logger, event: str, level: int = logging.INFO, **fields: Any) -> None:
    """Log `event` with structured fields."""
    logger.log(level, event, extra={"fields": fields})
