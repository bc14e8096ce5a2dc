"""A run's off-chain definition, published and loaded by content hash.

The chain holds hashes only; the bytes behind them are artifacts named by those same hashes:
the canonical config JSON under the config hash, the dataset manifest under the dataset root,
every shard under its hash, θ states under their state hashes. Any node can therefore load a
run from the chain plus any peer's artifact store, and every byte it loads is checked.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from protocol.adapters.artifacts import ArtifactStore, put_state, read_through
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.http import PeerSet
from protocol.config import RunConfig, compute_config_hash, encode_config, parse_run_config, verify_run_terms
from protocol.data import DatasetManifest, TokenDataset, build_token_dataset, decode_manifest, encode_manifest
from protocol.errors import GradledgerError
from protocol.hashing import Hash32, compute_content_hash, hash_to_hex
from protocol.history.records import Commitment
from protocol.state import decode_state
from protocol.types import RunTerms


class RunNotFoundError(GradledgerError):
    """No run with that id exists in this deployment."""


class RunDefinitionError(GradledgerError):
    """A run's published config does not fit its on-chain terms (hash, dataset, H, k)."""


@dataclass
class RunContext:
    """Everything a node needs about a run, loaded and checked."""

    run_id: int
    terms: RunTerms
    config: RunConfig
    dataset: TokenDataset
    share_token: str
    created_block: int
    accepted_in_settled_rounds: dict[int, dict[str, Commitment]] = field(default_factory=dict)
    """Settled round -> solver (lowercase) -> its accepted commitment, filled as node/payloads.py folds the run's
    events: acceptance of a settled round never changes, so each round's events are folded for it once."""


def get_artifact(store: ArtifactStore, peers: PeerSet | None, digest: bytes, prefer: str | None = None) -> bytes:
    """An artifact from the local store, else fetched from peers (checked) and cached; a corrupt cached copy is
    moved aside and replaced by a peer's good copy (`read_through`)."""
    return read_through(store, digest, None if peers is None else lambda name: peers.fetch(name, prefer))


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
    tokenizer_json: bytes | None = None,
) -> tuple[Hash32, Hash32, Hash32]:
    """Store config, dataset manifest, shards, the dataset's tokenizer (if it names one) and θ0; return
    (config hash, dataset root, θ0 hash). A tokenizer that is missing or does not hash to the one the manifest
    names is refused before anything is stored: the dataset root pins it, and `gradledger model export` needs it."""
    named = manifest.tokens.tokenizer
    if named is not None and (tokenizer_json is None or compute_content_hash(tokenizer_json) != named):
        raise GradledgerError(
            f"dataset {hash_to_hex(manifest.root)} names tokenizer {hash_to_hex(named)}, but "
            f"{'no tokenizer was given' if tokenizer_json is None else 'the tokenizer given hashes differently'}: "
            "publish the dataset directory `gradledger data prepare` wrote, unchanged"
        )
    config_hash = store.put(encode_config(config))
    if config_hash != compute_config_hash(config):
        raise GradledgerError("config artifact hash differs from the config hash")
    if tokenizer_json is not None and named is not None:
        store.put(tokenizer_json)
    dataset_root = store.put(encode_manifest(manifest.shards, manifest.tokens))
    for data in shards.values():
        store.put(data)
    theta0 = put_state(store, global_state)
    return config_hash, dataset_root, theta0


def load_run_terms(protocol: ProtocolClient, run_id: int) -> tuple[RunTerms, str, int]:
    """(terms, share token, creation block) from the run's `RunCreated` event."""
    chain = protocol.chain
    for event in chain.get_events(chain.deployment.deployed_block, names=["RunCreated"]):
        if event.args["runId"] == run_id:
            return RunTerms.from_fields(event.args["config"]), event.args["shareToken"], event.block_number
    raise RunNotFoundError(f"run {run_id} does not exist in this deployment; list runs with `gradledger audit`")


def load_run_context(protocol: ProtocolClient, store: ArtifactStore, peers: PeerSet | None, run_id: int) -> RunContext:
    """Load a run: terms from the chain, config and dataset from artifacts, all hash-checked."""
    terms, token, block = load_run_terms(protocol, run_id)
    config = parse_run_config(get_artifact(store, peers, terms.config_hash))
    problem = verify_run_terms(config, terms)
    if problem is not None:
        raise RunDefinitionError(f"run {run_id}: {problem}; this run cannot be trained or verified as published")
    manifest = decode_manifest(get_artifact(store, peers, terms.dataset_root))
    shards: dict[bytes, bytes] = {ref.hash: get_artifact(store, peers, ref.hash) for ref in manifest.shards}
    dataset = build_token_dataset(manifest, shards, config.data.eval_shards)
    return RunContext(run_id, terms, config, dataset, token, block)
