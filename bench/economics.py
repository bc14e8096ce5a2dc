"""Does any cheating strategy pay? An agent-based simulation of many rounds, next to the analytic expectations.

    python bench/economics.py [--quick] [--rounds R] [--seed S] [--compute-share c] [--workers W]

Presets: the demo's run terms (gradledger.demo.DEMO_RULES, H=20, k=5), the adversarial demo's
(gradledger.adversarial_demo.ADVERSARIAL_RULES) and the documented production preset (devnet.runs.PRODUCTION_RULES,
H=500, k=10), each played by a population (protocol.economics.DEMO_POPULATION / PRODUCTION_POPULATION) and valued at
`--round-value` ETH for all the shares of a round, with a round of training costing `--compute-share` of a solver's
round reward R_s (default 1/2).

For every strategy of protocol.economics.STRATEGIES the simulation plays the same rounds twice with the same random
inputs: once with everyone honest, once with the strategy's player(s) deviating. Every draw is the protocol's own
code -- plant decisions from each solver's secret chain and the previous round's seed base (protocol.planting),
seeds, seats and samples (protocol.sampling), whistleblower selection (whistleblower.decide.is_selected), juries
(protocol.jury.draw_jury, get_appeal_jury_size) -- and every transfer is a payoff of protocol.economics (dispute
payouts, fault rewards, plant forfeits and jackpots, unresolved fees), plus share value and compute cost. Random
inputs are hashes of (seed, purpose, round, ...), so both plays see the same blocks.

The last line of output is one JSON object: `strategies` (the demo preset's rows: `name`, `expected_profit_per_round`
and `caught_per_round` -- analytic, protocol.economics.compute_expectation -- with the simulated mean, its standard
error and the simulated catch rate alongside, `break_even_stake_ratio`), `best_dishonest_profit` (the largest over
every preset of the rows counted), `verification_cost_ratio` (per preset), `planted_fault_rate`, `units`, and per
preset everything else (`presets`). JSON and a PNG (the deterrence frontier) go to `--out`.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from protocol.constants import BPS_DENOMINATOR, MAX_APPEALS, get_appeal_jury_size
from protocol.economics import (
    COMPUTE_SHARE,
    DEMO_POPULATION,
    DEMO_ROUND_VALUE,
    ETH,
    PRODUCTION_POPULATION,
    PRODUCTION_ROUND_VALUE,
    STRATEGIES,
    EconomicTerms,
    Population,
    Strategy,
    Valuation,
    build_valuation,
    compute_dispute_payout,
    compute_dispute_total,
    compute_expectation,
    compute_fault_reward,
    compute_planted_pass_loss,
    compute_unresolved_fee,
    compute_verification_cost_ratio,
    get_coalition_size,
    get_fake_mixture,
    get_rewards,
)  # fmt: skip
from protocol.hashing import keccak256
from protocol.jury import JurorEntry, draw_jury
from protocol.merkle import SegmentLeaf, compute_leaf_hash
from protocol.planting import compute_chain_seed, compute_secret_chain, get_round_secret, is_round_planted
from protocol.sampling import (
    compute_detection_probability,
    compute_sampled_segments,
    compute_sampling_seed,
    compute_seat_seed,
    compute_seat_verifier_indices,
)  # fmt: skip
from protocol.types import is_commitment_accepted
from whistleblower.decide import is_selected

RUN_ID = 1
FULL = {"demo": 6000, "adversarial-demo": 4000, "production": 2500}
QUICK = {"demo": 1500, "adversarial-demo": 1000, "production": 500}
ZERO = "0x" + "00" * 32


def _address(tag: str, index: int) -> str:
    return "0x" + keccak256(f"{tag}{index}".encode())[:20].hex()


POOL, PLANT_POOL, WHISTLEBLOWER, CHALLENGER = (_address(t, 0) for t in ("pool", "plant-pool", "wb", "challenger"))
BACKGROUND = tuple(_address("background", i) for i in range(3))  # challenger, attester, solver of background disputes


@dataclass(frozen=True)
class Preset:
    name: str
    terms: EconomicTerms
    population: Population
    valuation: Valuation


@dataclass
class Attestation:
    slot: int
    verifier: str
    fail: bool
    hit: bool  # a sampled segment is wrong (the seat's replay would fail)
    state: str = "final"  # final | upheld | overturned | voided
    challenger: str = ""


class Simulation:
    """One play of `rounds` rounds of a preset, with `strategy`'s players deviating (None: everyone honest)."""

    def __init__(self, preset: Preset, strategy: Strategy | None, rounds: int, seed: int) -> None:
        self.terms, self.pop, self.value = preset.terms, preset.population, preset.valuation
        self.strategy, self.rounds, self.seed = strategy, rounds, seed
        self.solvers = [_address("solver", i) for i in range(self.pop.solvers)]
        self.verifiers = [_address("verifier", i) for i in range(self.pop.verifiers)]
        self.jurors = [_address("juror", i) for i in range(self.pop.jurors)]
        self.registry = [JurorEntry(i, a, b"") for i, a in enumerate(self.jurors)]
        self.roles = get_roles(preset, strategy) if strategy else {}
        self.ledger: Counter[str] = Counter()
        self.steps: Counter[str] = Counter()
        self.caught = 0
        self.chains = [
            compute_secret_chain(compute_chain_seed(self._h("key", i), RUN_ID), rounds + 2)
            for i in range(self.pop.solvers)
        ]
        self.segment_cost = self.value.compute_cost * self.terms.steps_per_segment // self.terms.inner_steps

    def _h(self, *parts: object) -> bytes:
        return keccak256(repr((self.seed, *parts)).encode())

    def _book(self, account: str, amount: int, caught: bool = False) -> None:
        self.ledger[account] += amount
        if caught and account in self.roles:
            self.caught += 1

    def play(self, groups: dict[str, frozenset[str]]) -> dict[str, list[int]]:
        """Rounds 2.. (plants apply two rounds after the anchors of round 0); per round, each group's net wei."""
        series: dict[str, list[int]] = {name: [] for name in groups}
        for r in range(2, self.rounds + 2):
            before = {name: sum(self.ledger[a] for a in members) for name, members in groups.items()}
            self.play_round(r)
            for name, members in groups.items():
                series[name].append(sum(self.ledger[a] for a in members) - before[name])
        return series

    def play_round(self, r: int) -> None:
        t = self.terms
        self.votes: list[str] = []
        paid, standing = [], []
        for i, solver in enumerate(self.solvers):
            accepted, attesters = self.play_commitment(r, i, solver)
            paid += [solver] if accepted else []
            standing += attesters
        for d in range(self.pop.disputes_per_round):  # disputes of the background: a lazy pass on bad work
            won, signers = self.decide(r, ("background", d), True, None, BACKGROUND)
            if signers:
                self.pay_verdict(compute_dispute_total(t, bool(won)), signers, *BACKGROUND[:2])
        value = self.value.round_value
        for bps, payees in (
            (t.solver_share_bps, paid),
            (t.verifier_share_bps, standing),
            (t.juror_share_bps, self.votes),
        ):
            for payee in payees:
                self._book(payee, value * bps // BPS_DENOMINATOR // len(payees))

    def work_of(self, r: int, i: int, solver: str, planted: bool) -> tuple[Fraction, frozenset[int], bool]:
        """(share of the round trained, wrong segments, openable) of a solver's commitment this round. On a planted
        round the wrong segments are those that are not the planted training (what a plant check finds false);
        every segment of a planted round fails a seat's replay unless the solver trained it honestly."""
        n, role = self.terms.num_segments, self.roles.get(solver, "honest")
        everything = frozenset(range(n))
        if role == "withhold":
            return Fraction(0), everything, False
        if role == "copy_root":  # the leaves of the copied root name their own (round, solver): nothing opens
            victim = self.solvers[(i + 1) % len(self.solvers)]
            leaf = SegmentLeaf(RUN_ID, r - 1, victim, 0, ZERO, ZERO, ZERO, 1)
            return (
                Fraction(0),
                everything,
                compute_leaf_hash(leaf) == compute_leaf_hash(replace(leaf, round=r, solver=solver)),
            )
        if planted and role == "grief_plant":
            return Fraction(1), everything, True
        if planted and role != "forge_plant":
            return Fraction(1), frozenset(), True
        if role in ("fake", "collude", "forge_plant") and (planted or role != "forge_plant"):
            rng = random.Random(self._h("fake", r))
            mixture = get_fake_mixture(self.strategy.fraction if self.strategy else Fraction(0), n)
            faked = rng.choices([k for k, _ in mixture], [float(w) for _, w in mixture])[0]
            return Fraction(n - faked, n), frozenset(rng.sample(range(n), faked)), True
        return Fraction(1), frozenset(), True

    def play_commitment(self, r: int, i: int, solver: str) -> tuple[bool, list[str]]:
        """Train, commit, open, attest, reveal or dispute one commitment; returns (paid, standing attesters)."""
        t, n = self.terms, self.terms.num_segments
        secret = get_round_secret(self.chains[i], r)
        planted = is_round_planted(secret, RUN_ID, r, solver, self._h("seed-base", r - 1), t.plant.rate_bps)
        trained, wrong, openable = self.work_of(r, i, solver, planted)
        self._book(solver, -int(trained * self.value.compute_cost))
        self.steps["train"] += t.inner_steps
        if not openable:  # reported unopened: the whole stake to the pool, nothing paid
            self._book(solver, -t.solver_min_stake, caught=True)
            self._book(POOL, t.solver_min_stake)
            return False, []
        seed = compute_sampling_seed(self._h("block", r), RUN_ID, r, solver)
        atts, opened = [], []
        replay_fails = wrong if not planted else frozenset() if self.roles.get(solver) == "grief_plant" else None
        for slot, index in enumerate(compute_seat_verifier_indices(seed, t.seats, len(self.verifiers))):
            verifier = self.verifiers[index]
            samples = compute_sampled_segments(compute_seat_seed(seed, slot), n, t.samples)
            opened += samples
            hit = replay_fails is None or any(segment in replay_fails for segment in samples)
            fail, replays = self.attest(verifier, solver, planted, hit)
            if replays:
                self._book(verifier, -t.samples * self.segment_cost)
                self.steps["seat"] += t.samples * t.steps_per_segment
            atts.append(Attestation(slot, verifier, fail, hit))
        if planted:  # the reveal: passes forfeit bond and penalty to the plant pool, fails earn the jackpot
            for a in atts:
                amount = t.plant.jackpot if a.fail else -compute_planted_pass_loss(t)
                self._book(a.verifier, amount, caught=not a.fail)
                self._book(PLANT_POOL, -amount)
            return self.check_plant(r, i, solver, opened, wrong), [a.verifier for a in atts if a.fail]
        self.challenge(r, i, solver, atts)
        provers = [a.verifier for a in atts if a.fail and a.state in ("final", "upheld")]
        provers += [a.challenger for a in atts if not a.fail and a.state == "overturned"]
        if provers:
            self._book(solver, -t.solver_min_stake, caught=True)
            per_prover, to_pool = compute_fault_reward(t.solver_min_stake, len(provers))
            for prover in provers:
                self._book(prover, per_prover)
            self._book(POOL, to_pool)
        passes = sum(not a.fail and a.state in ("final", "upheld") for a in atts)
        faults = sum(a.fail and a.state != "overturned" for a in atts) + sum(
            not a.fail and a.state == "overturned" for a in atts
        )
        return is_commitment_accepted(passes, faults), [a.verifier for a in atts if a.state in ("final", "upheld")]

    def check_plant(self, r: int, i: int, solver: str, opened: list[int], wrong: frozenset[int]) -> bool:
        """A whistleblower replays one opened draw of a planted commitment with the revealed secret (picked from the
        reveal's block, as whistleblower.decide.choose_plant_check) and disputes a false plant (KIND_PLANT): a jury
        that finds it false slashes the solver's solverMinStake (the dispute total) and leaves it unpaid. Paid?"""
        t, draw = self.terms, int.from_bytes(self._h("plant-check", r, i), "big")
        if Fraction(draw % 10**9, 10**9) >= self.pop.plant_check:
            return True
        self._book(WHISTLEBLOWER, -self.segment_cost)
        self.steps["plant"] += t.steps_per_segment
        if opened[draw % len(opened)] not in wrong:
            return True
        won, signers = self.decide(r, ("plant", i), True, None, (WHISTLEBLOWER, solver, solver))
        if won is None:
            fee = compute_unresolved_fee(t)
            self._book(WHISTLEBLOWER, -fee)
            self._book(POOL, fee)
            return True
        self.pay_verdict(t.solver_min_stake, signers, WHISTLEBLOWER, solver)
        return False

    def attest(self, verifier: str, solver: str, planted: bool, hit: bool) -> tuple[bool, bool]:
        """(fail, replayed) of a seat."""
        role = self.roles.get(verifier, "honest")
        if role == "lazy":
            return False, False
        if role == "fail_all":
            return True, False
        partner = self.roles.get(solver) in ("collude", "plant_tipoff")
        if role == "accomplice" and partner and (planted or self.roles[solver] == "collude"):
            return planted, False  # told the plant; passes the partner's unplanted work unseen (collude)
        return hit, True

    def challenge(self, r: int, i: int, solver: str, atts: list[Attestation]) -> None:
        t = self.terms
        for a in atts:
            if is_selected(
                self._h("wb-block", r, i), RUN_ID, r, solver, a.slot, WHISTLEBLOWER, self.pop.recheck_fraction
            ):
                self._book(WHISTLEBLOWER, -t.samples * self.segment_cost)
                self.steps["whistle"] += t.samples * t.steps_per_segment
                if a.fail != a.hit:  # a pass on a sampled wrong segment, or a fail on right ones
                    self.dispute(r, (i, a.slot), a, WHISTLEBLOWER, True, solver)
        kind = self.strategy.kind if self.strategy else ""
        targets = [a for a in atts if not a.fail and not a.hit and a.state == "final"]
        if kind == "sybil_jurors" and i == 1 + r % (len(self.solvers) - 1):
            targets = targets[:1]
        elif kind != "preempt" or i != 1:
            targets = []
        for a in targets:
            self.dispute(r, (i, a.slot), a, CHALLENGER, False, solver)

    def dispute(self, r: int, label: tuple, a: Attestation, challenger: str, truth: bool, solver: str) -> None:
        t = self.terms
        won, signers = self.decide(
            r, label, truth, True if challenger == CHALLENGER else None, (challenger, a.verifier, solver)
        )
        if won is None:
            fee = compute_unresolved_fee(t)
            self._book(challenger, -fee, caught=True)
            self._book(POOL, fee)
            a.state = "voided"
            return
        a.state, a.challenger = ("overturned", challenger) if won else ("upheld", "")
        self.pay_verdict(
            compute_dispute_total(t, won), signers, *((challenger, a.verifier) if won else (a.verifier, challenger))
        )

    def pay_verdict(self, total: int, signers: list[str], winner: str, loser: str) -> None:
        payout = compute_dispute_payout(total, len(signers))
        self._book(loser, -total, caught=True)
        self._book(winner, payout.to_winner)
        for juror in signers:
            self._book(juror, payout.per_juror)
        self._book(POOL, payout.to_pool)
        self.votes += signers

    def decide(
        self, r: int, label: tuple, truth: bool, coalition_side: bool | None, parties
    ) -> tuple[bool | None, list[str]]:
        """The verdict (True: the challenger wins; None: unresolved after every appeal) and its signers."""
        t = self.terms
        for appeals in range(MAX_APPEALS + 1):
            size = get_appeal_jury_size(t.jury_size, appeals)
            jury = draw_jury(self.registry, self._h("jury", r, label, appeals), size, parties, appeals)
            sides: dict[bool, list[str]] = {True: [], False: []}
            for seat in jury.eligible_seats:
                juror, role = jury.pool[seat].account, self.roles.get(jury.pool[seat].account, "honest")
                if role == "silent":
                    continue
                if role == "coalition" and coalition_side is not None:
                    sides[coalition_side].append(juror)
                    continue
                self._book(juror, -self.segment_cost)  # an honest juror replays the disputed segment
                self.steps["jury"] += t.steps_per_segment
                sides[truth].append(juror)
            if jury.can_decide:
                for outcome in (truth, not truth):
                    if len(sides[outcome]) >= jury.quorum:
                        return outcome, sides[outcome]
        return None, []


def get_roles(preset: Preset, strategy: Strategy) -> dict[str, str]:
    """Who deviates: solver 0, verifier 0, juror 0, or a coalition (accomplice verifiers, jurors and a challenger)."""
    pop, kind = preset.population, strategy.kind
    solver, verifier = _address("solver", 0), _address("verifier", 0)
    if kind in ("lazy", "fail_all"):
        return {verifier: kind}
    if kind == "silent_juror":
        return {_address("juror", 0): "silent"}
    if kind in ("collude", "plant_tipoff"):
        members = 1 if kind == "plant_tipoff" else get_coalition_size(strategy.share, pop.verifiers)
        return {solver: kind, **{_address("verifier", i): "accomplice" for i in range(members)}}
    if kind in ("preempt", "sybil_jurors"):
        jurors = {_address("juror", i): "coalition" for i in range(get_coalition_size(strategy.share, pop.jurors))}
        return {CHALLENGER: "challenger", **({solver: "rival"} if kind == "preempt" else {}), **jurors}
    return {solver: kind}


# ---------------------------------------------------------------------------------------
# Analysis: break-even stakes, honest profits, the deterrence frontier

STAKE_FIELDS = {
    "fake": "solver_min_stake", "withhold": "solver_min_stake", "copy_root": "solver_min_stake",
    "collude": "solver_min_stake", "forge_plant": "solver_min_stake", "lazy": "verifier_min_stake",
    "fail_all": "verifier_min_stake", "preempt": "challenge_bond", "sybil_jurors": "challenge_bond",
}  # fmt: skip
"""The stake each strategy puts at risk (a verifier's plant penalty scales with its stake); others risk none."""


def with_stake(terms: EconomicTerms, field: str, value: int) -> EconomicTerms:
    if field != "verifier_min_stake":
        return replace(terms, **{field: value})
    penalty = terms.plant.penalty * value // terms.verifier_min_stake if terms.verifier_min_stake else 0
    return replace(terms, verifier_min_stake=value, plant=replace(terms.plant, penalty=penalty))


def compute_break_even_stake(strategy: Strategy, preset: Preset) -> tuple[str, int | None]:
    """The smallest stake (wei, of STAKE_FIELDS[kind]) at which the expected profit is <= 0, by bisection (profit
    falls with the stake): ("pays_below", stake), ("never_pays", None) when it does not pay even with no stake,
    ("always_pays", None) when no stake stops it."""
    field = STAKE_FIELDS.get(strategy.kind)

    def profit(stake: int | None) -> Fraction:
        terms = preset.terms if stake is None or field is None else with_stake(preset.terms, field, stake)
        return compute_expectation(strategy, terms, preset.population, preset.valuation).profit

    if field is None or profit(0) <= 0:
        return ("always_pays" if field is None and profit(None) > 0 else "never_pays"), None
    low, high = 0, max(getattr(preset.terms, field), ETH)
    while profit(high) > 0:
        low, high = high, high * 2
        if high > 2**128:
            return "always_pays", None
    while high - low > max(1, high // 10**9):
        middle = (low + high) // 2
        low, high = (middle, high) if profit(middle) > 0 else (low, middle)
    return "pays_below", high


def get_honest_profits(preset: Preset) -> dict[str, float]:
    """Absolute profit per round of each honest role (ETH): does an honest party take part at all? A whistleblower is
    paid only for finding a wrong attestation, so with everyone honest it only spends its re-checks."""
    t, pop = preset.terms, preset.population
    r, rho = get_rewards(t, pop, preset.valuation), t.plant_rate
    silent = compute_expectation(Strategy("", "silent_juror"), t, pop, preset.valuation).profit
    return {
        "solver": _eth(r.solver - r.round_compute),
        "verifier": _eth(r.seats_per_verifier * (r.seat + rho * t.plant.jackpot - r.seat_replay)),
        "whistleblower": _eth(-pop.recheck_fraction * pop.solvers * t.seats * r.seat_replay),
        "juror": _eth(-silent),
    }


def get_best_dishonest(preset: Preset, counted_only: bool = True) -> tuple[Fraction, str]:
    rows = [s for s in STRATEGIES if s.dishonest and (not s.excluded or not counted_only)]
    profits = [(compute_expectation(s, preset.terms, preset.population, preset.valuation).profit, s.name) for s in rows]
    return max(profits)


def sweep_frontier(base: Preset, quick: bool) -> list[dict[str, Any]]:
    """Verification compute against the best counted cheat, over seats, samples, k, F and the plant rate (H fixed)."""
    grid = [
        (k, s, v, f, rate)
        for k in ((10, 25) if quick else (5, 10, 25, 50))
        for s in (1, 2, 4)
        for v in (1, 2, 3)
        for f in (Fraction(0), Fraction(1, 10), Fraction(1, 4), Fraction(1, 2), Fraction(1))
        for rate in ((0, 100) if quick else (0, 100, 500))
    ]
    points = []
    for k, s, v, f, rate in grid:
        terms = replace(
            base.terms, steps_per_segment=k, samples=s, seats=v, plant=replace(base.terms.plant, rate_bps=rate)
        )
        preset = replace(base, terms=terms, population=replace(base.population, recheck_fraction=f))
        best, name = get_best_dishonest(preset)
        ratio = compute_verification_cost_ratio(terms, preset.population)
        solver = get_rewards(terms, preset.population, preset.valuation).solver
        points.append({"k": k, "samples": s, "seats": v, "recheck_fraction": float(f), "plant_rate_bps": rate,
                       "ratio": float(ratio), "best": float(best / solver), "strategy": name})  # fmt: skip
    return points


def get_production_target(points: list[dict[str, Any]], preset: Preset, limit: float = 0.10) -> dict[str, Any]:
    """Whether a verification cost of at most `limit` deters every counted strategy, and which one forbids less."""
    ratio = float(compute_verification_cost_ratio(preset.terms, preset.population))
    best, name = get_best_dishonest(preset)
    deterring = sorted((p for p in points if p["best"] < 0), key=lambda p: p["ratio"])
    cheapest = deterring[0] if deterring else None
    below = [p for p in points if cheapest is None or p["ratio"] < cheapest["ratio"]]
    binding = Counter(p["strategy"] for p in below).most_common(1)
    return {
        "max_ratio": limit,
        "preset_ratio": ratio,
        "preset_best_dishonest_profit": _eth(best),
        "preset_best_dishonest_strategy": name,
        "reached": ratio <= limit and best < 0,
        "cheapest_deterring_config": cheapest,
        "binding_strategy_below_it": binding[0][0] if binding else None,
    }


# ---------------------------------------------------------------------------------------
# Presets, simulation jobs, rows


def build_presets(compute_share: Fraction, round_value: dict[str, int]) -> dict[str, Preset]:
    """The demos' rules at the demos' H and k, and the production-shaped preset of protocol.economics."""
    from devnet.runs import PRODUCTION_INNER_STEPS, PRODUCTION_RULES, PRODUCTION_STEPS_PER_SEGMENT
    from gradledger.adversarial_demo import ADVERSARIAL_RULES
    from gradledger.demo import DEMO_INNER_STEPS, DEMO_RULES

    terms = {
        "demo": (EconomicTerms.from_rules(DEMO_RULES, DEMO_INNER_STEPS, 5), DEMO_POPULATION),
        "adversarial-demo": (EconomicTerms.from_rules(ADVERSARIAL_RULES, DEMO_INNER_STEPS, 5), DEMO_POPULATION),
        "production": (
            EconomicTerms.from_rules(PRODUCTION_RULES, PRODUCTION_INNER_STEPS, PRODUCTION_STEPS_PER_SEGMENT),
            PRODUCTION_POPULATION,
        ),
    }
    return {
        name: Preset(name, t, pop, build_valuation(t, pop, round_value[name], compute_share))
        for name, (t, pop) in terms.items()
    }


def run_job(preset: Preset, index: int | None, rounds: int, seed: int) -> dict[str, Any]:
    """Play the preset with STRATEGIES[index] deviating, or (index None) with everyone honest, recording the net wei
    per round of every strategy's players and of the verifiers outside them."""
    strategy = None if index is None else STRATEGIES[index]
    indices = list(range(len(STRATEGIES))) if index is None else [index]
    groups: dict[str, frozenset[str]] = {}
    for i in indices:
        players = frozenset(get_roles(preset, STRATEGIES[i]))
        groups[f"{i}"] = players
        groups[f"{i}-others"] = frozenset(_address("verifier", j) for j in range(preset.population.verifiers)) - players
    simulation = Simulation(preset, strategy, rounds, seed)
    series = simulation.play(groups)
    return {"series": series, "caught": simulation.caught, "steps": dict(simulation.steps),
            "plant_pool": simulation.ledger[PLANT_POOL]}  # fmt: skip


def build_row(strategy: Strategy, index: int, preset: Preset, runs: dict) -> dict[str, Any]:
    t, pop, val = preset.terms, preset.population, preset.valuation
    solver = get_rewards(t, pop, val).solver
    expectation = compute_expectation(strategy, t, pop, val)
    status, stake = compute_break_even_stake(strategy, preset)
    field = STAKE_FIELDS.get(strategy.kind)
    row: dict[str, Any] = {
        "name": strategy.name,
        "kind": strategy.kind,
        "dishonest": strategy.dishonest,
        "counted": strategy.dishonest and not strategy.excluded,
        "excluded": strategy.excluded or None,
        "expected_profit_per_round": _eth(expectation.profit),
        "profit_in_round_rewards": float(expectation.profit / solver),
        "caught_per_round": float(expectation.caught),
        "harm_to_honest_per_round": _eth(expectation.harm),
        "stake_field": field,
        "stake_ratio_now": float(getattr(t, field) / solver) if field else None,
        "break_even_stake_ratio": float(stake / solver) if stake is not None else None,
        "break_even": status,
    }
    if index in runs:
        rounds = len(runs[index]["series"][f"{index}"])
        base, dev = runs[None]["series"], runs[index]["series"]
        diffs = [d - b for d, b in zip(dev[f"{index}"], base[f"{index}"], strict=True)]
        others = [b - d for d, b in zip(dev[f"{index}-others"], base[f"{index}-others"], strict=True)]
        row["simulated_profit_per_round"] = statistics.fmean(diffs) / ETH
        row["simulated_stderr"] = statistics.stdev(diffs) / math.sqrt(rounds) / ETH
        row["simulated_caught_per_round"] = runs[index]["caught"] / rounds
        row["simulated_harm_to_honest_verifiers_per_round"] = statistics.fmean(others) / ETH
        row["simulated_rounds"] = rounds
    return row


def analyse_preset(preset: Preset, runs: dict) -> dict[str, Any]:
    t, pop, val = preset.terms, preset.population, preset.valuation
    r = get_rewards(t, pop, val)
    rows = [build_row(s, i, preset, runs) for i, s in enumerate(STRATEGIES)]
    counted = [row for row in rows if row["counted"]]
    best = max(counted, key=lambda row: row["expected_profit_per_round"])
    worst_open = max((row for row in rows if row["dishonest"]), key=lambda row: row["expected_profit_per_round"])
    n, rho, f = t.num_segments, t.plant_rate, pop.recheck_fraction
    steps = runs[None]["steps"] if None in runs else {}
    return {
        "terms": {k: (v.__dict__ if k == "plant" else v) for k, v in t.__dict__.items()},
        "population": {**pop.__dict__, "recheck_fraction": float(f)},
        "valuation_eth": {"round_value": val.round_value / ETH, "compute_cost_per_round": val.compute_cost / ETH},
        "rewards_eth": {k: _eth(v) if k != "seats_per_verifier" else float(v) for k, v in r.__dict__.items()},
        "honest_profits_per_round": get_honest_profits(preset),
        "strategies": rows,
        "best_dishonest_profit": best["expected_profit_per_round"],
        "best_dishonest_strategy": best["name"],
        "best_dishonest_profit_including_excluded": worst_open["expected_profit_per_round"],
        "best_dishonest_strategy_including_excluded": worst_open["name"],
        "verification_cost_ratio": float(compute_verification_cost_ratio(t, pop)),
        "planted_training_share": float(rho),
        "simulated_verification_cost_ratio": sum(steps.get(k, 0) for k in ("seat", "whistle", "plant")) / steps["train"]
        if steps
        else None,
        "simulated_jury_cost_ratio": steps.get("jury", 0) / steps["train"] if steps else None,
        "detection": {
            "one_faked_segment": float(compute_detection_probability(Fraction(1, n), t.samples, t.seats)),
            **{
                f"f={x}": float(compute_detection_probability(Fraction(x), t.samples, t.seats))
                for x in ("0.05", "0.2", "0.5", "1")
            },
            "lazy_pass_per_seat": float(rho),
            "accomplice_pass_on_faked_segment": float(f),
        },
        "constraints": {
            "fail_everything_loses": f * (1 - rho) * (t.attestation_bond + t.verifier_min_stake)
            > rho * t.plant.jackpot,
            "penalty_at_most_verifier_stake": t.plant.penalty <= t.verifier_min_stake,
        },
        "plant_pool_per_round_eth": _eth(rho * pop.solvers * t.seats * t.plant.jackpot),
        "plant_pool_rounds": float(t.plant_pool / (rho * pop.solvers * t.seats * t.plant.jackpot))
        if rho and t.plant.jackpot
        else None,
    }


# ---------------------------------------------------------------------------------------
# Plot, main


def write_plot(points: list[dict[str, Any]], presets: dict[str, dict[str, Any]], path: Path) -> None:
    """Left: the deterrence frontier (verification compute against the best counted cheat, in round rewards R_s) over
    the production grid. Right: every strategy's expected profit per preset, with the simulated means."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (frontier, table) = plt.subplots(1, 2, figsize=(17, 7.5), gridspec_kw={"width_ratios": [1, 1.25]})
    for f in sorted({p["recheck_fraction"] for p in points}):
        chosen = [p for p in points if p["recheck_fraction"] == f]
        frontier.scatter([p["ratio"] for p in chosen], [p["best"] for p in chosen], s=10, alpha=0.6, label=f"F={f:g}")
    for name, preset in presets.items():
        solver = preset["rewards_eth"]["solver"]
        frontier.scatter([preset["verification_cost_ratio"]], [preset["best_dishonest_profit"] / solver], marker="*",
                         s=220, edgecolor="black", label=f"preset: {name}", zorder=3)  # fmt: skip
    frontier.axhline(0, color="black", linewidth=0.8)
    frontier.axvline(0.10, color="grey", linestyle="--", linewidth=0.8, label="10% of training")
    frontier.set_xscale("log")
    frontier.set_yscale("symlog", linthresh=0.01)
    frontier.set_xlabel("verification compute / training compute (seats + whistleblower re-checks)")
    frontier.set_ylabel("best dishonest expected profit per round, in R_s (< 0: nothing pays)")
    frontier.set_title("deterrence frontier (production H=500; k, s, seats, F, plant rate varied)", fontsize=10)
    frontier.legend(fontsize=7)
    frontier.grid(alpha=0.3)
    names = [row["name"] for row in next(iter(presets.values()))["strategies"]]
    for offset, (name, preset) in zip((-0.25, 0, 0.25), presets.items(), strict=False):
        ys = [i + offset for i in range(len(names))]
        table.barh(ys, [row["profit_in_round_rewards"] for row in preset["strategies"]], height=0.25, label=name)
        solver = preset["rewards_eth"]["solver"]
        simulated = [
            (row.get("simulated_profit_per_round"), y) for row, y in zip(preset["strategies"], ys, strict=True)
        ]
        table.scatter([v / solver for v, _ in simulated if v is not None], [y for v, y in simulated if v is not None],
                      s=8, color="black", zorder=3)  # fmt: skip
    table.axvline(0, color="black", linewidth=0.8)
    table.set_xscale("symlog", linthresh=0.01)
    table.set_yticks(range(len(names)))
    table.set_yticklabels(names, fontsize=7)
    table.invert_yaxis()
    table.set_xlabel("expected profit per round relative to honest play, in R_s (bars: analytic; dots: simulated)")
    table.legend(fontsize=8)
    table.grid(alpha=0.3, axis="x")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".tmp.png")
    figure.savefig(tmp, dpi=100)
    plt.close(figure)
    tmp.replace(path)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer rounds and a smaller frontier grid (< 2 min)")
    parser.add_argument("--rounds", type=int, help="rounds per play (default: per preset, see FULL / QUICK)")
    parser.add_argument("--seed", type=int, default=17, help="seed of every random input")
    parser.add_argument("--compute-share", type=Fraction, default=COMPUTE_SHARE, help="C / R_s (default 1/2)")
    parser.add_argument("--demo-round-value", type=Fraction, default=Fraction(DEMO_ROUND_VALUE, ETH),
                        help="ETH value of all shares of a demo round (default 1)")  # fmt: skip
    parser.add_argument("--production-round-value", type=Fraction, default=Fraction(PRODUCTION_ROUND_VALUE, ETH),
                        help="ETH value of all shares of a production round (default 10)")  # fmt: skip
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--out", type=Path, default=Path("bench/out"), help="directory for JSON and PNG")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    started = time.perf_counter()
    values = {"demo": args.demo_round_value, "adversarial-demo": args.demo_round_value,
              "production": args.production_round_value}  # fmt: skip
    presets = build_presets(args.compute_share, {k: int(v * ETH) for k, v in values.items()})
    rounds = {name: args.rounds or (QUICK if args.quick else FULL)[name] for name in presets}
    jobs = [(name, index) for name in presets for index in [None, *range(len(STRATEGIES))]]
    log(f"{len(jobs)} plays of {rounds} rounds on {args.workers} workers")
    runs: dict[str, dict] = {name: {} for name in presets}
    with ProcessPoolExecutor(args.workers) as pool:
        futures = {job: pool.submit(run_job, presets[job[0]], job[1], rounds[job[0]], args.seed) for job in jobs}
        points = sweep_frontier(presets["production"], args.quick)
        for (name, index), future in futures.items():
            runs[name][index] = future.result()
    log(f"simulated in {time.perf_counter() - started:.0f} s")
    analysed = {name: analyse_preset(preset, runs[name]) for name, preset in presets.items()}
    summary = {
        "units": {
            "expected_profit_per_round": "ETH per round, relative to the same party playing honestly (analytic, "
            "protocol.economics.compute_expectation); simulated_profit_per_round: the Monte-Carlo mean, same units",
            "profit_in_round_rewards": "expected_profit_per_round / R_s, a solver's round reward at the preset's value",
            "caught_per_round": "expected slashes, forfeits, lost bonds and unresolved fees of the player per round",
            "break_even_stake_ratio": "stake_field at which the profit reaches 0, / R_s; null: see break_even "
            "(never_pays: not even with no stake; always_pays: no stake stops it)",
            "verification_cost_ratio": "inner steps replayed by seats and whistleblowers / inner steps trained",
        },
        "strategies": analysed["demo"]["strategies"],
        "best_dishonest_profit": max(p["best_dishonest_profit"] for p in analysed.values()),
        "best_dishonest_profit_by_preset": {k: p["best_dishonest_profit"] for k, p in analysed.items()},
        "best_dishonest_strategy_by_preset": {k: p["best_dishonest_strategy"] for k, p in analysed.items()},
        "best_dishonest_profit_including_excluded": {
            k: [p["best_dishonest_profit_including_excluded"], p["best_dishonest_strategy_including_excluded"]]
            for k, p in analysed.items()
        },
        "verification_cost_ratio": {k: p["verification_cost_ratio"] for k, p in analysed.items()},
        "detection": {k: p["detection"] for k, p in analysed.items()},
        "planted_fault_rate": analysed["demo"]["planted_training_share"],
        "planted_fault_rate_by_preset": {k: p["planted_training_share"] for k, p in analysed.items()},
        "production_target": get_production_target(points, presets["production"]),
        "compute_share": float(args.compute_share),
        "rounds": rounds,
        "seed": args.seed,
    }
    summary["seconds"] = round(time.perf_counter() - started, 1)
    stem = "economics-quick" if args.quick else "economics"
    args.out.mkdir(parents=True, exist_ok=True)
    detail = {"summary": summary, "presets": analysed, "frontier": points}
    (args.out / f"{stem}.json").write_text(json.dumps(_finite(detail), indent=1) + "\n")
    write_plot(points, analysed, args.out / f"{stem}.png")
    log(f"wrote {args.out / stem}.json and .png")
    print(json.dumps(_finite(summary)))
    return summary


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _eth(wei: Fraction | int) -> float:
    return float(Fraction(wei) / ETH)


def _finite(value: Any) -> Any:
    """Strict JSON: infinities and NaN become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Fraction):
        return float(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


if __name__ == "__main__":
    main()
