"""A run across separate hosts: chain, object store, two solvers, a verifier and a whistleblower, each in its own
network namespace (devnet/hosts.py), two rounds to settlement.

    sudo .venv/bin/python -m devnet.multihost [--workdir DIR] [--rounds 2]

Every party is a real `gradledger` process started inside its host with its own data directory (`<workdir>/<host>`)
and its own address; nothing is wired by hand: the chain is reached at the chain host's address; the store host runs
an S3-compatible object store (devnet/s3server.py; any S3 service in a real deployment) where each solver keeps its
checkpoints (`--store s3://gradledger/<solver>`, endpoint and keys from the AWS environment variables), and serves
the run creator's artifacts over HTTP; the nodes find each other through the PeerDirectory contract, each
announcing the address it was given. The root namespace only deploys the contracts and watches.
`run_across_hosts` is the scenario; tests/devnet/test_multihost.py runs it with the test clock driving the chain
(`anvil_args` and `drive`), this module's `main` runs it in real time with wall-clock windows.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from devnet.anvil import AnvilProcess
from devnet.deploy import deploy
from devnet.hosts import VirtualHosts
from devnet.lifecycle import stop_processes
from devnet.s3server import LocalS3Server
from protocol.adapters.chain import ChainClient
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.keys import get_devnet_account
from protocol.errors import GradledgerError

HOSTS = ("chain", "store", "solver-1", "solver-2", "verifier", "whistleblower")
ACCOUNTS = {"store": 0, "solver-1": 1, "solver-2": 2, "verifier": 3, "whistleblower": 4}
"""The devnet account each host signs with (the store host is the run's creator)."""
RPC_PORT, NODE_PORT = 8545, 8000
BUCKET = "gradledger"
"""Every host has its own address, so every node can listen on the same port."""
REAL_TIME_WINDOWS = {"commit": 90, "attest": 60, "challenge": 30}
DRIVEN_WINDOWS = {"commit": 300, "attest": 300, "challenge": 300}

Drive = Callable[[ProtocolClient, int, Callable[[], list[tuple[str, subprocess.Popen]]]], AbstractContextManager]


class MultihostError(GradledgerError):
    """A party of the multi-host run failed (its log tail is in the message)."""


@dataclass
class Party:
    host: str
    command: list[str]
    process: subprocess.Popen
    log: Path
    url: str | None = None

    def tail(self, chars: int = 2000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""


def _wait(predicate: Callable[[], Any], timeout_s: float, what: str, parties: Sequence[Party] = ()) -> Any:
    """Poll until `predicate()` is truthy; a party that died meanwhile ends the wait with its log."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        for party in parties:
            if party.url is not None and party.process.poll() not in (None, 0):
                raise MultihostError(f"{party.host} exited with {party.process.returncode}:\n{party.tail()}")
        time.sleep(0.25)
    raise MultihostError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def run_across_hosts(
    workdir: Path,
    *,
    rounds: int = 2,
    anvil_args: tuple[str, ...] = (),
    drive: Drive | None = None,
    timeout_s: float = 1200,
    log: Callable[[str], None] = lambda message: print(message, file=sys.stderr, flush=True),
) -> dict[str, Any]:
    """Run the scenario (module docstring) in `workdir`; return what the chain says happened.

    `drive(protocol, run_id, nodes)` (a context manager) moves a test chain's clock while the run goes on; without
    it the windows are wall-clock ones (REAL_TIME_WINDOWS). # INVARIANT: every process, namespace and link this
    makes is gone when it returns or raises."""
    windows = DRIVEN_WINDOWS if drive is not None else REAL_TIME_WINDOWS
    parties: list[Party] = []
    with VirtualHosts(HOSTS) as hosts, ExitStack() as cleanup:
        cleanup.callback(lambda: stop_processes(party.process for party in parties))
        chain = AnvilProcess(
            host=hosts.address("chain"), port=RPC_PORT, wrapper=tuple(hosts.argv("chain", [])), extra_args=anvil_args
        )
        cleanup.callback(chain.stop)
        rpc = chain.rpc_url
        objects = cleanup.enter_context(
            LocalS3Server(host=hosts.address("store"), wrapper=tuple(hosts.argv("store", [])))
        )
        objects.create_bucket(BUCKET)
        log(f"store host {hosts.address('store')}: S3-compatible object store at {objects.endpoint_url}")
        log(f"chain host {hosts.address('chain')}: anvil at {rpc}; deploying from the root namespace")
        manifest_path = workdir / "deployer" / "manifest.json"
        manifest = deploy(rpc, get_devnet_account(0), manifest_path)
        protocol = ProtocolClient(ChainClient(rpc, manifest))
        for host in ACCOUNTS:
            (workdir / host).mkdir(parents=True, exist_ok=True)
            (workdir / host / "manifest.json").write_text(manifest_path.read_text())

        def gradledger(host: str, *args: str) -> list[str]:
            common = ["--home", str(workdir / host), "--rpc-url", rpc, "--devnet-account", str(ACCOUNTS[host])]
            return hosts.argv(host, [sys.executable, "-m", "gradledger", *args, *common])

        def once(host: str, *args: str) -> str:
            done = subprocess.run(gradledger(host, *args), capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                raise MultihostError(f"{host}: `gradledger {' '.join(args)}` exited {done.returncode}:\n{done.stderr}")
            return done.stdout

        def start(host: str, *args: str, node: bool = True) -> Party:
            address = hosts.address(host)
            url = f"http://{address}:{NODE_PORT}"
            command = gradledger(host, *args, "--host", address, "--port", str(NODE_PORT), "--public-url", url)
            if node:  # the hosts' addresses are private (the bridge's subnet): the devnet flag (docs/nodes.md)
                command.append("--allow-private-peers")
            log_path = workdir / f"{host}.log"
            env = {**os.environ, **objects.env()}  # where the object store is, and its (test) keys
            with open(log_path, "ab") as out:
                process = subprocess.Popen(
                    command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
                )
            party = Party(host, command, process, log_path, url)
            parties.append(party)
            return party

        store = start("store", "artifacts", "serve", "--announce", node=False)
        _wait(lambda: _healthy(store.url or ""), 120, "the store host to serve", parties)
        log(f"store host {hosts.address('store')}: the creator's artifacts at {store.url}, announced on-chain")
        created = json.loads(
            once(
                "store", "run", "create", "--preset", "tiny", "--rounds", str(rounds), "--json",
                "--commit-window", str(windows["commit"]), "--attest-window", str(windows["attest"]),
                "--challenge-window", str(windows["challenge"]),
            ).strip().splitlines()[-1]
        )  # fmt: skip
        run_id = int(created["run_id"])
        log(f"run {run_id} created from the store host (config {created['config_hash'][:18]}...)")
        once("solver-1", "solver", "stake", "--amount", "10", "--run", str(run_id))
        once("solver-2", "solver", "stake", "--amount", "10", "--run", str(run_id))
        once("verifier", "verifier", "stake", "--amount", "11", "--run", str(run_id))
        nodes = [
            start(
                "solver-1",
                "solver",
                "run",
                "--run",
                str(run_id),
                "--coordinator",
                "--no-progress",
                "--store",
                f"s3://{BUCKET}/solver-1",
            ),
            start(
                "solver-2", "solver", "run", "--run", str(run_id), "--no-progress", "--store", f"s3://{BUCKET}/solver-2"
            ),
            start("verifier", "verifier", "serve", "--run", str(run_id), "--exit-when-done"),
            start("whistleblower", "whistleblower", "watch", "--run", str(run_id), "--exit-when-done"),
        ]
        for node in nodes:
            _wait(functools.partial(_healthy, node.url or ""), 180, f"{node.host} to serve", parties)
            log(f"{node.host} host {node.url}: running")
        handles = lambda: [(n.url or "", n.process) for n in nodes]  # noqa: E731
        with drive(protocol, run_id, handles) if drive is not None else nullcontext():
            _wait(lambda: protocol.round_times(run_id).finished, timeout_s, f"run {run_id} to finish", parties)
            _wait(lambda: all(n.process.poll() is not None for n in nodes), 600, "every node to exit", parties)
        failed = [n for n in nodes if n.process.returncode != 0]
        if failed:
            raise MultihostError("; ".join(f"{n.host} exited {n.process.returncode}:\n{n.tail()}" for n in failed))
        summary = summarize(protocol, run_id, rounds, hosts)
        summary["objects"] = _count_objects(objects)
        log(f"run {run_id}: {summary['rounds_settled']} round(s) settled across {len(HOSTS)} hosts")
        return summary


def summarize(protocol: ProtocolClient, run_id: int, rounds: int, hosts: VirtualHosts) -> dict[str, Any]:
    """What the chain says: rounds settled, who committed and attested, who holds shares, who announced where."""
    events = protocol.chain.get_events(protocol.chain.deployment.deployed_block)
    of_run = [e for e in events if e.args.get("runId") == run_id]
    accounts = {host: get_devnet_account(index).address for host, index in ACCOUNTS.items()}
    return {
        "run_id": run_id,
        "rounds_settled": sum(protocol.is_settled(run_id, r) for r in range(rounds)),
        "commitments": [(e.args["round"], e.args["solver"]) for e in of_run if e.name == "Committed"],
        "passes": sum(e.name == "PassAttested" for e in of_run),
        "fails": sum(e.name == "FailAttested" for e in of_run),
        "shares": {host: protocol.shares_of(run_id, address) for host, address in accounts.items()},
        "announced": {e.args["account"]: e.args["url"] for e in events if e.name == "PeerAnnounced"},
        "addresses": {host: hosts.address(host) for host in HOSTS},
    }


def _count_objects(objects: LocalS3Server) -> dict[str, int]:
    """Objects per solver prefix in the bucket (what the solvers published to the object store)."""
    listing = objects.make_client().list_objects_v2(Bucket=BUCKET)
    counts: dict[str, int] = {}
    for item in listing.get("Contents", []):
        prefix = item["Key"].split("/", 1)[0]
        counts[prefix] = counts.get(prefix, 0) + 1
    return counts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, help="data directories and logs (default: a new temp directory)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the run")
    args = parser.parse_args(argv)
    # SIGTERM (e.g. `kill`, a CI timeout) unwinds like Ctrl-C, so every process, namespace and link is removed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="gradledger-multihost-"))
    summary = run_across_hosts(workdir, rounds=args.rounds)
    print(json.dumps(summary, default=str))


if __name__ == "__main__":
    main()
