"""Node processes forked from one pre-loaded interpreter, so a test pays torch's import once, not once per node.

Every e2e test starts its solvers, verifiers and whistleblowers as real processes (`gradledger solver run`, ...).
Started with `python -m gradledger`, each one spends 5-6 s of CPU importing torch, web3 and FastAPI before it does
anything (py-spy on tests/devnet/test_end_to_end.py: 6.1 s of a solver's 13.7 s; issue 38). Here the test process
keeps one multiprocessing *forkserver* that has imported all of that once (`_PRELOAD`); each node is a fork of it
that runs the very same entry point, `gradledger.cli.main(argv)`, in a fresh process with its own pid, sockets,
log file, environment and working directory. The node under test is the same code; only the interpreter start-up
is shared.

Why a forkserver and not `os.fork()` of the test process: the test process runs torch ops (ATen's OpenMP pool) and
threads (the clock driver, HTTP clients); forking it would copy held locks into the child. The forkserver is a
separate, single-threaded process that only imports.

What stays a plain subprocess: a command whose environment differs in a variable read when torch loads
(`_LOAD_TIME_PREFIXES`: `ATEN_CPU_CAPABILITY`, `MKL_CBWR`, ...), which in a fork would have no effect
(tests/disputes/test_unreproducible_verifier.py gets a fresh interpreter this way); commands run inside network
namespaces (tests/devnet/test_multihost.py); and tests of process behaviour (crash/resume, torchrun groups,
calibration workers) that start their own processes.

`ForkedProcess` offers the part of `subprocess.Popen` the tests and `devnet.lifecycle.stop_processes` use: `pid`,
`poll`, `wait`, `returncode`, `terminate`, `kill`, `send_signal`.
"""

from __future__ import annotations

import atexit
import multiprocessing
import multiprocessing.connection
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

# INVARIANT: `gradledger` first: importing it pins the execution environment (protocol/adapters/execution_env.py)
# before torch loads, exactly as in a node started with `python -m gradledger`.
_PRELOAD = [
    "gradledger",
    "gradledger.cli",
    "torch",
    "torch._dynamo",  # torch.optim's first step imports it (torch._disable_dynamo): 1-1.5 s a process
    "web3",
    "eth_account",
    "fastapi",
    "uvicorn",
    "protocol.adapters.chain",
    "protocol.adapters.contracts",
    "adversary.solver",
    "adversary.verifier",
    "solver.node",
    "solver.process_group",
    "verifier.service",
    "verifier.metrics",
    "whistleblower.watcher",
    "auditor.audit",
    "pydantic.v1",
    "tests.forked_nodes",
]

_LOAD_TIME_PREFIXES = ("ATEN_", "MKL_", "OMP_", "KMP_", "ONEDNN_", "DNNL_", "OPENBLAS_", "GRADLEDGER_EXECUTION_PINS")
"""Variables torch, MKL and OpenMP read when they load: a command whose environment differs from the server's in
any of them gets a fresh interpreter instead (in a fork they would have no effect)."""

_context: multiprocessing.context.ForkServerContext | None = None
_server_environment: dict[str, str] = {}
_started: list[ForkedProcess] = []


def _get_context() -> multiprocessing.context.ForkServerContext:
    global _context, _server_environment
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(_PRELOAD)
        _server_environment = _load_time_variables(os.environ)
        atexit.register(_kill_leftovers)  # runs before multiprocessing's own exit hook, which would join them
    return _context


def _load_time_variables(environment: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in environment.items() if k.startswith(_LOAD_TIME_PREFIXES)}


def _run_cli(argv: list[str], out_path: str, err_path: str, environment: dict[str, str], cwd: str) -> None:
    """In the forked child: the caller's environment and directory, stdout and stderr into files, then the CLI."""
    os.environ.clear()
    os.environ.update(environment)
    os.chdir(cwd)
    for fd, path in ((1, out_path), (2, err_path)):
        opened = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
        signal.signal(number, signal.SIG_DFL)
    sys.argv = ["gradledger", *argv]
    from gradledger.cli import main

    try:
        main(argv)
    finally:
        atexit._run_exitfuncs()  # a forked child leaves through os._exit: run what a normal exit would


class ForkedProcess:
    """One `gradledger` process forked from the pre-loaded server; the subset of `subprocess.Popen` tests use."""

    def __init__(self, argv: list[str], out_path: Path, err_path: Path, env: Mapping[str, str], cwd: Path) -> None:
        self.args = ["gradledger", *argv]
        self._process = _get_context().Process(
            target=_run_cli, args=(list(argv), str(out_path), str(err_path), dict(env), str(cwd)), daemon=False
        )
        self._lock = threading.Lock()
        self._process.start()
        self.pid = self._process.pid
        _started.append(self)

    @property
    def returncode(self) -> int | None:
        return self.poll()

    def poll(self) -> int | None:
        # INVARIANT: one reader of the exit status at a time. multiprocessing reads it off a pipe once; two threads
        # polling together (a test waiting for the exit while the clock driver checks which nodes live) both saw the
        # pipe ready, and the second read found it drained and reported 255 for a node that exited 0.
        with self._lock:
            return self._process.exitcode

    def wait(self, timeout: float | None = None) -> int:
        multiprocessing.connection.wait([self._process.sentinel], timeout)  # readable once it exited; reads nothing
        code = self.poll()
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return code

    def send_signal(self, number: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, number)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def _kill_leftovers() -> None:
    for process in _started:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def _is_forkable(env: Mapping[str, str]) -> bool:
    _get_context()
    return _load_time_variables(env) == _server_environment


def start_gradledger(
    argv: list[str], log_path: Path, *, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> ForkedProcess | subprocess.Popen:
    """`gradledger <argv>` in the background, stdout and stderr appended to `log_path`: forked from the pre-loaded
    server, or a fresh interpreter when `env` changes what torch reads at load."""
    environment = dict(os.environ if env is None else env)
    with open(log_path, "ab"):  # there when this returns, as with Popen(stdout=open(log_path, "ab"))
        pass
    if not _is_forkable(environment):
        with open(log_path, "ab") as log:
            return subprocess.Popen(
                [sys.executable, "-m", "gradledger", *argv], stdout=log, stderr=subprocess.STDOUT, env=environment,
                cwd=cwd,
            )  # fmt: skip
    return ForkedProcess(argv, log_path, log_path, environment, cwd or Path.cwd())


def run_gradledger(
    argv: list[str], *, timeout: float, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`gradledger <argv>` to its end, like `subprocess.run(..., capture_output=True, text=True, timeout=...)`."""
    environment = dict(os.environ if env is None else env)
    if not _is_forkable(environment):
        return subprocess.run(
            [sys.executable, "-m", "gradledger", *argv], capture_output=True, text=True, timeout=timeout,
            env=environment, cwd=cwd,
        )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="gradledger-cli-") as captured:
        out, err = Path(captured) / "stdout", Path(captured) / "stderr"
        process = ForkedProcess(argv, out, err, environment, cwd or Path.cwd())
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)
            raise
        read = lambda path: path.read_text(errors="replace") if path.exists() else ""  # noqa: E731
        return subprocess.CompletedProcess(process.args, code, read(out), read(err))
