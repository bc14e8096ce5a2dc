"""A run's off-chain definition, published and loaded by content hash.

The chain holds hashes only; the bytes behind them are artifacts named by those same hashes:
the canonical config JSON under the config hash, the dataset manifest under the dataset root,
every shard under its hash, θ states under their state hashes. Any node can therefore load a
run from the chain plus any peer's artifact store, and every byte it loads is checked.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import torch

from protocol.adapters.artifacts import ArtifactStore, LocalArtifactStore, put_state
from protocol.adapters.chain import ChainClient
from protocol.adapters.contracts import ProtocolClient, RunTerms
from protocol.adapters.http import PeerSet
from protocol.adapters.manifest import DeploymentManifest
from protocol.adapters.nodestate import NodeState
from protocol.config import RunConfig, compute_config_hash, encode_config, parse_run_config
from protocol.data import DatasetManifest, TokenDataset, build_token_dataset, decode_manifest, encode_manifest
from protocol.errors import GradledgerError
from protocol.hashing import Hash32, hash_to_hex, to_hash32
from protocol.profile import apply_execution_profile
from protocol.state import decode_state


class RunNotFoundError(GradledgerError):
    """No run with that id exists in this deployment."""


@dataclass
class RunContext:
    """Everything a node needs about a run, loaded and checked."""

    run_id: int
    terms: RunTerms
    config: RunConfig
    dataset: TokenDataset
    share_token: str
    created_block: int


def get_artifact(store: ArtifactStore, peers: PeerSet | None, digest: bytes, prefer: str | None = None) -> bytes:
    """An artifact from the local store, else fetched from peers (checked) and cached."""
    if store.has(digest):
        return store.get(digest)
    if peers is None:
        return store.get(digest)  # raises ArtifactNotFoundError with the store's path
    data = peers.fetch(digest, prefer)
    store.put(data)
    return data


def get_global_state(
    store: ArtifactStore, peers: PeerSet | None, digest: bytes, prefer: str | None = None
) -> dict[str, torch.Tensor]:
    return decode_state(get_artifact(store, peers, digest, prefer))


def publish_run_artifacts(
    store: ArtifactStore,
    config: RunConfig,
    manifest: DatasetManifest,
    shards: dict[bytes, bytes],
    global_state: dict[str, torch.Tensor],
) -> tuple[Hash32, Hash32, Hash32]:
    """Store config, dataset manifest, shards and θ0; return (config hash, dataset root, θ0 hash)."""
    config_hash = store.put(encode_config(config))
    if config_hash != compute_config_hash(config):
        raise GradledgerError("config artifact hash differs from the config hash")
    dataset_root = store.put(encode_manifest(manifest.shards))
    for data in shards.values():
        store.put(data)
    theta0 = put_state(store, global_state)
    return config_hash, dataset_root, theta0


def load_run_terms(protocol: ProtocolClient, run_id: int) -> tuple[RunTerms, str, int]:
    """(terms, share token, creation block) from the run's `RunCreated` event."""
    chain = protocol.chain
    for event in chain.get_events(chain.manifest.deployed_block, names=["RunCreated"]):
        if event.args["runId"] == run_id:
            config = event.args["config"]
            values = list(config.values()) if hasattr(config, "values") else list(config)
            return RunTerms(*values), event.args["shareToken"], event.block_number
    raise RunNotFoundError(f"run {run_id} does not exist in this deployment; list runs with `gradledger audit`")


def wait_for_run(protocol: ProtocolClient, run_id: int, stop: threading.Event, poll_s: float = 0.5) -> bool:
    """Block until run `run_id` exists on-chain (True) or `stop` is set (False).

    Lets nodes start before their run is created and be ready the moment round 0 opens.
    """
    while not stop.is_set():
        if protocol.chain.call("RunRegistry", "runCount") >= run_id:
            return True
        stop.wait(poll_s)
    return False


@dataclass(frozen=True)
class NodeAdapters:
    """The adapters one node process uses; every role opens them the same way.

    <home>/<role dir>/<address>/ holds the node's artifact store and its SQLite state, so two roles
    (or two accounts) on one machine never share a store or a state file.
    """

    chain: ChainClient
    protocol: ProtocolClient
    store: LocalArtifactStore
    state: NodeState
    peers: PeerSet


def open_node_adapters(
    node_dir: Path, rpc_url: str, manifest: DeploymentManifest, peers: tuple[str, ...]
) -> NodeAdapters:
    """Chain client, contracts, artifact store and node state of the node living in `node_dir`."""
    chain = ChainClient(rpc_url, manifest)
    return NodeAdapters(
        chain,
        ProtocolClient(chain),
        LocalArtifactStore(node_dir / "artifacts"),
        NodeState(node_dir / "state.sqlite"),
        PeerSet(peers),
    )


def load_run_when_created(io: NodeAdapters, run_id: int, stop: threading.Event, threads: int) -> RunContext:
    """Wait for the run to exist, load its context and pin this process to the run's execution profile."""
    if not wait_for_run(io.protocol, run_id, stop):
        raise RunNotFoundError(f"stopped before run {run_id} was created")
    ctx = load_run_context(io.protocol, io.store, io.peers, run_id)
    apply_execution_profile(ctx.config.profile, threads)
    return ctx


def load_run_context(protocol: ProtocolClient, store: ArtifactStore, peers: PeerSet | None, run_id: int) -> RunContext:
    """Load a run: terms from the chain, config and dataset from artifacts, all hash-checked."""
    terms, token, block = load_run_terms(protocol, run_id)
    config = parse_run_config(get_artifact(store, peers, terms.config_hash))
    if compute_config_hash(config) != to_hash32(terms.config_hash):
        raise GradledgerError(f"run {run_id}: config artifact does not hash to the on-chain config hash")
    if config.data.dataset_root != hash_to_hex(terms.dataset_root):
        raise GradledgerError(f"run {run_id}: config names dataset {config.data.dataset_root}, chain has another root")
    manifest = decode_manifest(get_artifact(store, peers, terms.dataset_root))
    shards = {ref.hash: get_artifact(store, peers, ref.hash) for ref in manifest.shards}
    dataset = build_token_dataset(manifest, shards, config.data.eval_shards)
    return RunContext(run_id, terms, config, dataset, token, block)


def compute_next_theta(
    protocol: ProtocolClient, store: ArtifactStore, peers: PeerSet | None, ctx: RunContext, round_index: int
) -> tuple[dict[str, torch.Tensor], Hash32, tuple[str, ...]]:
    """θ_(r+1) as every honest party computes it: the outer step from θ_r over the accepted Δs.

    Accepted = Verification's rule (a standing pass, no standing fault), read once every attestation
    dispute of the round is closed. Returns (state, its state hash, the accepted solvers in order).
    Coordinators post this hash; whistleblowers and jurors compare a posted claim with it.
    """
    from protocol.outer import compute_outer_step
    from protocol.state import compute_state_hash

    global_state = get_global_state(store, peers, protocol.theta_of(ctx.run_id, round_index))
    deltas = {}
    for solver, commitment in sorted(protocol.get_commitments(ctx.run_id, round_index, ctx.created_block).items()):
        if protocol.is_accepted(ctx.run_id, round_index, solver):
            prefer = peers.url_of(solver) if peers is not None else None
            deltas[solver] = get_global_state(store, peers, commitment.delta_hash, prefer)
    next_state = compute_outer_step(global_state, deltas, ctx.config.train)
    return next_state, compute_state_hash(next_state), tuple(deltas)
