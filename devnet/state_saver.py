"""Save the devnet's chain after every block, atomically, so a killed anvil loses (almost) nothing.

anvil's own saving (`--state` with `--state-interval`) runs on a timer of whole seconds, not per block, and
rewrites the file in place: a SIGKILL loses up to a second of blocks, and one during the write leaves a
truncated file the next start cannot load. So `gradledger devnet up` starts anvil with `--load-state` only
(it never writes the file itself) and this saver beside it: it polls the latest block (every `POLL_S`), and
whenever it changed asks anvil for its whole state (`anvil_dumpState`, the same JSON anvil writes on exit,
gzipped) and writes it to a temporary file renamed over the state file. A kill of anvil, of the saver or of
both at any moment leaves the last complete save; what a kill can lose is the blocks mined since the saver's
last poll (at most `POLL_S` plus one dump). `gradledger devnet down` stops the saver, saves once more and only
then stops anvil. The file is not fsynced: it survives a killed process, not a power cut (a devnet).

Run as `python devnet/state_saver.py RPC_URL STATE_PATH ANVIL_PID`; it exits when anvil is gone.
"""

from __future__ import annotations

import gzip
import logging
import os
import sys
import time
from pathlib import Path

import requests

POLL_S = 0.05
"""How often the saver looks for a new block: the most a kill of anvil can lose, besides one dump."""
logger = logging.getLogger("gradledger.devnet.state_saver")


def _rpc(session: requests.Session, rpc_url: str, method: str, params: list) -> object:
    reply = session.post(rpc_url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, timeout=60)
    reply.raise_for_status()
    body = reply.json()
    if "error" in body:
        raise RuntimeError(f"{method} failed at {rpc_url}: {body['error']}")
    return body["result"]


def save_state(rpc_url: str, state_path: Path, session: requests.Session | None = None) -> None:
    """Write anvil's whole state to `state_path` atomically (temporary file, then rename)."""
    session = session or requests.Session()
    dumped = _rpc(session, rpc_url, "anvil_dumpState", [])
    data = gzip.decompress(bytes.fromhex(str(dumped).removeprefix("0x")))
    tmp = state_path.with_name(f"{state_path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(state_path)


def _latest_block_hash(session: requests.Session, rpc_url: str) -> str:
    block = _rpc(session, rpc_url, "eth_getBlockByNumber", ["latest", False])
    return str(block["hash"]) if isinstance(block, dict) else ""


def _is_alive(pid: int) -> bool:
    """Whether anvil still runs (a zombie, killed but not yet reaped by its parent, has an empty command line)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return bool(Path(f"/proc/{pid}/cmdline").read_bytes())
    except OSError:
        return True  # no /proc (macOS): trust the pid


def run_saver(rpc_url: str, state_path: Path, anvil_pid: int) -> None:
    """Save after every new latest block (its hash: a revert or a reorg changes it too) until anvil exits, or
    until the state's directory is gone (a deleted home: nothing left to save to)."""
    session, saved, failure = requests.Session(), "", ""
    logger.info("saving the devnet state of %s to %s after every block", rpc_url, state_path)
    while _is_alive(anvil_pid) and state_path.parent.is_dir():
        try:
            latest = _latest_block_hash(session, rpc_url)
            if latest != saved:
                save_state(rpc_url, state_path, session)
                saved, failure = latest, ""
        except (requests.RequestException, RuntimeError, ValueError, OSError) as exc:
            if _is_alive(anvil_pid) and str(exc) != failure:  # busy: retried at the next poll, logged once
                failure = str(exc)
                logger.warning("cannot save the devnet state, retrying: %s", failure)
        time.sleep(POLL_S)
    logger.info("anvil exited or its home was removed; %s keeps the state saved last", state_path)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    run_saver(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]))
