"""The audit's artifact reads: the run's definition, each commitment's document and checkpoints, and the c_0 each
commitment must start at -- everything the auditor checks that is not on the chain.

Artifacts are read by content hash from local stores and peers (auditor/sources.py), so whatever serves them cannot
change what is checked: a copy that does not hash to what the chain names is a problem recorded as evidence (and a
corrupt copy is reported by `check_integrity`), never a crash. Nothing here decides pass or fail; auditor/checks.py
judges the facts gathered here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from auditor.checks import DocumentFacts, RunDefinitionFacts
from auditor.sources import ArtifactSources
from protocol.commitment import CommitmentDoc
from protocol.config import RunConfig, compute_config_hash, parse_run_config, verify_run_terms
from protocol.data import TokenDataset, build_token_dataset, decode_manifest
from protocol.errors import GradledgerError
from protocol.hashing import hash_to_hex, to_hash32
from protocol.history.records import Commitment, RunHistory
from protocol.moments import compute_start_checkpoint, find_carried_commitment, get_carried_checkpoint_hash
from protocol.payload import NO_CODEC, decode_payload_doc, decode_payload_update
from protocol.state import compute_state_hash, decode_state
from protocol.training import State
from protocol.verdict import PayloadEvidence, check_delta_binding, check_payload_binding


@dataclass(frozen=True)
class RunDefinition:
    """The run's config and dataset as read under their on-chain hashes (None: not usable), and what was wrong."""

    config: RunConfig | None
    dataset: TokenDataset | None
    facts: RunDefinitionFacts


def read_run_definition(history: RunHistory, sources: ArtifactSources) -> RunDefinition:
    """Config, dataset (manifest and shards) and θ0 under their on-chain hashes; the config fits the terms.

    The config's fit is `protocol.config.verify_run_terms`, the check every node makes: a config that
    does not re-hash to the on-chain config hash is a config problem (the artifact is not the canonical
    JSON of a config, so it is not used); a dataset root, H or k other than the run's is a rules problem.
    """
    terms = history.terms
    config: RunConfig | None = None
    dataset: TokenDataset | None = None
    config_problem = rules_problem = dataset_problem = None
    try:
        config = parse_run_config(sources.read(terms.config_hash, "run config"))
    except GradledgerError as exc:
        config_problem = str(exc)
    if config is not None and (problem := verify_run_terms(config, terms)) is not None:
        if compute_config_hash(config) != terms.config_hash:
            config_problem = f"config artifact is not canonical: {problem}"
            config = None
        else:
            rules_problem = problem
    try:
        manifest = decode_manifest(sources.read(terms.dataset_root, "dataset manifest"))
        shards: dict[bytes, bytes] = {
            ref.hash: sources.read(ref.hash, f"dataset shard {i}") for i, ref in enumerate(manifest.shards)
        }
        if config is not None:
            dataset = build_token_dataset(manifest, shards, config.data.eval_shards)
    except GradledgerError as exc:
        dataset_problem = str(exc)
    theta0_problem = sources.problem(terms.theta0_hash, "θ0")
    return RunDefinition(
        config, dataset, RunDefinitionFacts(config_problem, dataset_problem, theta0_problem, rules_problem)
    )


def read_payload_evidence(
    history: RunHistory, sources: ArtifactSources, commitment: Commitment, codec: str
) -> PayloadEvidence:
    """A codec run's Δ binding inputs for one commitment, read as node/payloads.py fetches them (the previous
    round's accepted payload document, the document, P_r and a non-zero e_r); what cannot be read is the problem."""
    previous = None
    before = history.rounds[commitment.round - 1] if commitment.round > 0 else None
    accepted_before = before.commitment_of(commitment.solver) if before is not None else None
    if before is not None and accepted_before is not None and before.is_accepted(commitment.solver):
        try:
            previous = decode_payload_doc(
                sources.read(accepted_before.delta_hash, f"payload document of round {before.index}")
            )
        except GradledgerError as exc:
            return PayloadEvidence(codec, problem=f"payload document of accepted round {before.index}: {exc}")
    try:
        document = sources.read(commitment.delta_hash, "payload document")
        doc = decode_payload_doc(document)
        payload = sources.read(doc.payload_hash, "payload")
    except GradledgerError as exc:
        return PayloadEvidence(codec, previous=previous, problem=str(exc))
    try:
        residual = decode_state(sources.read(doc.residual_hash, "e_r"))
    except GradledgerError:  # e_r = 0 need not be stored anywhere; a non-zero one missing fails the hash check
        residual = None
    return PayloadEvidence(codec, document, payload, residual, previous)


def load_payload_update(sources: ArtifactSources, delta_hash: str, what: str) -> State:
    """D(P_r) of the payload document `delta_hash` names (raises GradledgerError when missing or malformed)."""
    doc = decode_payload_doc(sources.read(delta_hash, f"payload document ({what})"))
    return decode_payload_update(doc, sources.read(doc.payload_hash, f"payload ({what})"))


def read_documents(
    history: RunHistory, sources: ArtifactSources, theta_params: Mapping[int, State], codec: str = NO_CODEC
) -> dict[tuple[int, str], DocumentFacts]:
    """Each commitment's document, its checkpoints (present, hash-correct) and Δ = θ_r - c_H (in a codec run: its
    payload is the codec of that Δ plus the e the e-chain allows, protocol/payload.py)."""
    facts: dict[tuple[int, str], DocumentFacts] = {}
    for rnd in history.rounds:
        for c in rnd.commitments:
            found, searched = sources.find_documents(history.run_id, rnd.index, c.solver)
            if not found:
                facts[(rnd.index, c.solver)] = DocumentFacts(rnd.index, c.solver, None, "", searched)
                continue
            chosen = next((f for f in found if hash_to_hex(f.doc.root) == c.root), found[0])
            doc = chosen.doc
            problems: list[str] = []
            hashes = []
            for leaf in doc.leaves:
                for h in (leaf.start_hash, leaf.end_hash):
                    if h not in hashes:
                        hashes.append(h)
            end_hash = doc.leaves[-1].end_hash if doc.leaves else None
            end_state = None
            for h in hashes:
                try:
                    data = sources.read(h, "checkpoint")
                except GradledgerError as exc:
                    problems.append(str(exc))
                    continue
                if h == end_hash:
                    end_state = data
            binding = None
            if end_state is not None and rnd.index in theta_params:
                try:
                    end_checkpoint = decode_state(end_state)
                except GradledgerError as exc:
                    binding = f"end checkpoint does not fit θ_r: {exc}"
                else:
                    if codec == NO_CODEC:
                        binding = check_delta_binding(theta_params[rnd.index], end_checkpoint, to_hash32(c.delta_hash))
                    else:
                        evidence = read_payload_evidence(history, sources, c, codec)
                        binding = check_payload_binding(doc, theta_params[rnd.index], end_checkpoint, evidence)
            facts[(rnd.index, c.solver)] = DocumentFacts(
                rnd.index, c.solver, doc, chosen.where, searched, tuple(problems), len(hashes) - len(problems), binding
            )
    return facts


def compute_start_hashes(
    history: RunHistory,
    documents: Mapping[tuple[int, str], DocumentFacts],
    theta_params: Mapping[int, State],
    sources: ArtifactSources,
    carry_moments: bool,
) -> dict[tuple[int, str], str | None]:
    """The c_0 each commitment must start at, for every round whose θ_r is known: θ_r's parameters with the moments
    protocol/moments.py's rule names (fresh, or those of the end checkpoint of the solver's accepted commitment of
    round r - 1, found through the document read for it; None when that document or checkpoint cannot be read)."""

    def get_accepted(round_index: int, solver: str) -> Commitment | None:
        """Acceptance as the history folded it (a settled round's): node/payloads.py reads the same events."""
        rnd = history.rounds[round_index]
        return rnd.commitment_of(solver) if rnd.settled and rnd.is_accepted(solver) else None

    hashes: dict[tuple[int, str], str | None] = {}
    for rnd in history.rounds:
        if rnd.index not in theta_params:
            continue
        params = theta_params[rnd.index]
        fresh = hash_to_hex(compute_state_hash(compute_start_checkpoint(params, None)))
        for c in rnd.commitments:
            carried = find_carried_commitment(carry_moments, rnd.index, c.solver, get_accepted)
            if carried is None:
                hashes[(rnd.index, c.solver)] = fresh
            else:
                found = documents.get((carried.round, carried.solver))
                hashes[(rnd.index, c.solver)] = _get_carried_start_hash(params, found.doc if found else None, sources)
    return hashes


def _get_carried_start_hash(params: State, doc: CommitmentDoc | None, sources: ArtifactSources) -> str | None:
    """Hash of θ_r's parameters plus the moments of `doc`'s end checkpoint, None when unreadable."""
    if doc is None or not doc.leaves:
        return None
    try:
        end = decode_state(sources.read(get_carried_checkpoint_hash(doc), "end checkpoint"))
        return hash_to_hex(compute_state_hash(compute_start_checkpoint(params, end)))
    except GradledgerError:  # missing or corrupt, not a canonical state, or moments that do not fit θ
        return None
