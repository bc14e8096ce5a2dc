"""The audit report's one model: everything the terminal summary, the JSON export and the HTML report show.

Why one model: the three renderers used to walk the run's history each on their own (phases, document verdicts,
plant descriptions, shares minted per kind, labels), so the same fact could be derived three ways. Here it is
derived once, from the `AuditReport` the audit returns (`build_report_model`), into frozen dataclasses; every
renderer (auditor/json_report.py, auditor/terminal_report.py, auditor/html_report.py, auditor/plots.py) is a pure
function of the model and reads no history, no documents and no rule of its own.

Raw event facts that need no interpretation (attestations, disputes, claims, slashes, mints, stake points, revenue
flows) are the history's own frozen records; every derived value (which commitments were accepted or paid, a
round's phase, a document's verdict, a plant's status, labels) is computed here. The number formats all three text
outputs share live here too, so a value reads the same in each of them.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import get_args

from auditor.audit import AuditReport
from auditor.checks import AuditWarning, CheckResult, ThetaDerivation, judge_document
from auditor.payout_checks import Contribution
from protocol.history.fold import get_round_phase
from protocol.history.records import (
    Abstention,
    Attestation,
    Commitment,
    Dispute,
    Participant,
    PlantAnchor,
    RevenueFlow,
    RevenueKind,
    Round,
    RunHistory,
    Seed,
    ShareKind,
    ShareMint,
    Slash,
    StakePoint,
    ThetaClaim,
)
from protocol.types import PlantTerms, RunTerms

SHARE_KINDS: tuple[str, ...] = get_args(ShareKind)
"""The kinds of work shares are minted for, in the order every output lists them."""
REVENUE_KINDS: tuple[str, ...] = get_args(RevenueKind)


def format_iso(ts: int | None) -> str | None:
    return None if ts is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def format_eth(wei: int) -> str:
    return f"{wei / 1e18:,.6f}"


def format_shares(units: int) -> str:
    return f"{units / 1e18:,.4f}"


@dataclass(frozen=True)
class CommitmentView:
    """One commitment as reported: the record, who made it, whether it counted, and what its document showed."""

    commitment: Commitment
    label: str
    accepted: bool
    paid: bool
    pay: str
    plant: str
    document: str
    """"verified", or why its document fails (`auditor.checks.judge_document`)."""
    document_at: str
    checkpoints_checked: int
    checkpoint_problems: tuple[str, ...]


@dataclass(frozen=True)
class RoundPlantsView:
    """A round's plants: planted commitments, lazy passes they caught, jackpots and plant disputes."""

    planted: tuple[str, ...]
    lazy_passes_caught: int
    jackpots: int
    disputed: tuple[str, ...]
    disproven: tuple[str, ...]
    forfeits_held: int
    summary: str
    """The same in one line ("-": nothing planted)."""


@dataclass(frozen=True)
class RoundView:
    """One round as reported: its records, its phase at the audited block, its loss and re-derivation."""

    index: int
    phase: str
    settled: bool
    start_time: int
    start_block: int
    theta_hash: str
    next_theta_hash: str | None
    settled_time: int | None
    settled_block: int | None
    claimer: str | None
    loss: float | None
    loss_after: float | None
    derivation: ThetaDerivation | None
    """The re-derivation of θ_(r+1) (None: not attempted, the round is not settled or θ_r was unknown before it)."""
    accepted: tuple[str, ...]
    paid: tuple[str, ...]
    paid_commitments: int
    standing_checks: int
    seed: Seed | None
    commitments: tuple[CommitmentView, ...]
    attestations: tuple[Attestation, ...]
    abstentions: tuple[Abstention, ...]
    disputes: tuple[Dispute, ...]
    claims: tuple[ThetaClaim, ...]
    shares_minted: Mapping[str, int]
    pool_released: int
    plants_on: bool
    """The round could be planted (the run plants): commitments then have a plant status."""
    plants: RoundPlantsView

    @property
    def passes(self) -> int:
        return sum(1 for a in self.attestations if not a.is_fail)

    @property
    def fails(self) -> int:
        return len(self.attestations) - self.passes

    @property
    def rederived(self) -> bool:
        """θ_(r+1) was re-derived and matches what the round settled on."""
        return self.derivation is not None and self.derivation.problem is None


@dataclass(frozen=True)
class PlantsView:
    """The run's plant terms and what they did: pool, held forfeits, anchors, jackpots per verifier."""

    terms: PlantTerms
    pool: int
    forfeits_held: int
    anchors: tuple[PlantAnchor, ...]
    seed_block: int
    run_seed_base: str | None
    jackpots: Mapping[str, int]


@dataclass(frozen=True)
class RunView:
    """The run's creation facts and on-chain terms."""

    creator: str
    share_token: str
    reward_pool: int
    created_block: int
    created_time: int | None
    max_rounds: int
    rounds_settled: int
    finished: bool
    terms: RunTerms
    plants: PlantsView | None


@dataclass(frozen=True)
class AuditReportModel:
    """Everything an audit report shows, derived once (`build_report_model`)."""

    run_id: int
    chain_id: int
    rpc_url: str
    block: int
    block_time: int
    sources: str
    checks: tuple[CheckResult, ...]
    warnings: tuple[AuditWarning, ...]
    run: RunView
    rounds: tuple[RoundView, ...]
    losses: Mapping[int, float]
    """Held-out loss of θ_r by r, in round order."""
    final_theta_hash: str | None
    final_loss: float | None
    """Of a finished run: its last θ and that θ's loss (None when not finished or not evaluated)."""
    slashes: tuple[Slash, ...]
    share_balances: tuple[tuple[str, int], ...]
    total_shares: int
    mints: tuple[ShareMint, ...]
    unclaimed: tuple[Contribution, ...]
    participants: tuple[Participant, ...]
    stakes: tuple[StakePoint, ...]
    revenue_totals: Mapping[str, int]
    revenue_flows: tuple[RevenueFlow, ...]
    contract_balances: Mapping[str, int]
    implied_balance: int
    ledger_by_kind: Mapping[str, int]
    pending: tuple[str, ...]
    timings: Mapping[str, float]
    labels: Mapping[str, str]
    """Address -> the name the report gives it, for every address the report shows."""

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def failed(self) -> tuple[CheckResult, ...]:
        return tuple(c for c in self.checks if not c.passed)

    @property
    def contract_balance(self) -> int:
        return sum(self.contract_balances.values())

    def label_of(self, address: str | None) -> str:
        """The name `labels` gives `address` ("" for none; an address it does not cover reads as itself)."""
        return self.labels.get(address, address) if address else ""


def describe_plant(rnd: Round, c: Commitment) -> str:
    """A commitment's plant status in a few words ("-" when the round cannot be planted)."""
    if not rnd.plants_on:
        return "-"
    if not c.plant_eligible:
        return "no eligible anchor: none two rounds old, nor one set before the start (unpaid)"
    if c.disproven:
        return "planted, disproven by a jury (unpaid)"
    if c.planted:
        return "planted"
    if c.revealed:
        return "revealed, not planted"
    return "not revealed, reported" if c.unrevealed_reported else "not revealed (unpaid)"


def summarize_plants(rnd: Round) -> str:
    """A round's plants in one line: planted commitments, lazy passes they caught, jackpots, and the plant disputes
    with the plants they disproved, if any ("-": nothing planted)."""
    planted = len(rnd.planted)
    if not planted:
        return "-"
    caught = len(rnd.lazy_plant_passes)
    line = f"{planted} planted, {caught} lazy pass(es) caught, jackpots {format_eth(rnd.jackpots)} ETH"
    disputed = len(rnd.plant_disputes)
    if disputed:
        line += f", {disputed} disputed, {len(rnd.disproven_plants)} disproven"
    returned = sum(a.forfeit for a in rnd.attestations if a.forfeit_release == "returned")
    if returned:
        line += f", forfeits returned {format_eth(returned)} ETH"
    if rnd.forfeits_held:
        line += f", forfeits held {format_eth(rnd.forfeits_held)} ETH"
    return line


def _commitment_view(report: AuditReport, rnd: Round, c: Commitment) -> CommitmentView:
    h = report.history
    facts = report.documents.get((rnd.index, c.solver))
    verdict = judge_document(h, facts, report.start_hashes)
    problems = list(facts.checkpoint_problems) if facts else []
    if facts and facts.delta_binding:
        problems.append(facts.delta_binding)
    return CommitmentView(
        commitment=c,
        label=h.label_of(c.solver),
        accepted=rnd.is_accepted(c.solver),
        paid=rnd.is_paid(c.solver),
        pay=rnd.pay_of(c.solver).name.lower(),
        plant=describe_plant(rnd, c),
        document="verified" if verdict is None else verdict,
        document_at=facts.where if facts else "",
        checkpoints_checked=facts.checkpoints_checked if facts else 0,
        checkpoint_problems=tuple(problems),
    )


def _round_view(report: AuditReport, rnd: Round) -> RoundView:
    h = report.history
    derivation = next((d for d in report.derivations if d.round == rnd.index), None)
    minted = dict.fromkeys(SHARE_KINDS, 0)
    for m in h.mints:
        if m.round == rnd.index:
            minted[m.kind] += m.amount
    plants = RoundPlantsView(
        planted=tuple(c.solver for c in rnd.planted),
        lazy_passes_caught=len(rnd.lazy_plant_passes),
        jackpots=rnd.jackpots,
        disputed=tuple(d.solver for d in rnd.plant_disputes if d.solver is not None),
        disproven=tuple(c.solver for c in rnd.disproven_plants),
        forfeits_held=rnd.forfeits_held,
        summary=summarize_plants(rnd),
    )
    return RoundView(
        index=rnd.index,
        phase=get_round_phase(h, rnd.index, report.block_time),
        settled=rnd.settled,
        start_time=rnd.start_time,
        start_block=rnd.start_block,
        theta_hash=rnd.theta_hash,
        next_theta_hash=rnd.next_theta_hash,
        settled_time=rnd.settled_time,
        settled_block=rnd.settled_block,
        claimer=rnd.claimer,
        loss=report.losses.get(rnd.index),
        loss_after=report.losses.get(rnd.index + 1) if rnd.settled else None,
        derivation=derivation,
        accepted=rnd.accepted,
        paid=rnd.paid,
        paid_commitments=rnd.paid_commitments,
        standing_checks=rnd.standing_checks,
        seed=rnd.seed,
        commitments=tuple(_commitment_view(report, rnd, c) for c in rnd.commitments),
        attestations=rnd.attestations,
        abstentions=rnd.abstentions,
        disputes=rnd.disputes,
        claims=rnd.claims,
        shares_minted=minted,
        pool_released=rnd.pool_released,
        plants_on=rnd.plants_on,
        plants=plants,
    )


def _plants_view(h: RunHistory) -> PlantsView | None:
    terms = h.plants.terms
    if terms is None:
        return None
    return PlantsView(
        terms=terms,
        pool=h.plants.pool,
        forfeits_held=sum(rnd.forfeits_held for rnd in h.rounds),
        anchors=h.plants.anchors,
        seed_block=h.plants.seed_block,
        run_seed_base=h.plants.run_seed_base,
        jackpots=h.jackpots,
    )


def _shown_addresses(report: AuditReport) -> Iterable[str | None]:
    """Every address some output names (so `labels` covers them all)."""
    h = report.history
    yield h.creator
    yield from (p.address for p in h.participants)
    for rnd in h.rounds:
        yield rnd.claimer
        yield from (c.solver for c in rnd.commitments)
        for a in rnd.attestations:
            yield from (a.solver, a.verifier)
        for abstention in rnd.abstentions:
            yield from (abstention.solver, abstention.verifier, abstention.reporter)
        for d in rnd.disputes:
            yield from (d.challenger, d.solver, d.winner, d.claimer)
        yield from (claim.claimer for claim in rnd.claims)
    yield from (m.holder for m in h.mints)
    yield from (holder for holder, _ in h.share_balances)
    for slash in h.slashes:
        yield from (slash.account, slash.solver)
    yield from (p.account for p in h.stakes)
    yield from (f.account for f in h.revenue)
    yield from h.jackpots
    yield from (a.solver for a in h.plants.anchors)
    yield from (c.holder for c in report.contributions)


def build_report_model(report: AuditReport) -> AuditReportModel:
    """The report's model: every value the outputs show, derived once from the audit."""
    h = report.history
    finished_loss = report.losses.get(len(h.rounds)) if h.finished and h.rounds else None
    return AuditReportModel(
        run_id=report.run_id,
        chain_id=report.chain_id,
        rpc_url=report.rpc_url,
        block=report.block,
        block_time=report.block_time,
        sources=report.sources,
        checks=report.checks,
        warnings=report.warnings,
        run=RunView(
            creator=h.creator,
            share_token=h.share_token,
            reward_pool=h.reward_pool,
            created_block=h.created_block,
            created_time=h.created_time,
            max_rounds=h.terms.max_rounds,
            rounds_settled=len(h.settled_rounds),
            finished=h.finished,
            terms=h.terms,
            plants=_plants_view(h),
        ),
        rounds=tuple(_round_view(report, rnd) for rnd in h.rounds),
        losses=dict(sorted(report.losses.items())),
        final_theta_hash=h.rounds[-1].next_theta_hash if h.finished and h.rounds else None,
        final_loss=finished_loss,
        slashes=h.slashes,
        share_balances=h.share_balances,
        total_shares=h.total_supply,
        mints=tuple(h.mints),
        unclaimed=tuple(c for c in report.contributions if not c.claimed),
        participants=h.participants,
        stakes=h.stakes,
        revenue_totals={kind: h.revenue_total(kind) for kind in REVENUE_KINDS},
        revenue_flows=tuple(h.revenue),
        contract_balances=dict(report.contract_balances),
        implied_balance=report.implied_balance,
        ledger_by_kind=dict(report.ledger_by_kind),
        pending=report.pending,
        timings=dict(report.timings),
        labels={a: h.label_of(a) for a in _shown_addresses(report) if a},
    )
