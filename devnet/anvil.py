"""Start and stop a local anvil: loopback only, a free port, optional state on disk.

`AnvilProcess` is what tests, benchmarks and the demo use to get a real chain. anvil prints
"Listening on HOST:PORT" once it accepts connections; we wait for that line in its log file
(no fixed sleeps, no fixed ports: `--port 0` lets the OS choose). Stopping sends SIGTERM and
waits, so anvil dumps its state file when one was given (a restart then resumes the chain).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from devnet.toolchain import ToolchainError, find_tool

DEVNET_CHAIN_ID = 31337
_LISTENING = re.compile(rb"Listening on ([0-9.]+):(\d+)")


class AnvilError(ToolchainError):
    """anvil failed to start, or stopped unexpectedly."""


class AnvilProcess:
    """A running anvil; use as a context manager or call `stop()`."""

    def __init__(
        self,
        *,
        port: int = 0,
        state_path: Path | None = None,
        chain_id: int = DEVNET_CHAIN_ID,
        accounts: int = 20,
        balance_eth: int = 10_000,
        log_path: Path | None = None,
        extra_args: tuple[str, ...] = (),
        start_timeout_s: float = 30.0,
        host: str = "127.0.0.1",
        wrapper: tuple[str, ...] = (),
    ) -> None:
        """`host`: the address anvil listens on; `wrapper`: a command prefix anvil runs under (e.g. `ip netns exec
        NS`, to run it inside another host's network namespace: devnet/hosts.py)."""
        self._tmp = None
        # anvil spills historical states to disk (hundreds of MB per thousand blocks, which the test clock mines)
        # under ~/.foundry/anvil/tmp by default and never removes them: keep them in a directory of our own,
        # removed by stop().
        self._states = tempfile.TemporaryDirectory(prefix="gradledger-anvil-states-")
        self.states_dir = Path(self._states.name)
        if log_path is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="gradledger-anvil-")
            log_path = Path(self._tmp.name) / "anvil.log"
        self.log_path = log_path
        args = [
            *wrapper,
            str(find_tool("anvil")),
            "--host", host,
            "--port", str(port),
            "--chain-id", str(chain_id),
            "--accounts", str(accounts),
            "--balance", str(balance_eth),
            "--cache-path", self._states.name,
            *extra_args,
        ]  # fmt: skip
        if state_path is not None:
            state_path.parent.mkdir(parents=True, exist_ok=True)
            args += ["--state", str(state_path)]
        self.state_path = state_path
        self.chain_id = chain_id
        with open(log_path, "wb") as log:
            self.process = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        self.host, self.port = self._wait_listening(start_timeout_s)
        self.rpc_url = f"http://{self.host}:{self.port}"

    def _wait_listening(self, timeout_s: float) -> tuple[str, int]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            match = _LISTENING.search(self.log_path.read_bytes())
            if match:
                return match.group(1).decode(), int(match.group(2))
            if self.process.poll() is not None:
                tail = self.log_path.read_bytes()[-2000:].decode(errors="replace")
                raise AnvilError(f"anvil exited with status {self.process.returncode} at start:\n{tail}")
            time.sleep(0.02)
        self.stop()
        raise AnvilError(f"anvil did not report 'Listening on' within {timeout_s:.0f} s; see {self.log_path}")

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM and wait (anvil writes its state file on the way out); SIGKILL if it hangs."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        self._states.cleanup()

    def __enter__(self) -> AnvilProcess:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
