"""A whole run played in one process on a devnet, with time travel, by the real node code.

`ScriptedRun` drives `solver.node.SolverNode` and `verifier.worker.VerifierWorker` objects step by
step -- train, commit, draw the seed, replay and attest, finalize, claim θ_(r+1), settle, claim
shares -- and advances anvil's clock past each window (`evm_increaseTime`) instead of waiting
for it. Nodes write their artifacts and SQLite state under `<home>` exactly as the node
processes do, and solvers serve their artifacts and commitment documents over HTTP, so what is
left behind is what a real run leaves behind. A solver may cheat in one round with a
`adversary.behaviours.Behaviour` (every segment of that round dishonest, so any sample catches it).

For benchmarks and tests that need many rounds or a deterministic adversary (bench/audit.py
plays 20 rounds in about a minute); `gradledger demo` and tests/devnet run nodes as processes
in real time. Devnet only: time travel needs anvil. Give a scripted run an anvil of its own:
time travel leaves the chain's clock ahead of the wall clock for good, and real-time nodes (which
take `now` as the later of the two) would then wait on the stale timestamp of the last block.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eth_account.signers.local import LocalAccount

from adversary.behaviours import Behaviour
from adversary.solver import CheatingSolverNode
from devnet.runs import ETH, create_run
from protocol.adapters.artifacts import LocalArtifactStore
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.http import ServerHandle, make_node_app, serve_in_thread
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.manifest import DeploymentManifest
from protocol.config import RunConfig
from protocol.constants import JUROR_MIN_STAKE
from protocol.data import DatasetManifest
from protocol.errors import GradledgerError
from protocol.run_terms import CreationTerms
from protocol.types import ROLE_SOLVER, ROLE_VERIFIER
from solver.decide import Action
from solver.node import SolverNode, SolverSettings
from verifier.metrics import VerifierMetrics
from verifier.worker import VerifierWorker


class ScriptedRunError(GradledgerError):
    """The scripted run could not take a step."""


@dataclass
class ScriptedRun:
    """A run and its in-process nodes; `play_round()` plays the current round to settlement."""

    protocol: ProtocolClient
    run_id: int
    home: Path
    config: RunConfig
    rules: CreationTerms
    solvers: dict[int, SolverNode]
    verifiers: dict[int, VerifierWorker]
    coordinator: int
    cheats: Mapping[tuple[int, int], Behaviour] = field(default_factory=dict)
    servers: list[ServerHandle] = field(default_factory=list)

    # -- clock -------------------------------------------------------------------------------

    def _now(self) -> int:
        return int(self.protocol.chain.get_block("latest")["timestamp"])

    def _advance_to(self, timestamp: int) -> None:
        """Mine a block at or after `timestamp` (anvil time travel)."""
        gap = timestamp - self._now()
        self.protocol.chain.increase_time(max(gap, 0) + 1)

    # -- one round ---------------------------------------------------------------------------

    def play_round(self) -> int:
        """Play the current round from training to settlement and share claims; returns its index."""
        times = self.protocol.round_times(self.run_id)
        if times.finished:
            raise ScriptedRunError(f"run {self.run_id} is finished")
        r = times.round
        if self._now() < times.start:
            self._advance_to(times.start - 1)  # round 0 of a run with a start delay: commit refuses before it
        for _account, node in sorted(self.solvers.items()):
            if self.protocol.bonded_of(node.address, ROLE_SOLVER) < self.rules.run.solver_min_stake:
                continue  # slashed earlier: cannot commit any more
            node.act(Action("train", r))  # a CheatingSolverNode cheats in the rounds it was told to
            node.act(Action("commit", r))
        self._advance_to(times.commit_end)
        for worker in self.verifiers.values():
            worker.tick()  # the first one draws the seed
        for _account, node in sorted(self.solvers.items()):
            record = node.record_of(self.run_id, r)
            if record is not None and record.status == "committed":
                node.act(Action("open", r))  # the sampled leaves, on-chain, before open_end
        for worker in self.verifiers.values():
            worker.tick()  # replay and attest
        self._advance_to(times.challenge_end)
        coordinator = self.solvers[self.coordinator]
        coordinator.act(Action("finalize", r))
        coordinator.act(Action("post_claim", r))
        self._advance_to(self.protocol.claim_of(self.run_id, r).window_end)
        coordinator.act(Action("settle", r))
        self.claim_shares(r)
        return r

    def claim_shares(self, r: int) -> None:
        for node in self.solvers.values():
            record = node.record_of(self.run_id, r)
            if record is not None and record.status in ("trained", "committed"):
                node.act(Action("claim_shares", r))
        for worker in self.verifiers.values():
            worker.finalize_and_claim(self._now())

    def play(self, rounds: int | None = None) -> None:
        """Play `rounds` rounds (default: until the run is finished)."""
        played = 0
        while not self.protocol.round_times(self.run_id).finished and (rounds is None or played < rounds):
            self.play_round()
            played += 1

    def close(self) -> None:
        for server in self.servers:
            server.stop()
        for node in self.solvers.values():
            node.state.close()
        for worker in self.verifiers.values():
            worker.state.close()


def _stake(protocol: ProtocolClient, account: LocalAccount, role: int, needed: int) -> None:
    bonded = protocol.bonded_of(account.address, role)
    if bonded < needed:
        protocol.deposit_stake(account, role, needed - bonded)


def start_scripted_run(
    protocol: ProtocolClient,
    manifest: DeploymentManifest,
    home: Path,
    config: RunConfig,
    corpus: tuple[DatasetManifest, dict[bytes, bytes]],
    solvers: Sequence[int],
    verifiers: Sequence[int],
    rules: CreationTerms,
    *,
    cheats: Mapping[tuple[int, int], Behaviour | str] | None = None,
    reward_pool_wei: int = 10 * ETH,
    creator: int = 0,
) -> ScriptedRun:
    """Stake, create the run, start the nodes in-process (solvers serve HTTP), join and register.

    `cheats` maps (devnet account, round) to the behaviour that solver cheats with in that round.
    The first solver coordinates (finalizes, claims θ_(r+1), settles).
    """
    home.mkdir(parents=True, exist_ok=True)
    rpc_url = protocol.chain.rpc_url
    for index in solvers:
        _stake(protocol, get_devnet_account(index), ROLE_SOLVER, rules.run.solver_min_stake)
    for index in verifiers:  # the run registration and the juror registration each reserve their own stake
        _stake(protocol, get_devnet_account(index), ROLE_VERIFIER, rules.run.verifier_min_stake + JUROR_MIN_STAKE)
    creator_store = LocalArtifactStore(home / "creator" / "artifacts")
    servers = [serve_in_thread(make_node_app("creator", get_devnet_account(creator).address, creator_store))]
    dataset_manifest, shards = corpus
    run_id, _ = create_run(
        protocol, get_devnet_account(creator), creator_store, config, dataset_manifest, shards, rules, reward_pool_wei
    )
    chosen = {key: Behaviour(value) for key, value in (cheats or {}).items()}
    nodes = {}
    for n, index in enumerate(solvers):
        # every node of the harness serves on this machine's loopback: the devnet's --allow-private-peers
        settings = SolverSettings(run_id, home, coordinator=(n == 0), allow_private_peers=True)
        node = _make_solver(settings, index, rpc_url, manifest, chosen)
        servers.append(node.server or _serve(node))
        nodes[index] = node
    peers = tuple(server.url for server in servers)
    (home / "peers.txt").write_text("\n".join(peers) + "\n")
    for node in nodes.values():
        node.peers.add(peers)
        node.load()
        node.ensure_joined()
    workers = {}
    for index in verifiers:
        account = get_devnet_account(index)
        worker = VerifierWorker(
            run_id, home, account, rpc_url, manifest, peers, VerifierMetrics(), allow_private_peers=True
        )
        worker.load()
        worker.ensure_registered()
        workers[index] = worker
    return ScriptedRun(protocol, run_id, home, config, rules, nodes, workers, solvers[0], chosen, servers)


def _make_solver(
    settings: SolverSettings,
    index: int,
    rpc_url: str,
    manifest: DeploymentManifest,
    cheats: Mapping[tuple[int, int], Behaviour],
) -> SolverNode:
    """An honest solver, or a cheating one for the rounds `cheats` names (one behaviour per solver)."""
    plan = {r: b for (account, r), b in cheats.items() if account == index}
    if not plan:
        return SolverNode(settings, get_devnet_account(index), rpc_url, manifest)
    behaviours = set(plan.values())
    if len(behaviours) > 1:
        raise ScriptedRunError(f"solver {index} is given several behaviours {sorted(behaviours)}; give it one")
    return CheatingSolverNode(
        settings, get_devnet_account(index), rpc_url, manifest, behaviour=behaviours.pop(), rounds=set(plan)
    )


def _serve(node: SolverNode) -> ServerHandle:
    node.start_server()
    if node.server is None:  # start_server sets it; a node without one could not be stopped later
        raise ScriptedRunError(f"solver {node.address} started no server")
    return node.server
