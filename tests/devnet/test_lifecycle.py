"""`gradledger devnet up|down|status` on a real anvil: a restart keeps the chain and its port, a kill keeps every
saved block, and a node running through a restart reconnects and carries on."""

from __future__ import annotations

import json
import logging
import os
import shlex
import signal
import socket
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from devnet.anvil import AnvilProcess
from protocol.adapters.chain import ChainClient, ChainUnavailableError
from protocol.adapters.keys import get_devnet_account
from tests.chain_fixtures import events_of, stop, wait_until
from tests.clock import ClockDriver, make_driven
from tests.devnet.test_readme_walkthrough import connect, drive_devnet, get_port, read_serving_url
from tests.forked_nodes import run_gradledger, start_gradledger

pytestmark = pytest.mark.e2e


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gradledger", *args], capture_output=True, text=True, timeout=120)


def test_up_down_up_keeps_the_chain(tmp_path):
    home = str(tmp_path / "home")
    first = _cli("devnet", "up", "--home", home, "--port", "0", "--json")
    assert first.returncode == 0, first.stderr
    info = json.loads(first.stdout)
    assert info["started"] is True
    try:
        again = json.loads(_cli("devnet", "up", "--home", home, "--json").stdout)
        assert again["started"] is False and again["pid"] == info["pid"]
        client = ChainClient(info["rpc_url"], expected_chain_id=31337)
        receiver = get_devnet_account(7).address
        client.transfer(get_devnet_account(6), receiver, 777)
        balance = client.get_balance(receiver)
        assert _cli("devnet", "down", "--home", home).returncode == 0
        assert _cli("devnet", "status", "--home", home).returncode == 1
        restarted = json.loads(_cli("devnet", "up", "--home", home, "--port", "0", "--json").stdout)
        status = json.loads(_cli("devnet", "status", "--home", home, "--json").stdout)
        assert status["running"] and status["block_number"] >= 1
        assert ChainClient(restarted["rpc_url"]).get_balance(receiver) == balance
    finally:
        _cli("devnet", "down", "--home", home)


def _up(home: str, *args: str) -> dict:
    done = _cli("devnet", "up", "--home", home, "--json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _squash(text: str) -> str:
    return "".join(text.split())


def _saved_block(state_path: str) -> int:
    """The latest block in the devnet's state file (always complete: it is replaced by a rename, never rewritten)."""
    number = json.loads(Path(state_path).read_text())["best_block_number"]
    return number if isinstance(number, int) else int(number, 0)


def test_up_refuses_a_taken_saved_port_and_an_unreadable_state(tmp_path):
    home = str(tmp_path / "home")
    port = _up(home, "--port", "0")["port"]
    assert _cli("devnet", "down", "--home", home).returncode == 0
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        taken = _cli("devnet", "up", "--home", home)
    assert taken.returncode != 0
    said = _squash(taken.stderr)  # the terminal's line breaks cut words
    assert _squash(f"this chain's port (saved in {tmp_path / 'home' / 'devnet' / 'chain.json'}) {port}") in said
    assert _squash("is taken by another process") in said and "--port" in said

    state = tmp_path / "home" / "devnet" / "state.json"
    state.write_bytes(state.read_bytes()[: state.stat().st_size // 2])  # what an in-place write cut by a kill leaves
    broken = _cli("devnet", "up", "--home", home)
    assert broken.returncode != 0
    assert _squash("cannot be read") in _squash(broken.stderr) and _squash(f"mv {state}") in _squash(broken.stderr)
    assert _cli("devnet", "status", "--home", home).returncode == 1, "a devnet started on an unreadable state"


def test_sigkilled_anvil_keeps_every_block_it_mined(tmp_path):
    home = str(tmp_path / "home")
    info = _up(home, "--port", "0")
    try:
        client = ChainClient(info["rpc_url"], expected_chain_id=31337)
        receiver = get_devnet_account(7).address
        mined = [client.transfer(get_devnet_account(6), receiver, 1000 + n).block_number for n in range(3)]
        balance = client.get_balance(receiver)
        # saved per block, not on a timer: the last block reaches the file without a clean stop
        wait_until(lambda: _saved_block(info["state_path"]) >= mined[-1], 60, f"block {mined[-1]} to be saved")
        os.kill(info["pid"], signal.SIGKILL)
        wait_until(lambda: _cli("devnet", "status", "--home", home).returncode == 1, 60, "the devnet to be down")
        restarted = _up(home)
        assert restarted["started"] and restarted["port"] == info["port"]
        assert client.block_number() == mined[-1]  # the same client: it reconnects to the restarted chain
        assert client.get_balance(receiver) == balance
    finally:
        _cli("devnet", "down", "--home", home)


def test_restarted_devnet_keeps_its_port_and_chain_and_its_node_reconnects(tmp_path):
    """A solver running through `devnet down` and `devnet up`: it reports the outage once (its /health and one
    WARNING that names the URL and `gradledger devnet up`), then carries on and finishes its run on the
    restarted chain, which kept its port and every block mined before the stop."""
    home = tmp_path / "home"
    env = {**os.environ, "GRADLEDGER_HOME": str(home)}

    def gradledger(*args: str) -> str:
        done = run_gradledger(shlex.split(" ".join(args)), env=env, cwd=tmp_path, timeout=600)
        assert done.returncode == 0, f"{args} exited {done.returncode}:\n{done.stdout}{done.stderr}"
        return done.stdout

    def background(name: str, *args: str) -> tuple[subprocess.Popen, Path]:
        log = tmp_path / f"{name}.log"
        process = start_gradledger(shlex.split(" ".join(args)), log, env=env, cwd=tmp_path)
        cleanup.callback(stop, process)
        wait_until(lambda: read_serving_url(log) or process.poll() is not None, 180, f"{name} to serve")
        assert process.poll() is None, log.read_text()[-3000:]
        return process, log

    with ExitStack() as cleanup:
        cleanup.callback(run_gradledger, ["devnet", "down"], env=env, timeout=60)
        first = json.loads(gradledger("devnet up --port 0 --json"))
        drive_devnet(home)
        gradledger("deploy")
        background("creator", "artifacts serve --announce")
        gradledger("run create --preset tiny --rounds 1 --commit-window 120 --attest-window 90 "
                   "--challenge-window 50 --json")  # fmt: skip
        gradledger("solver stake --amount 10 --run 1 --devnet-account 1")
        solver, log = background("solver", "solver run --run 1 --devnet-account 1 --coordinator --no-progress")
        port = get_port(log)
        protocol = connect(home)
        address = get_devnet_account(1).address
        # nobody moves the clock yet: the commit window stays open, and the rest of the run must happen later
        wait_until(lambda: [e for e in events_of(protocol, "Committed", 1) if e.args["solver"] == address], 300,
                   "the solver to commit in round 0")  # fmt: skip
        before = protocol.chain.block_number()

        gradledger("devnet down")
        wait_until(lambda: first["rpc_url"] in _health(port)["last_error"], 120, "the solver to notice the outage")
        second = json.loads(gradledger("devnet up --json"))
        assert second["started"] and second["port"] == first["port"] and second["rpc_url"] == first["rpc_url"]
        assert protocol.chain.block_number() == before  # every block mined before the stop, none lost
        make_driven(protocol)  # the block-time interval is anvil's setting, not chain state: the test's clock again
        with ClockDriver(protocol, 1, lambda: [(port, solver)] if solver.poll() is None else []):
            wait_until(lambda: solver.poll() is not None, 600, "the solver to finish the run")
        output = log.read_text(errors="replace")
        assert solver.returncode == 0, output[-3000:]
        assert protocol.round_times(1).finished
        after = [e for e in protocol.chain.get_events(before + 1)
                 if protocol.chain.w3.eth.get_transaction(e.transaction_hash)["from"] == address]  # fmt: skip
        assert any(e.name == "ThetaClaimed" for e in after), [e.name for e in after]  # it coordinated the round
        outages = [line for line in output.splitlines() if "chain RPC unreachable" in line]
        assert len(outages) == 1, outages  # logged once, however long the chain was away
        assert first["rpc_url"] in outages[0] and "gradledger devnet up" in outages[0]
        assert "chain RPC reachable again" in output


def _health(port: int) -> dict:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).json()
    except (httpx.HTTPError, ValueError):
        return {"last_error": ""}


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_chain_client_reports_an_outage_once_and_carries_on_after_it(tmp_path):
    """The chain client across a stop and restart of its chain on the same URL, call by call."""
    records, chain_log = _Records(), logging.getLogger("gradledger.chain")
    chain_log.addHandler(records)
    chain_log.setLevel(logging.INFO)  # as a node's logging sets it (node/logs.configure_logging)
    state = tmp_path / "state.json"
    AnvilProcess(state_path=state).stop()  # a saved chain where nothing was sent yet
    anvil = AnvilProcess(state_path=state)  # anvil saves on a clean stop only: a kill loses what follows
    try:
        client = ChainClient(anvil.rpc_url, expected_chain_id=31337, max_retries=1)
        sender, receiver = get_devnet_account(6), get_devnet_account(7).address
        client.transfer(sender, receiver, 1)  # the client now counts nonce 1 next
        port = anvil.port
        anvil.process.kill()
        anvil.stop()
        for _ in range(3):
            with pytest.raises(ChainUnavailableError, match="gradledger devnet up"):
                client.block_number()
        anvil = AnvilProcess(port=port, state_path=state)  # back without the transfer: the sender's nonce is 0
        assert client.get_balance(receiver) == 10_000 * 10**18
        client.transfer(sender, receiver, 2)  # with nonce 1 it would wait for a nonce 0 forever
        assert client.w3.eth.get_transaction_count(sender.address) == 1
        said = [(r.levelname, r.getMessage(), getattr(r, "fields", {})) for r in records.records]
        assert [(level, message) for level, message, _ in said] == [
            ("WARNING", "chain RPC unreachable, retrying until it is back"),
            ("INFO", "chain RPC reachable again"),
        ], said
        assert said[0][2]["rpc_url"] == anvil.rpc_url and "gradledger devnet up" in said[0][2]["why"]

        # a signed transaction the chain already holds is recognised by its hash, one it never saw is not
        tx = {"to": receiver, "value": 3, "gas": 21_000, "nonce": 1, "chainId": 31337, **client._fees()}
        raw = sender.sign_transaction(tx).raw_transaction
        assert client._find_sent(raw) is None
        sent = client.w3.eth.send_raw_transaction(raw)
        assert client._find_sent(raw) == sent
    finally:
        chain_log.removeHandler(records)
        chain_log.setLevel(logging.NOTSET)
        anvil.stop()
