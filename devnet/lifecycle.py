"""`gradledger devnet up|down|status`: a long-lived local anvil whose chain survives restarts.

The devnet lives in `<home>/devnet/`: anvil's state file (saved after every block and on a clean
stop, loaded on start, so `down` then `up` resumes the same chain), its log, `devnet.json`
(pids, RPC URL) that `down` and `status` read while it runs, and `chain.json` (its port), kept
with the state: `up` without `--port` restarts the chain on the port it had, so every node,
manifest and `--rpc-url` pointed at it reaches it again (their chain clients reconnect by
themselves). `up` is idempotent: when the recorded anvil is still running it reports it instead
of starting another.

anvil's own saving is on a timer of whole seconds and rewrites the file in place, so a SIGKILL
lost up to a second of blocks, or the whole chain when it hit a write. anvil therefore only
loads the file, and `devnet/state_saver.py`, a process beside it, saves it after every new block,
atomically: a kill loses at most the blocks of the saver's last poll (docs/nodes.md). A state file
that is unreadable anyway (written by something else, cut by a full disk) is refused by `up` with
what to do. anvil does not keep its clock across a restart (it would stamp the next block at the
wall clock, before a chain that was moved into the future): `up` sets it back to the latest block.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import requests

from devnet.anvil import DEVNET_CHAIN_ID, AnvilError, AnvilProcess
from devnet.state_saver import save_state

DEFAULT_PORT = 8545
CHAIN_FILE = "chain.json"
SAVER_SCRIPT = Path(__file__).with_name("state_saver.py")
_STARTED: dict[int, AnvilProcess | subprocess.Popen] = {}
"""anvil and saver processes started by this process (the demo, a test), by pid: `stop_devnet` reaps them and
removes anvil's temporary directories. Those started by a `gradledger devnet up` that has exited are not here."""


class DevnetError(AnvilError):
    """The devnet cannot start as asked (its port is taken, its saved state is unreadable); says what to do."""


@dataclass(frozen=True)
class DevnetInfo:
    pid: int
    rpc_url: str
    port: int
    chain_id: int
    state_path: str
    log_path: str
    saver_pid: int = 0
    """The process saving the state after every block (devnet/state_saver.py); 0 when none was started."""


def get_home(home: Path | None = None) -> Path:
    """gradledger's data directory: --home, else $GRADLEDGER_HOME, else ./.gradledger."""
    return Path(home or os.environ.get("GRADLEDGER_HOME") or ".gradledger").resolve()


def get_devnet_dir(home: Path) -> Path:
    return home / "devnet"


def _is_process(pid: int, marker: bytes) -> bool:
    """Whether `pid` runs and its command line holds `marker` (a recycled pid is someone else's)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        return marker in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # no /proc (macOS): trust the pid


def _is_anvil(pid: int) -> bool:
    return _is_process(pid, b"anvil")


def _is_saver(pid: int) -> bool:
    return _is_process(pid, SAVER_SCRIPT.name.encode())


def read_devnet_info(home: Path) -> DevnetInfo | None:
    """The recorded devnet if its anvil is still alive, else None."""
    path = get_devnet_dir(home) / "devnet.json"
    try:
        info = DevnetInfo(**json.loads(path.read_text()))
    except (FileNotFoundError, json.JSONDecodeError, TypeError):
        return None
    return info if _is_anvil(info.pid) else None


def read_saved_port(home: Path) -> int | None:
    """The port the devnet of `home` last ran on (kept by `down`), or None if it never ran."""
    try:
        port = json.loads((get_devnet_dir(home) / CHAIN_FILE).read_text())["port"]
    except (FileNotFoundError, json.JSONDecodeError, KeyError, TypeError):
        return None
    return port if isinstance(port, int) and 0 < port < 65536 else None


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


def _is_port_free(port: int) -> bool:
    with socket.socket() as probe:
        # as anvil binds: a port whose connections linger in TIME_WAIT after a kill is free, one with a listener not
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def check_saved_state(state_path: Path) -> None:
    """Refuse a state file anvil cannot load, with what to do: a SIGKILL during one of anvil's dumps leaves it
    truncated (it is rewritten in place), and anvil then only fails with a parse error in its log."""
    if not state_path.exists():
        return
    try:
        with state_path.open("rb") as f:
            json.load(f)
    except (ValueError, OSError) as exc:
        raise DevnetError(
            f"the devnet state {state_path} cannot be read ({type(exc).__name__}: {exc}); anvil was probably killed "
            f"while saving it, and the chain it held is lost. Move it away (e.g. `mv {state_path} "
            f"{state_path}.broken`) and run `gradledger devnet up` again for a fresh chain, then `gradledger deploy`"
        ) from None


def start_devnet(home: Path, port: int | None = None) -> tuple[DevnetInfo, bool]:
    """Start anvil (or find the running one); returns (info, started_now).

    `port`: None restarts the chain on the port it had (saved in <home>/devnet/chain.json), else DEFAULT_PORT;
    0 takes any free port. The port in use is saved for the next start. A saved or given port that is taken
    raises DevnetError naming it (the nodes of this chain are pointed at it: moving the chain loses them)."""
    running = read_devnet_info(home)
    if running is not None:
        if not _is_saver(running.saver_pid):  # killed on its own: the chain would no longer be saved
            running = DevnetInfo(**{**asdict(running), "saver_pid": _start_saver(running)})
            _write_json(get_devnet_dir(home) / "devnet.json", asdict(running))
        return running, False
    directory = get_devnet_dir(home)
    directory.mkdir(parents=True, exist_ok=True)
    state_path, log_path = directory / "state.json", directory / "anvil.log"
    check_saved_state(state_path)
    saved = read_saved_port(home)
    wanted = port if port is not None else (saved if saved is not None else DEFAULT_PORT)
    if wanted and not _is_port_free(wanted):
        whose = "this chain's port (saved in " + str(directory / CHAIN_FILE) + ")" if port is None and saved else "port"
        raise DevnetError(
            f"{whose} {wanted} on 127.0.0.1 is taken by another process; stop it and run `gradledger devnet up` "
            f"again, or pass --port N (or 0 for any free port) and point nodes at the new URL (--rpc-url)"
        )
    load = ("--load-state", str(state_path)) if state_path.exists() else ()
    try:
        anvil = AnvilProcess(port=wanted, log_path=log_path, extra_args=load)
    except AnvilError as exc:
        raise DevnetError(f"{exc}\n(is port {wanted} taken? pass --port)") from None
    _STARTED[anvil.process.pid] = anvil
    info = DevnetInfo(anvil.process.pid, anvil.rpc_url, anvil.port, DEVNET_CHAIN_ID, str(state_path), str(log_path))
    try:
        _resume_clock(info.rpc_url)
        save_state(info.rpc_url, state_path)  # a fresh chain is on disk at once; the saver keeps it current
        info = DevnetInfo(**{**asdict(info), "saver_pid": _start_saver(info)})
    except (requests.RequestException, RuntimeError, ValueError, OSError) as exc:
        anvil.stop()  # no devnet.json was written: nothing else would stop it
        raise DevnetError(f"anvil started but did not answer as expected ({exc}); see {log_path}") from None
    _write_json(directory / CHAIN_FILE, {"port": anvil.port, "chain_id": DEVNET_CHAIN_ID})
    _write_json(directory / "devnet.json", asdict(info))
    return info, True


def _resume_clock(rpc_url: str) -> None:
    """Set anvil's clock to the latest block's time when that is ahead of the wall clock (anvil forgets its
    time offset on restart and would stamp the next block before its parent)."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "eth_getBlockByNumber", "params": ["latest", False]}
    latest = int(requests.post(rpc_url, json=body, timeout=30).json()["result"]["timestamp"], 16)
    if latest > time.time():
        body = {"jsonrpc": "2.0", "id": 2, "method": "evm_setTime", "params": [latest]}
        requests.post(rpc_url, json=body, timeout=30).raise_for_status()


def _start_saver(info: DevnetInfo) -> int:
    """Start devnet/state_saver.py for this anvil, detached like anvil itself; its pid."""
    log = Path(info.log_path).with_name("state-saver.log")
    with log.open("ab") as out:
        saver = subprocess.Popen(
            [sys.executable, str(SAVER_SCRIPT), info.rpc_url, info.state_path, str(info.pid)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    _STARTED[saver.pid] = saver
    return saver.pid


def stop_devnet(home: Path, timeout_s: float = 30.0) -> DevnetInfo | None:
    """Stop the saver, save the chain once more, then SIGTERM the recorded anvil and wait; None if none ran."""
    info = read_devnet_info(home)
    record = get_devnet_dir(home) / "devnet.json"
    if info is None:
        record.unlink(missing_ok=True)
        return None
    if _is_saver(info.saver_pid):
        _terminate(info.saver_pid, _is_saver, timeout_s)
    # anvil not answering: the saver's last save (after the last block it saw) is what is kept
    with contextlib.suppress(requests.RequestException, RuntimeError, ValueError, OSError):
        save_state(info.rpc_url, Path(info.state_path))
    state = Path(info.state_path)
    for leftover in state.parent.glob(f"{state.name}.*.tmp"):  # a write the saver's stop cut short
        leftover.unlink(missing_ok=True)
    _terminate(info.pid, _is_anvil, timeout_s)
    record.unlink(missing_ok=True)
    return info


def _terminate(pid: int, is_running, timeout_s: float) -> None:
    """SIGTERM `pid`, wait up to `timeout_s` for it to go, SIGKILL it if it did not."""
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while is_running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if is_running(pid):
        os.kill(pid, signal.SIGKILL)
    started = _STARTED.pop(pid, None)
    if isinstance(started, AnvilProcess):
        started.stop()  # reaps it and removes its temporary directories
    elif started is not None:
        started.wait()


def stop_processes(processes: Iterable[subprocess.Popen], timeout_s: float = 20.0) -> None:
    """SIGTERM every process still running first, then wait for each; SIGKILL one that outlives `timeout_s`.

    Terminating all before waiting on any lets a group of nodes shut down in parallel.
    """
    processes = list(processes)
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
