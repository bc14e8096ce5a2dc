"""A run's settled model out of the chain and the stores: the core of `gradledger model export`.

`export_settled_model` writes θ_(R+1), the state round R settled (round R trains from θ_R and its settlement fixes
θ_(R+1) = `RunRegistry.thetaOf(ID, R + 1)`), so "round 0" is the model after the first round of training. A round that
has not settled is refused: its θ is not final. θ is fetched by its on-chain hash from the local stores under a home
(creator, solvers, verifiers, and the export cache) or from peers, checked against that hash, and written with the
dataset's tokenizer and a model card (docs/export.md).

It is a function of (protocol client, artifact store, peers, run, round, out), so it is tested against a real chain
without the command line. It loads torch and the chain adapters; gradledger/commands/model.py imports it inside the
command, so `gradledger --help` does not (issue 38).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from protocol.adapters.artifacts import ArtifactCorruptError, ArtifactNotFoundError, LocalArtifactStore
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.hf_checkpoints import write_hf_model_dir
from protocol.adapters.http import PeerSet
from protocol.adapters.runs import RunDefinitionError, get_artifact, get_global_state, load_run_terms
from protocol.config import HFModelConfig, RunConfig, parse_run_config, verify_run_terms
from protocol.data import decode_manifest
from protocol.errors import GradledgerError
from protocol.export import ModelCardFacts, ShareMinted, compute_share_holdings, render_model_card
from protocol.hashing import Hash32, hash_to_hex, to_hash32
from protocol.state import compute_state_hash
from protocol.training import get_params

EXPORT_CACHE = Path("exports") / "artifacts"
"""Under a home: where artifacts fetched from peers for an export are kept (content-addressed, reusable)."""


class RoundNotSettledError(GradledgerError):
    """The round asked for has not settled, so its θ is not final (or the run has no such round)."""


class LayeredStore:
    """The artifact stores of a gradledger home read as one: the first good copy wins; what peers send is kept in
    `cache`. The other stores belong to nodes, so they are only read, never changed (no quarantine moves)."""

    def __init__(self, cache: LocalArtifactStore, others: Sequence[Path] = ()) -> None:
        self.cache = cache
        self.stores = [cache, *(LocalArtifactStore(p, quarantine_corrupt=False) for p in others)]

    def has(self, digest: bytes) -> bool:
        return any(store.has(digest) for store in self.stores)

    def get(self, digest: bytes) -> bytes:
        corrupt: ArtifactCorruptError | None = None
        for store in self.stores:
            if store.has(digest):
                try:
                    return store.get(digest)
                except ArtifactCorruptError as exc:
                    corrupt = exc
        if corrupt is not None:
            raise corrupt
        raise ArtifactNotFoundError(
            f"artifact {hash_to_hex(to_hash32(digest))} is in none of {len(self.stores)} local store(s); "
            "name a peer that has it with --peer"
        )

    def put(self, data: bytes) -> Hash32:
        return self.cache.put(data)

    def delete(self, digest: bytes) -> None:
        self.cache.delete(digest)


def open_home_store(home: Path, extra: Sequence[Path] = ()) -> LayeredStore:
    """The export cache under `home`, then `extra` stores, then every node store under `home`."""
    found = [*extra]
    for pattern in ("creator/artifacts", "solvers/*/artifacts", "verifiers/*/artifacts"):
        found.extend(sorted(p for p in home.glob(pattern) if p.is_dir()))
    missing = [p for p in extra if not p.is_dir()]
    if missing:
        raise GradledgerError(f"artifact directory {missing[0]} does not exist (check --artifacts)")
    return LayeredStore(LocalArtifactStore(home / EXPORT_CACHE), found)


def read_share_mints(protocol: ProtocolClient, run_id: int, from_block: int, to_block: int) -> list[ShareMinted]:
    """The run's `SharesMinted` events (ModelShares) in blocks [from_block, to_block]."""
    events = protocol.chain.get_events(from_block, to_block, names=["SharesMinted"], contracts=["ModelShares"])
    return [
        ShareMinted(int(e.args["round"]), str(e.args["to"]), int(e.args["amount"]))
        for e in events
        if e.args["runId"] == run_id
    ]


def _check_settled(protocol: ProtocolClient, run_id: int, round_index: int, max_rounds: int) -> None:
    if round_index >= max_rounds:
        raise RoundNotSettledError(
            f"run {run_id} has {max_rounds} round(s), numbered 0..{max_rounds - 1}; round {round_index} never exists"
        )
    if protocol.is_settled(run_id, round_index):
        return
    current = protocol.round_times(run_id).round
    settled = "no round has settled yet" if current == 0 else f"rounds 0..{current - 1} have settled"
    raise RoundNotSettledError(
        f"round {round_index} of run {run_id} has not settled yet (the run is in round {current}; {settled}): its θ "
        "is not final. Export a settled round, or wait until this one settles"
    )


def _describe(config: RunConfig) -> str:
    if isinstance(config.model, HFModelConfig):
        return f"transformers {config.model.hf_config['model_type']!r} model"
    return "GPT-2 architecture (gradledger's built-in byte-level GPT, converted exactly)"


def export_settled_model(
    protocol: ProtocolClient, store: Any, peers: PeerSet | None, run_id: int, round_index: int, out: Path
) -> ModelCardFacts:
    """Write θ_(round_index + 1), the state round `round_index` settled, as a Hugging Face model directory at `out`
    (protocol.adapters.hf_checkpoints.write_hf_model_dir) with its model card; returns the card's facts.

    Everything is checked: the config against the run's on-chain terms, θ against `thetaOf`, the tokenizer against
    the hash the dataset manifest names. Raises RoundNotSettledError for a round whose θ is not final."""
    terms, share_token, created_block = load_run_terms(protocol, run_id)
    config = parse_run_config(get_artifact(store, peers, terms.config_hash))
    problem = verify_run_terms(config, terms)
    if problem is not None:
        raise RunDefinitionError(f"run {run_id}: {problem}; its model cannot be exported as published")
    _check_settled(protocol, run_id, round_index, terms.max_rounds)
    head = protocol.chain.block_number()
    theta_hash = protocol.theta_of(run_id, round_index + 1)
    state = get_global_state(store, peers, theta_hash)
    if compute_state_hash(state) != theta_hash:  # the artifact is named by this hash; checked again, explicitly
        raise GradledgerError(f"θ_{round_index + 1} does not hash to {hash_to_hex(theta_hash)}; refetch it")
    params = get_params(state)
    manifest = decode_manifest(get_artifact(store, peers, terms.dataset_root))
    tokenizer = manifest.tokens.tokenizer
    tokenizer_json = None if tokenizer is None else get_artifact(store, peers, tokenizer)
    contracts = protocol.chain.deployment.contracts
    facts = ModelCardFacts(
        run_id=run_id,
        round=round_index,
        theta_hash=hash_to_hex(theta_hash),
        weights_hash=hash_to_hex(compute_state_hash(params)),
        config_hash=hash_to_hex(terms.config_hash),
        dataset_root=hash_to_hex(terms.dataset_root),
        tokenizer_hash=None if tokenizer is None else hash_to_hex(tokenizer),
        chain_id=protocol.chain.chain_id,
        contracts=(
            ("RunRegistry", contracts["RunRegistry"].address),
            ("ModelShares", contracts["ModelShares"].address),
            ("share token", share_token),
        ),
        architecture=_describe(config),
        parameters=sum(v.numel() for v in params.values()),
        block_size=config.model.block_size,
        vocab_size=config.model.vocab_size,
        shares=compute_share_holdings(read_share_mints(protocol, run_id, created_block, head), round_index),
        shares_block=head,
    )
    write_hf_model_dir(out, config, params, tokenizer_json, render_model_card(facts))
    return facts


def facts_to_json(facts: ModelCardFacts, out: Path) -> dict[str, Any]:
    """The export as JSON data (share amounts as strings: they exceed JavaScript's exact integers)."""
    return {
        "out": str(out),
        "run": facts.run_id,
        "round": facts.round,
        "theta_index": facts.theta_index,
        "theta_hash": facts.theta_hash,
        "weights_hash": facts.weights_hash,
        "config_hash": facts.config_hash,
        "dataset_root": facts.dataset_root,
        "tokenizer_hash": facts.tokenizer_hash,
        "chain_id": facts.chain_id,
        "contracts": dict(facts.contracts),
        "architecture": facts.architecture,
        "parameters": facts.parameters,
        "shares_block": facts.shares_block,
        "shares": [{"holder": s.holder, "shares": str(s.shares), "fraction": s.fraction} for s in facts.shares],
    }
