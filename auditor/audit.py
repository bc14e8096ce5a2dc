"""`gradledger audit`: rebuild a run from chain events and artifacts alone, re-derive it, check it.

read -> decide -> report, like every role:

1. read (adapters only): pin the chain's latest block B; every event of the deployment up to B
   (the manifest's contracts and every run's share token), the timestamps of their blocks, the
   contracts' public state and ETH balances *at B* -- so a run in progress is audited as one
   consistent snapshot -- then the run's artifacts (config, dataset, θs, Δs, commitment
   documents, checkpoints) from local stores and peers (`auditor/sources.py`).
2. decide (`auditor/checks.py`, `auditor/payout_checks.py`, no I/O): fold the events into the run's history
   (`protocol.history.fold`), re-derive every settled θ_(r+1), check documents, checkpoints, shares,
   slashes, public state and the ETH balance; replay a sample of the accepted segments with the verifiers' one
   verdict (`auditor/replay_check.py`, which fetches their checkpoints). Each check passes or fails with its evidence.
3. report (`auditor/report.py`: terminal tables, JSON; `auditor/html_report.py`: self-contained HTML with plots).

Nothing is written until everything was read and checked; an RPC that drops mid-read raises a
ChainUnavailableError (no report at all), never a half-written file.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from auditor import checks
from auditor.checks import (
    AuditWarning,
    CheckResult,
    DocumentFacts,
    PublicState,
    RunDefinitionFacts,
    StartHashes,
    ThetaDerivation,
)
from auditor.payout_checks import Contribution, check_shares, check_slashes
from auditor.replay_check import ReplaySettings, check_replays
from auditor.sources import ArtifactSources, find_home_stores
from protocol.adapters.chain import ChainClient, ChainEvent
from protocol.adapters.manifest import DeploymentManifest
from protocol.adapters.runs import RunNotFoundError
from protocol.config import RunConfig, compute_config_hash, parse_run_config, verify_run_terms
from protocol.data import TokenDataset, build_token_dataset, decode_manifest
from protocol.errors import GradledgerError
from protocol.hashing import hash_to_hex, to_hash32
from protocol.history.events import find_missing_event_fields, share_token_contract
from protocol.history.fold import fold_run_history, get_round_phase, list_runs
from protocol.history.records import RunHistory, RunSummary
from protocol.ledger import compute_ledger
from protocol.payload import NO_CODEC, decode_payload_doc, decode_payload_update
from protocol.state import compute_state_hash, decode_state
from protocol.training import State, evaluate_params, get_moments, get_params, make_start_checkpoint
from protocol.verdict import PayloadEvidence, check_delta_binding, check_payload_binding

TEMPLATE_ADDRESS = "0x" + "00" * 20


class AuditError(GradledgerError):
    """The audit could not be completed (wrong inputs, contracts this auditor cannot read)."""


@dataclass(frozen=True)
class ChainSnapshot:
    """Everything read from the chain, pinned at one block."""

    block: int
    block_time: int
    chain_id: int
    events: tuple[ChainEvent, ...]
    timestamps: Mapping[int, int]
    runs: tuple[RunSummary, ...]
    share_tokens: Mapping[int, str]
    contract_balances: Mapping[str, int]


@dataclass(frozen=True)
class AuditReport:
    """The outcome of one audit: history, checks and everything the report shows."""

    run_id: int
    chain_id: int
    rpc_url: str
    block: int
    block_time: int
    history: RunHistory
    checks: tuple[CheckResult, ...]
    derivations: tuple[ThetaDerivation, ...]
    losses: Mapping[int, float]
    documents: Mapping[tuple[int, str], DocumentFacts]
    start_hashes: StartHashes
    contributions: tuple[Contribution, ...]
    pending: tuple[str, ...]
    contract_balances: Mapping[str, int]
    implied_balance: int
    ledger_by_kind: Mapping[str, int]
    sources: str
    timings: Mapping[str, float] = field(default_factory=dict)
    warnings: tuple[AuditWarning, ...] = ()
    """Not failures (`passed` ignores them): what a consistent run must still show, e.g. that it accepted nothing."""

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def failed(self) -> tuple[CheckResult, ...]:
        return tuple(c for c in self.checks if not c.passed)

    @property
    def contract_balance(self) -> int:
        return sum(self.contract_balances.values())


# ---------------------------------------------------------------------------------------------
# read: chain


def _abi_events(manifest: DeploymentManifest) -> dict[str, list[str]]:
    events: dict[str, list[str]] = {}
    for record in manifest.contracts.values():
        for item in record.abi:
            if item.get("type") == "event":
                fields = events.setdefault(item["name"], [])
                for field_ in item.get("inputs", []):
                    fields.append(field_["name"])
                    fields.extend(f"{field_['name']}.{c['name']}" for c in field_.get("components", []))
    return events


def read_chain(chain: ChainClient, manifest: DeploymentManifest) -> ChainSnapshot:
    """Every event up to the latest block B, their block timestamps and the contracts' balances at B."""
    missing = find_missing_event_fields(_abi_events(manifest))
    if missing:
        raise AuditError(
            "the deployed contracts' ABIs lack events or fields the audit reads: "
            f"{', '.join(missing[:8])}; the contracts changed -- update EVENT_FIELDS in protocol/history/events.py "
            "and the handlers in protocol/history/ (registry.py, disputes.py, accounts.py, plants.py) to match"
        )
    block = chain.block_number()
    block_time = int(chain.get_block(block)["timestamp"])
    base = chain.get_events(manifest.deployed_block, block, contracts=list(manifest.contracts))
    tokens = {int(e.args["runId"]): str(e.args["shareToken"]) for e in base if e.name == "RunCreated"}
    template = manifest.contracts["RunShares"].abi
    for run_id, token in tokens.items():
        chain.add_contract(share_token_contract(run_id), token, template)
    token_events = (
        chain.get_events(manifest.deployed_block, block, contracts=[share_token_contract(r) for r in tokens])
        if tokens
        else []
    )
    events = tuple(sorted([*base, *token_events], key=lambda e: (e.block_number, e.log_index)))
    timestamps = chain.get_block_timestamps({e.block_number for e in events})
    balances = {
        name: chain.get_balance(record.address, block)
        for name, record in sorted(manifest.contracts.items())
        if record.address.lower() != TEMPLATE_ADDRESS
    }
    for run_id, token in sorted(tokens.items()):
        balances[share_token_contract(run_id)] = chain.get_balance(token, block)
    return ChainSnapshot(block, block_time, chain.chain_id, events, timestamps, list_runs(events), tokens, balances)


def read_public_state(chain: ChainClient, history: RunHistory, block: int) -> PublicState:
    """The contracts' public state at `block` that the events must agree with (contract calls in one place)."""
    run = history.run_id
    times = chain.call_fields("RunRegistry", "roundTimes", run, block=block)
    current, finished = int(times["round"]), bool(times["finished"])
    theta_of = {r: hash_to_hex(chain.call("RunRegistry", "thetaOf", run, r, block=block)) for r in range(current + 1)}
    statuses, tallies, votes, minted = {}, {}, {}, {}
    for rnd in history.rounds:
        for c in rnd.commitments:
            status = chain.call_fields("Verification", "commitmentStatusOf", run, rnd.index, c.solver, block=block)
            statuses[(rnd.index, c.solver)] = {name: int(value) for name, value in status.items()}
        if rnd.seed is not None:
            tally = chain.call_fields("Verification", "roundTally", run, rnd.index, block=block)
            tallies[rnd.index] = (int(tally["totalChecks"]), int(tally["paidCommitments"]))
        votes[rnd.index] = int(chain.call("Disputes", "jurorVotes", run, rnd.index, block=block))
        minted[rnd.index] = int(chain.call("ModelShares", "mintedInRound", run, rnd.index, block=block))
    role_ids = {"solver": 1, "verifier": 2}
    stakes = {}
    for account, role in sorted({(p.account, p.role) for p in history.stakes}):
        stake = chain.call_fields("StakeManager", "stakeOf", account, role_ids[role], block=block)
        stakes[(account, role)] = (int(stake["bonded"]), int(stake["unbonding"]))
    token = share_token_contract(run)
    holders = {h for h, _ in history.share_balances} | {m.holder for m in history.mints}
    balances = {h: int(chain.call(token, "balanceOf", h, block=block)) for h in sorted(holders)}
    supply = int(chain.call(token, "totalSupply", block=block))
    return PublicState(
        current,
        finished,
        theta_of,
        statuses,
        tallies,
        votes,
        minted,
        stakes,
        {h: b for h, b in balances.items() if b},
        supply,
    )


# ---------------------------------------------------------------------------------------------
# read: artifacts


@dataclass
class _Definition:
    config: RunConfig | None = None
    dataset: TokenDataset | None = None
    facts: RunDefinitionFacts | None = None


def read_run_definition(history: RunHistory, sources: ArtifactSources) -> _Definition:
    """Config, dataset (manifest and shards) and θ0 under their on-chain hashes; the config fits the terms.

    The config's fit is `protocol.config.verify_run_terms`, the check every node makes: a config that
    does not re-hash to the on-chain config hash is a config problem (the artifact is not the canonical
    JSON of a config, so it is not used); a dataset root, H or k other than the run's is a rules problem.
    """
    terms = history.terms
    out = _Definition()
    config_problem = rules_problem = dataset_problem = None
    try:
        out.config = parse_run_config(sources.read(terms.config_hash, "run config"))
    except GradledgerError as exc:
        config_problem = str(exc)
    if out.config is not None and (problem := verify_run_terms(out.config, terms)) is not None:
        if compute_config_hash(out.config) != terms.config_hash:
            config_problem = f"config artifact is not canonical: {problem}"
            out.config = None
        else:
            rules_problem = problem
    try:
        manifest = decode_manifest(sources.read(terms.dataset_root, "dataset manifest"))
        shards = {ref.hash: sources.read(ref.hash, f"dataset shard {i}") for i, ref in enumerate(manifest.shards)}
        if out.config is not None:
            out.dataset = build_token_dataset(manifest, shards, out.config.data.eval_shards)
    except GradledgerError as exc:
        dataset_problem = str(exc)
    theta0_problem = sources.problem(terms.theta0_hash, "θ0")
    out.facts = RunDefinitionFacts(config_problem, dataset_problem, theta0_problem, rules_problem)
    return out


def read_payload_evidence(
    history: RunHistory, sources: ArtifactSources, round_index: int, solver: str, codec: str
) -> PayloadEvidence:
    """A codec run's Δ binding inputs for one commitment, read as node/payloads.py fetches them (the previous
    round's accepted payload document, the document, P_r and a non-zero e_r); what cannot be read is the problem."""
    rnd = history.rounds[round_index]
    commitment = rnd.commitment_of(solver)
    previous = None
    before = history.rounds[round_index - 1] if round_index > 0 else None
    if before is not None and solver in before.accepted:
        try:
            previous = decode_payload_doc(
                sources.read(before.commitment_of(solver).delta_hash, f"payload document of round {before.index}")
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
                        evidence = read_payload_evidence(history, sources, rnd.index, c.solver, codec)
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
    """The c_0 each commitment must start at, for every round whose θ_r is known: θ_r's parameters with fresh AdamW
    moments, or, in a run that carries them, with the moments of the end checkpoint of the solver's accepted
    commitment of round r - 1 (node/moments.py's rule; None when that checkpoint cannot be read)."""
    hashes: dict[tuple[int, str], str | None] = {}
    for rnd in history.rounds:
        if rnd.index not in theta_params:
            continue
        params = theta_params[rnd.index]
        fresh = hash_to_hex(compute_state_hash(make_start_checkpoint(params)))
        previous = history.rounds[rnd.index - 1] if rnd.index > 0 else None
        for c in rnd.commitments:
            carried = carry_moments and previous is not None and previous.settled and previous.is_accepted(c.solver)
            hashes[(rnd.index, c.solver)] = (
                _get_carried_start_hash(params, documents.get((rnd.index - 1, c.solver)), sources) if carried else fresh
            )
    return hashes


def _get_carried_start_hash(params: State, previous: DocumentFacts | None, sources: ArtifactSources) -> str | None:
    """Hash of θ_r's parameters plus the moments of the previous document's end checkpoint, None when unreadable."""
    if previous is None or previous.doc is None or not previous.doc.leaves:
        return None
    try:
        end = decode_state(sources.read(previous.doc.leaves[-1].end_hash, "end checkpoint"))
        return hash_to_hex(compute_state_hash(make_start_checkpoint(params, get_moments(end))))
    except GradledgerError:  # missing or corrupt, not a canonical state, or moments that do not fit θ
        return None


# ---------------------------------------------------------------------------------------------
# decide + assemble


def _pending(history: RunHistory, now: int, contributions: Sequence[Contribution], slashes: Sequence[str]) -> list[str]:
    pending: list[str] = []
    unsettled: list[str] = []  # listed first: what the run is waiting for now
    for rnd in history.rounds:
        if not rnd.settled:
            phase = get_round_phase(history, rnd.index, now)
            unsettled.append(
                f"round {rnd.index} not settled ({phase}): {len(rnd.commitments)} commitment(s), "
                f"{len(rnd.attestations)} attestation(s) so far"
            )
        for a in rnd.attestations:
            if rnd.settled and a.state == "attested":
                who = history.label_of(a.solver)
                pending.append(f"round {rnd.index}: attestation of {who}'s commitment (slot {a.slot}) not finalized")
            if rnd.settled and a.forfeit and a.forfeit_release is None:
                who = history.label_of(a.verifier)
                pending.append(
                    f"round {rnd.index}: forfeit of {who}'s pass on {history.label_of(a.solver)}'s planted commitment "
                    f"({a.forfeit / 1e18:,.4f} ETH) held by Plants, not released"
                )
        for claim in rnd.claims:
            if claim.status == "settled" and not claim.bond_withdrawn:
                pending.append(f"round {rnd.index}: claim bond of {history.label_of(claim.claimer)} not withdrawn")
    for c in contributions:
        if not c.claimed:
            who = history.label_of(c.holder) if c.holder else "a signing juror"
            pending.append(f"round {c.round}: {c.kind} shares of {who} ({c.expected / 1e18:,.4f}) not claimed")
    pending.extend(slashes)
    return unsettled + pending


def audit_run(
    chain: ChainClient,
    manifest: DeploymentManifest,
    run_id: int,
    sources: ArtifactSources,
    labels: Mapping[str, str] | None = None,
    evaluate_loss: bool = True,
    replay: ReplaySettings | None = None,
) -> AuditReport:
    """Read everything, run every check; the report (nothing written here). `replay`: which accepted segments are
    replayed (default: one per accepted commitment, audit seed 0; auditor/replay_check.py)."""
    started = time.perf_counter()
    snapshot = read_chain(chain, manifest)
    if run_id not in snapshot.share_tokens:
        known = ", ".join(str(r.run_id) for r in snapshot.runs) or "none"
        raise RunNotFoundError(f"run {run_id} does not exist in this deployment (runs: {known})")
    history = fold_run_history(snapshot.events, run_id, snapshot.timestamps, labels)
    public = read_public_state(chain, history, snapshot.block)
    read_chain_s = time.perf_counter() - started

    t0 = time.perf_counter()
    definition = read_run_definition(history, sources)
    losses: dict[int, float] = {}
    theta_params: dict[int, State] = {}

    def load_state(digest: str, what: str) -> State:
        return decode_state(sources.read(digest, what))

    def on_theta(index: int, state: State) -> None:
        params = get_params(state)
        if index < len(history.rounds):
            theta_params[index] = params
        if evaluate_loss and definition.dataset is not None and definition.config is not None:
            losses[index] = evaluate_params(params, definition.dataset, definition.config)

    codec = definition.config.train.codec if definition.config else NO_CODEC

    def load_update(digest: str, what: str) -> State:
        return load_state(digest, what) if codec == NO_CODEC else load_payload_update(sources, digest, what)

    theta_check, derivations = checks.rederive_thetas(
        history, definition.config.train if definition.config else None, load_state, on_theta, load_update
    )
    documents = read_documents(history, sources, theta_params, codec)
    carry = definition.config.train.carry_moments if definition.config else False
    start_hashes = compute_start_hashes(history, documents, theta_params, sources, carry)
    accepted = {(r.index, s) for r in history.rounds for s in r.accepted}
    strict = {k: v for k, v in documents.items() if k in accepted}
    artifacts_s = time.perf_counter() - t0

    t_replay = time.perf_counter()  # before the integrity check: the checkpoint copies it reads are checked too
    replays = check_replays(
        history, strict, start_hashes, definition.config, definition.dataset, sources.read, replay or ReplaySettings()
    )
    replay_s = time.perf_counter() - t_replay

    t1 = time.perf_counter()
    shares_check, contributions = check_shares(history)
    slashes_check, pending_slashes = check_slashes(history)
    ledger = compute_ledger(snapshot.events)
    results = [
        checks.check_run_definition(definition.facts),
        theta_check,
        _with_rejected(
            checks.check_documents(history, strict, start_hashes), history, documents, accepted, start_hashes
        ),
        checks.check_checkpoints(history, strict),
        replays.check,
        checks.check_integrity([(c.digest, c.where) for c in sources.corrupt]),
        shares_check,
        slashes_check,
        checks.check_public_state(history, public),
        checks.check_balance(snapshot.contract_balances, ledger.implied_balance, ledger.by_kind),
    ]
    decide_s = time.perf_counter() - t1
    return AuditReport(
        run_id=run_id,
        chain_id=snapshot.chain_id,
        rpc_url=chain.rpc_url,
        block=snapshot.block,
        block_time=snapshot.block_time,
        history=history,
        checks=tuple(results),
        derivations=derivations,
        losses=losses,
        documents=documents,
        start_hashes=start_hashes,
        contributions=tuple(contributions),
        pending=tuple(_pending(history, snapshot.block_time, contributions, pending_slashes)),
        contract_balances=snapshot.contract_balances,
        implied_balance=ledger.implied_balance,
        ledger_by_kind=dict(ledger.by_kind),
        sources=sources.describe(),
        timings={
            "read_chain": round(read_chain_s, 3),
            "read_artifacts_and_rederive": round(artifacts_s, 3),
            "replay": round(replay_s, 3),
            "checks": round(decide_s, 3),
            "total": round(time.perf_counter() - started, 3),
        },
        warnings=(*checks.find_warnings(history), *replays.warnings),
    )


def _with_rejected(
    result: CheckResult,
    history: RunHistory,
    documents: Mapping[tuple[int, str], DocumentFacts],
    accepted: set[tuple[int, str]],
    start_hashes: StartHashes,
) -> CheckResult:
    """Findings on commitments that were not accepted go into the evidence: the protocol refused
    that work (it earned nothing and never reached θ), so they do not fail the audit."""
    others = {k: v for k, v in documents.items() if k not in accepted}
    if not others:
        return result
    findings = checks.check_documents(history, others, start_hashes)
    evidence = {**result.evidence, "not_accepted_commitments": len(others)}
    if not findings.passed:
        evidence["not_accepted_findings"] = list(findings.evidence.get("problems", []))
    return CheckResult(result.name, result.passed, result.detail, evidence)


def list_deployment_runs(chain: ChainClient, manifest: DeploymentManifest) -> tuple[RunSummary, ...]:
    """The runs of a deployment (for `gradledger audit` without --run)."""
    return list_runs(chain.get_events(manifest.deployed_block, names=["RunCreated", "RoundSettled", "RunFinished"]))


def open_sources(
    home: Path | None, stores: Sequence[str | Path], peers: Sequence[str], include_home: bool = True
) -> ArtifactSources:
    """The stores under `home` (creator, solvers, verifiers) plus --artifacts stores (directories or s3:// URLs),
    plus peers."""
    specs: list[str | Path] = list(stores)
    if include_home and home is not None and home.is_dir():
        specs += find_home_stores(home)
    return ArtifactSources(specs, peers)
