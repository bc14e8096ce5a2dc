"""`gradledger audit`: rebuild a run from chain events and artifacts alone, re-derive it, check it.

read -> decide -> report, like every role:

1. read (adapters only): pin the chain's latest block B; every event of the deployment up to B
   (the manifest's contracts and every run's share token), the timestamps of their blocks, the
   contracts' public state and ETH balances *at B* -- so a run in progress is audited as one
   consistent snapshot (`auditor/chain_reads.py`) -- then the run's artifacts (config, dataset, θs, Δs,
   commitment documents, checkpoints) from local stores and peers (`auditor/artifact_reads.py`,
   `auditor/sources.py`).
2. decide (`auditor/checks.py`, `auditor/payout_checks.py`, no I/O): fold the events into the run's history
   (`protocol.history.fold`), re-derive every settled θ_(r+1), check documents, checkpoints, shares,
   slashes, public state and the ETH balance; replay a sample of the accepted segments with the verifiers' one
   verdict (`auditor/replay_check.py`, which fetches their checkpoints). Each check passes or fails with its evidence.
3. report: one model of what is shown (`auditor/report_model.py`, computed once from the `AuditReport` this module
   returns), rendered by pure functions of it: terminal tables (`auditor/terminal_report.py`), JSON
   (`auditor/json_report.py`), self-contained HTML with plots (`auditor/html_report.py`, `auditor/plots.py`);
   `auditor/report.py` writes them.

Nothing is written until everything was read and checked; an RPC that drops mid-read raises a
ChainUnavailableError (no report at all), never a half-written file.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from auditor import checks
from auditor.artifact_reads import compute_start_hashes, load_payload_update, read_documents, read_run_definition
from auditor.chain_reads import read_chain, read_public_state
from auditor.checks import AuditWarning, CheckResult, DocumentFacts, StartHashes, ThetaDerivation
from auditor.payout_checks import Contribution, check_shares, check_slashes
from auditor.replay_check import ReplaySettings, check_replays
from auditor.sources import ArtifactSources, find_home_stores
from protocol.adapters.chain import ChainClient
from protocol.adapters.event_index import EventIndex
from protocol.adapters.manifest import DeploymentManifest
from protocol.adapters.runs import RunNotFoundError
from protocol.history.fold import fold_run_history, get_round_phase
from protocol.history.records import RunHistory
from protocol.ledger import compute_ledger
from protocol.payload import NO_CODEC
from protocol.state import decode_state
from protocol.training import State, evaluate_params, get_params


@dataclass(frozen=True)
class AuditReport:
    """The outcome of one audit: history, checks and every fact the report shows (auditor/report_model.py turns it
    into what is shown)."""

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
    index: EventIndex | None = None,
) -> AuditReport:
    """Read everything, run every check; the report (nothing written here). `replay`: which accepted segments are
    replayed (default: one per accepted commitment, audit seed 0; auditor/replay_check.py). `index`: the deployment's
    event index to read the events through (`auditor/chain_reads.py` `read_chain`: only blocks it lacks are read)."""
    started = time.perf_counter()
    snapshot = read_chain(chain, manifest, index)
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


def open_sources(
    home: Path | None, stores: Sequence[str | Path], peers: Sequence[str], include_home: bool = True
) -> ArtifactSources:
    """The stores under `home` (creator, solvers, verifiers) plus --artifacts stores (directories or s3:// URLs),
    plus peers."""
    specs: list[str | Path] = list(stores)
    if include_home and home is not None and home.is_dir():
        specs += find_home_stores(home)
    return ArtifactSources(specs, peers)
