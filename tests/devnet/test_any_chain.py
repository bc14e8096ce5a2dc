"""A round on a chain that is not the devnet: interval mining, chain id 1337, a keystore deployer, two reorgs.

anvil mines a block every second on its own (`--block-time 1`) under chain id 1337, so no devnet shortcut is
allowed (the nodes would fail if they took one) and the run goes in real time: windows of tens of seconds and a
generous timeout, never a driven clock. The contracts are deployed by `gradledger deploy --keystore` and every
account is a fresh key (devnet accounts are refused on chain 1337); nodes are real processes signing with
$GRADLEDGER_PRIVATE_KEY, with `--confirmations 1 --max-fee-gwei 50`.

In the middle of the round the test reorganises the chain twice with `anvil_reorg`:
1. once the solver logged its commit as done (1 confirmation), the blocks from the commit's on are replaced by
   empty ones: the commit is gone. The solver must see that from the chain and commit again (once);
2. once the verifier's attestation is mined, the blocks from its block on are replaced by new ones that hold the
   same signed transaction: the attestation is still there, and the verifier must send nothing.
The round must settle, the chain hold exactly one commitment and one attestation, the node logs no unhandled
error, and the nodes' event readers log the reorg and read again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from eth_account import Account
from web3 import Web3

from devnet.anvil import AnvilProcess
from devnet.runs import ETH, create_run
from protocol.adapters.artifacts import LocalArtifactStore
from protocol.adapters.chain import ChainClient
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.finality import ChainPolicy
from protocol.adapters.http import make_node_app, serve_in_thread
from protocol.adapters.manifest import load_manifest
from protocol.config import build_run_config
from protocol.constants import JUROR_MIN_STAKE
from protocol.hashing import hash_to_hex
from protocol.run_presets import TINY
from protocol.types import ROLE_SOLVER, ROLE_VERIFIER
from tests.chain_fixtures import DEVNET_NODE_FLAGS, _healthy, free_port, stop, wait_until
from tests.forked_nodes import start_gradledger

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.wall]

CHAIN_ID = 1337
RULES = TINY.with_run(
    max_rounds=1, samples_per_commitment=2, verifiers_per_commitment=1, commit_window=40, attest_window=40,
    challenge_window=25, dispute_timeout=60,
)  # fmt: skip
NODE_CHAIN_FLAGS = ("--confirmations", "1", "--max-fee-gwei", "50")


@contextmanager
def mining_paused(url: str) -> Iterator[None]:
    """Interval mining stopped while the test reads the head and reorganises from it: a block mined in between (on a
    loaded machine, seconds pass) would make the reorg one block too shallow and leave the block in question."""
    rpc(url, "evm_setIntervalMining", [0])
    try:
        yield
    finally:
        rpc(url, "evm_setIntervalMining", [1])


def rpc(url: str, method: str, params: list) -> object:
    response = Web3(Web3.HTTPProvider(url)).provider.make_request(method, params)  # type: ignore[arg-type]
    assert "error" not in response, response
    return response["result"]


def fund(url: str, address: str, eth: int) -> None:
    w3 = Web3(Web3.HTTPProvider(url))
    tx = w3.eth.send_transaction({"from": w3.eth.accounts[0], "to": address, "value": eth * ETH})
    w3.eth.wait_for_transaction_receipt(tx, timeout=60)


def log_lines(path: Path) -> list[dict]:
    lines = []
    for line in path.read_text(errors="replace").splitlines() if path.exists() else []:
        try:
            lines.append(json.loads(line))
        except json.JSONDecodeError:
            lines.append({"event": line, "level": "raw"})
    return lines


def events_named(lines: list[dict], event: str) -> list[dict]:
    return [line for line in lines if line.get("event") == event]


def start(home: Path, role: str, key: bytes, port: int, run_id: int, url: str) -> subprocess.Popen:
    common = ["--run", str(run_id), "--home", str(home), "--rpc-url", url, "--port", str(port), *NODE_CHAIN_FLAGS]
    common += DEVNET_NODE_FLAGS
    args = ["solver", "run", *common, "--coordinator", "--no-progress"] if role == "solver" else ["verifier", "serve"]
    if role == "verifier":
        args += common
    env = {**os.environ, "GRADLEDGER_PRIVATE_KEY": "0x" + key.hex(), "GRADLEDGER_LOG_JSON": "1"}
    return start_gradledger(args, home / f"{role}.log", env=env)  # type: ignore[return-value]


def test_a_round_settles_through_reorgs_on_an_interval_mining_chain(tmp_path, corpus):
    with AnvilProcess(chain_id=CHAIN_ID, extra_args=("--block-time", "1")) as anvil:
        url = anvil.rpc_url
        operator, solver, verifier = Account.create(), Account.create(), Account.create()
        for account in (operator, solver, verifier):
            fund(url, account.address, 200)
        keystore = tmp_path / "operator.json"
        keystore.write_text(json.dumps(Account.encrypt(operator.key, "operator password")))
        home = tmp_path / "home"

        deployed = subprocess.run(
            [sys.executable, "-m", "gradledger", "deploy", "--home", str(home), "--rpc-url", url, "--keystore",
             str(keystore), *NODE_CHAIN_FLAGS, "--allow-private-peers", "--json"],  # every node is on this machine
            env={**os.environ, "GRADLEDGER_KEYSTORE_PASSWORD": "operator password"}, capture_output=True, text=True,
            timeout=600,
        )  # fmt: skip
        assert deployed.returncode == 0, deployed.stderr[-3000:]
        manifest = load_manifest(home / "manifest.json")
        assert manifest.chain_id == CHAIN_ID and manifest.deployer == operator.address

        protocol = ProtocolClient(ChainClient(url, manifest, policy=ChainPolicy(confirmations=1)))
        protocol.deposit_stake(solver, ROLE_SOLVER, RULES.run.solver_min_stake)
        protocol.deposit_stake(verifier, ROLE_VERIFIER, RULES.run.verifier_min_stake + JUROR_MIN_STAKE)
        store = LocalArtifactStore(home / "creator" / "artifacts")
        creator_server = serve_in_thread(make_node_app("creator", operator.address, store))
        ports = {"solver": free_port(), "verifier": free_port()}
        urls = [creator_server.url, *(f"http://127.0.0.1:{p}" for p in ports.values())]
        (home / "peers.txt").write_text("\n".join(urls) + "\n")
        run_id = protocol.chain.call("RunRegistry", "runCount") + 1
        nodes = {
            "solver": start(home, "solver", solver.key, ports["solver"], run_id, url),
            "verifier": start(home, "verifier", verifier.key, ports["verifier"], run_id, url),
        }
        try:
            for role, port in ports.items():
                wait_until(lambda p=port: _healthy(p), 180, f"the {role} to answer /health")
            manifest_data, shards = corpus
            config = build_run_config(
                preset="tiny", run_seed="0x" + os.urandom(32).hex(), dataset_root=hash_to_hex(manifest_data.root)
            )
            created, _ = create_run(protocol, operator, store, config, manifest_data, shards, RULES, 10 * ETH)
            assert created == run_id
            chain = protocol.chain

            # 1. the commit is dropped once the solver counted it done: it must commit again, once
            wait_until(lambda: events_named(log_lines(home / "solver.log"), "committed"), 240, "the solver's commit")
            commit = next(
                e for e in chain.get_events(manifest.deployed_block, chain.block_number(), names=["Committed"])
            )
            with mining_paused(url):
                depth = chain.block_number() - commit.block_number + 1
                rpc(url, "anvil_reorg", [depth, []])
            assert not protocol.has_committed(run_id, 0, solver.address)
            wait_until(lambda: protocol.has_committed(run_id, 0, solver.address), 120, "the solver to commit again")

            # 2. the attestation is re-included in another block: the verifier must send nothing
            def attested():
                found = chain.get_events(
                    manifest.deployed_block, chain.block_number(), names=["PassAttested", "FailAttested"]
                )
                return found[0] if found else None

            attestation = wait_until(attested, 240, "the verifier's attestation")
            raw = rpc(url, "eth_getRawTransactionByHash", [attestation.transaction_hash])
            with mining_paused(url):
                depth = chain.block_number() - attestation.block_number + 1
                rpc(url, "anvil_reorg", [depth, [[raw, 0]]])
            moved = attested()
            assert moved is not None and moved.transaction_hash == attestation.transaction_hash

            wait_until(lambda: protocol.is_settled(run_id, 0), 300, "round 0 to settle")
        finally:
            for process in nodes.values():
                stop(process)
            creator_server.stop()

        everything = chain.get_events(manifest.deployed_block, chain.block_number())
        commits = [e for e in everything if e.name == "Committed" and e.args["runId"] == run_id]
        attestations = [e for e in everything if e.name in ("PassAttested", "FailAttested")]
        assert len(commits) == 1 and commits[0].args["solver"] == solver.address
        assert len(attestations) == 1 and attestations[0].transaction_hash == attestation.transaction_hash

        solver_log, verifier_log = log_lines(home / "solver.log"), log_lines(home / "verifier.log")
        assert events_named(solver_log, "own commitment dropped by a reorg")
        assert not events_named(verifier_log, "own attestation dropped by a reorg")  # re-included: nothing sent
        assert len(events_named(verifier_log, "attested")) == 1
        for lines in (solver_log, verifier_log):
            assert not [line for line in lines if line.get("level") == "error" or "Traceback" in line["event"]]
        # Whether an event reader had already read the orphaned blocks when the reorg came depends on timing on this
        # real-time chain; readers dropping orphaned events and reading again is asserted deterministically by
        # tests/adapters/test_finality_chain.py.
