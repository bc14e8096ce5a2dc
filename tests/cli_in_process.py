"""`gradledger ARGS` run inside the test process: exit status, stdout and stderr, as a subprocess would give them.

Why (issue 38): a test that starts `python -m gradledger ...` only to see a bad input refused pays a new
interpreter's start-up, seconds of CPU per case, for a check that takes milliseconds. `run_cli` calls the real entry
point, `gradledger.cli.main`, with its error handling (a GradledgerError is one `error:` line on stderr and exit 1;
typer's usage errors exit 2), against whatever real chain the test gives it; only the separate process is left out.
So it is for bad-input checks, never for a node that must run on its own.

What a command changes for its whole process is put back afterwards, so one call cannot leak into the next test:
the environment variables it was given, the default chain policy the fee options set
(protocol/adapters/finality.py) and gradledger's log handler. The logger starts each call unconfigured, as in a new
process, so the command's `configure_logging` writes its log lines to the captured stderr even when an earlier test
configured logging in this process.
A bug (any other exception) is not turned into an exit status: it propagates, with its traceback, and fails the test.
"""

from __future__ import annotations

import io
import logging
import os
from collections.abc import Mapping
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass

from gradledger.cli import main
from protocol.adapters.finality import get_default_chain_policy, set_default_chain_policy


@dataclass(frozen=True)
class CliResult:
    """What a `gradledger` process would have shown: its exit status and the two streams."""

    returncode: int
    stdout: str
    stderr: str


def _exit_status(code: object) -> int:
    """SystemExit's code as a process exit status (None is 0, a message is 1, as the interpreter does)."""
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def run_cli(*args: str, env: Mapping[str, str] | None = None) -> CliResult:
    """Run `gradledger ARGS` in this process with `env` added to the environment; see the module docstring."""
    saved_env = dict(os.environ)
    saved_policy = get_default_chain_policy()
    logger = logging.getLogger("gradledger")
    saved_handlers, saved_configured = list(logger.handlers), getattr(logger, "_gradledger_configured", False)
    stdout, stderr = io.StringIO(), io.StringIO()
    try:
        logger.handlers[:] = []
        logger._gradledger_configured = False  # type: ignore[attr-defined]
        os.environ.update(env or {})
        with redirect_stdout(stdout), redirect_stderr(stderr):
            try:
                main(list(args))
                code: object = 0
            except SystemExit as exc:
                code = exc.code
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        set_default_chain_policy(saved_policy)
        logger.handlers[:] = saved_handlers
        logger._gradledger_configured = saved_configured  # type: ignore[attr-defined]
    return CliResult(_exit_status(code), stdout.getvalue(), stderr.getvalue())
