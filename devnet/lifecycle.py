"""`gradledger devnet up|down|status`: a long-lived local anvil whose chain survives restarts.

The devnet lives in `<home>/devnet/`: anvil's state file (dumped every 2 s and on a clean
stop, loaded on start, so `down` then `up` resumes the same chain), its log, and
`devnet.json` (pid, RPC URL) that `down` and `status` read. `up` is idempotent: when the
recorded anvil is still running it reports it instead of starting another.
"""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from devnet.anvil import DEVNET_CHAIN_ID, AnvilError, AnvilProcess

DEFAULT_PORT = 8545
STATE_INTERVAL_S = 2


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


def start_devnet(home: Path, port: int = DEFAULT_PORT) -> tuple[DevnetInfo, bool]:
    """Start anvil (or find the running one); returns (info, started_now)."""
    running = read_devnet_info(home)
    if running is not None:
        return running, False
    directory = get_devnet_dir(home)
    directory.mkdir(parents=True, exist_ok=True)
    state_path, log_path = directory / "state.json", directory / "anvil.log"
    try:
        anvil = AnvilProcess(
            port=port,
            state_path=state_path,
            log_path=log_path,
            extra_args=("--state-interval", str(STATE_INTERVAL_S)),
        )
    except AnvilError as exc:
        raise AnvilError(f"{exc}\n(is port {port} taken? pass --port)") from None
    info = DevnetInfo(anvil.process.pid, anvil.rpc_url, anvil.port, DEVNET_CHAIN_ID, str(state_path), str(log_path))
    tmp = directory / "devnet.json.tmp"
    tmp.write_text(json.dumps(asdict(info), indent=1))
    tmp.replace(directory / "devnet.json")
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
