"""`gradledger devnet up|down|status`: a long-lived local anvil whose chain survives restarts.

The devnet lives in `<home>/devnet/`: anvil's state file (dumped every second and on a clean
stop, loaded on start, so `down` then `up` resumes the same chain), its log, `devnet.json`
(pid, RPC URL) that `down` and `status` read while it runs, and `chain.json` (its port), kept
with the state: `up` without `--port` restarts the chain on the port it had, so every node,
manifest and `--rpc-url` pointed at it reaches it again. `up` is idempotent: when the recorded
anvil is still running it reports it instead of starting another.

A SIGKILLed anvil loses what it mined since its last dump: anvil dumps on a timer in whole
seconds (`--state-interval`, 1 s here, the least it takes; 0 aborts it), not per block, and a
kill during a dump leaves a truncated file, which `up` refuses with what to do (docs/nodes.md).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from devnet.anvil import DEVNET_CHAIN_ID, AnvilError, AnvilProcess

DEFAULT_PORT = 8545
STATE_INTERVAL_S = 1
"""anvil's `--state-interval`: whole seconds, at least 1 (0 aborts anvil), so 1 s is the most it can save."""
CHAIN_FILE = "chain.json"


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


def get_home(home: Path | None = None) -> Path:
    """gradledger's data directory: --home, else $GRADLEDGER_HOME, else ./.gradledger."""
    return Path(home or os.environ.get("GRADLEDGER_HOME") or ".gradledger").resolve()


def get_devnet_dir(home: Path) -> Path:
    return home / "devnet"


def _is_anvil(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        return b"anvil" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # no /proc (macOS): trust the pid


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
    try:
        anvil = AnvilProcess(
            port=wanted,
            state_path=state_path,
            log_path=log_path,
            extra_args=("--state-interval", str(STATE_INTERVAL_S)),
        )
    except AnvilError as exc:
        raise DevnetError(f"{exc}\n(is port {wanted} taken? pass --port)") from None
    info = DevnetInfo(anvil.process.pid, anvil.rpc_url, anvil.port, DEVNET_CHAIN_ID, str(state_path), str(log_path))
    _write_json(directory / CHAIN_FILE, {"port": anvil.port, "chain_id": DEVNET_CHAIN_ID})
    _write_json(directory / "devnet.json", asdict(info))
    return info, True


def stop_devnet(home: Path, timeout_s: float = 30.0) -> DevnetInfo | None:
    """SIGTERM the recorded anvil (it dumps its state) and wait for it; None if none ran."""
    info = read_devnet_info(home)
    record = get_devnet_dir(home) / "devnet.json"
    if info is None:
        record.unlink(missing_ok=True)
        return None
    os.kill(info.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while _is_anvil(info.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _is_anvil(info.pid):
        os.kill(info.pid, signal.SIGKILL)
    record.unlink(missing_ok=True)
    return info
