"""A logging handler that keeps every record, for tests that assert what a node logged and at which level."""

from __future__ import annotations

import logging


class LogRecords(logging.Handler):
    """Attach to a node's logger; `records` holds what it logged, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
