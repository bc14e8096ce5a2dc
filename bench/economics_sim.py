"""The agent-based play behind bench/economics.py: many rounds of a preset with the protocol's own draws.

Every draw is the protocol's own code -- plant decisions from each solver's secret chain and the previous round's seed
base (protocol.planting), seeds, seats and samples (protocol.sampling), whistleblower selection
(whistleblower.decide.is_selected), juries (protocol.jury.draw_jury, get_appeal_jury_size), acceptance
(protocol.types.is_tally_accepted with get_needed_seats) -- and every transfer is a payoff of protocol.economics
(dispute payouts, fault rewards, plant forfeits and jackpots, abstention fees, unresolved fees), plus share value and
compute cost. Random inputs are hashes of (seed, purpose, round, ...), so a play with everyone honest and one with a
strategy's players deviating see the same blocks. Each simulated round is a round of a run of `terms.rounds` rounds
drawn at random: one of its first `unplantable_rounds` (nobody planted, publicly; none for a run whose plant terms
were set before its start) with probability u. A seed-block producer's re-rolls follow the terms' seed rule
(`EconomicTerms.get_seed_draws`: at most two seeds under the protocol's RANDAO seed).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache

from protocol.constants import BPS_DENOMINATOR, MAX_APPEALS, get_appeal_jury_size
from protocol.economics import (
    EconomicTerms,
    Population,
    Valuation,
    compute_dispute_payout,
    compute_dispute_total,
    compute_fault_reward,
    compute_planted_pass_loss,
    compute_unresolved_fee,
    get_coalition_size,
)
from protocol.economics_strategies import Strategy, get_faking
from protocol.hashing import ZERO_HASH, Hash32, keccak256
from protocol.jury import JurorEntry, draw_jury
from protocol.merkle import SegmentLeaf, compute_leaf_hash
from protocol.planting import compute_chain_seed, compute_secret_chain, get_round_secret, is_round_planted
from protocol.sampling import (
    compute_sampled_segments,
    compute_sampling_seed,
    compute_seat_seed,
    compute_seat_verifier_indices,
)  # fmt: skip
from protocol.types import get_needed_seats, is_tally_accepted
from whistleblower.decide import is_selected

RUN_ID = 1
ZERO = ZERO_HASH


def _address(tag: str, index: int) -> str:
    return "0x" + keccak256(f"{tag}{index}".encode())[:20].hex()


POOL, PLANT_POOL, WHISTLEBLOWER, PLANT_CHECKER, CHALLENGER = (
    _address(t, 0) for t in ("pool", "plant-pool", "wb", "plant-checker", "challenger")
)
BACKGROUND = tuple(_address("background", i) for i in range(3))  # challenger, attester, solver of background disputes
FAKING = ("fake", "collude", "skip_partner", "reroll_unopened")
"""Solver roles that fake in every unplanted round (reroll_seed only in rounds whose seed block it produces)."""


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
    action: str  # pass | fail | abstain
    hit: bool  # a sampled segment is wrong (the seat's full replay would fail)
    named: int  # the segment a fail names (the draw it found wrong, or any draw for a fail that did not replay)
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
        self.chains = [_chain(self._h("key", i), self.terms.rounds) for i in range(self.pop.solvers)]
        self.segment_cost = self.value.compute_cost * self.terms.steps_per_segment // self.terms.inner_steps
        self.needed = get_needed_seats(self.terms.seats, len(self.verifiers))
        self.works: dict[tuple[int, int], tuple[bool, Fraction, frozenset[int], bool]] = {}
        self.votes: list[str] = []
        self.block = b""

    def _h(self, *parts: object) -> bytes:
        return keccak256(repr((self.seed, *parts)).encode())

    def _draw(self, *parts: object) -> Fraction:
        return Fraction(int.from_bytes(self._h(*parts), "big") % 10**9, 10**9)

    def _book(self, account: str, amount: int, caught: bool = False) -> None:
        self.ledger[account] += amount
        if caught and account in self.roles:
            self.caught += 1

    def play(self, groups: dict[str, frozenset[str]]) -> dict[str, list[int]]:
        """Per round, each group's net wei."""
        series: dict[str, list[int]] = {name: [] for name in groups}
        for t in range(self.rounds):
            before = {name: sum(self.ledger[a] for a in members) for name, members in groups.items()}
            self.play_round(t)
            self.works.clear()
            for name, members in groups.items():
                series[name].append(sum(self.ledger[a] for a in members) - before[name])
        return series

    # -- a round ---------------------------------------------------------------------------------------------------

    def get_run_round(self, t: int) -> int:
        """The run round simulated round t stands for: < unplantable_rounds with probability u, else a later one."""
        t_ = self.terms
        early = min(t_.unplantable_rounds, t_.rounds)
        pick = int.from_bytes(self._h("run-round", t), "big")
        return pick % early if pick % t_.rounds < early else early + pick % (t_.rounds - early)

    def play_round(self, t: int) -> None:
        terms = self.terms
        self.votes = []
        self.run_round = self.get_run_round(t)
        self.block = self.choose_block(t)
        paid, standing = [], []
        for i, solver in enumerate(self.solvers):
            accepted, attesters = self.play_commitment(t, i, solver)
            paid += [solver] if accepted else []
            standing += attesters
        for d in range(self.pop.disputes_per_round):  # disputes of the background: a lazy pass on bad work
            won, signers = self.decide(t, ("background", d), True, None, BACKGROUND)
            if signers:
                self.pay_verdict(compute_dispute_total(terms, bool(won)), signers, *BACKGROUND[:2])
        value = self.value.round_value
        for bps, payees in (
            (terms.run.solver_share_bps, paid),
            (terms.run.verifier_share_bps, standing),
            (terms.run.juror_share_bps, self.votes),
        ):
            for payee in payees:
                self._book(payee, value * bps // BPS_DENOMINATOR // len(payees))

    def work_of(self, t: int, i: int) -> tuple[bool, Fraction, frozenset[int], bool]:
        """(planted, share of the round trained, wrong segments, openable) of solver i's commitment this round. On a
        planted round the wrong segments are those that are not the planted training (what a plant check finds
        false); every segment of a planted round fails a seat's replay unless the solver trained it honestly."""
        if (t, i) in self.works:
            return self.works[(t, i)]
        terms, solver, r = self.terms, self.solvers[i], self.run_round
        n, role = terms.num_segments, self.roles.get(self.solvers[i], "honest")
        planted = r >= terms.unplantable_rounds and _is_planted(
            get_round_secret(self.chains[i], r), r, solver, self._h("seed-base", t - 1), terms.plant.rate_bps
        )
        everything = frozenset(range(n))
        work: tuple[Fraction, frozenset[int], bool] = (Fraction(1), frozenset(), True)
        if role == "withhold":
            work = (Fraction(0), everything, False)
        elif role == "copy_root":  # the leaves of the copied root name their own (round, solver): nothing opens
            victim = self.solvers[(i + 1) % len(self.solvers)]
            leaf = SegmentLeaf(RUN_ID, r, victim, 0, ZERO, ZERO, ZERO, 1)
            same = compute_leaf_hash(leaf) == compute_leaf_hash(replace(leaf, round=r + 1, solver=solver))
            work = (Fraction(0), everything, same)
        elif planted and role == "grief_plant":
            work = (Fraction(1), everything, True)
        elif planted == (role == "forge_plant") and (
            role in FAKING or role == "forge_plant" or (role == "reroll_seed" and self.produces(t))
        ):
            rng, strategy = random.Random(self._h("fake", t)), self.strategy
            faking = get_faking(strategy, n) if strategy else ((0, Fraction(1)),)
            faked = rng.choices([k for k, _ in faking], [float(w) for _, w in faking])[0]
            work = (Fraction(n - faked, n), frozenset(rng.sample(range(n), faked)), True)
        elif role == "poison" and not planted:
            work = (Fraction(1), frozenset({random.Random(self._h("poison", t)).randrange(n)}), True)
        self.works[(t, i)] = (planted, *work)
        return self.works[(t, i)]

    def produces(self, t: int) -> bool:
        """Whether the re-rolling solver produces this round's seed block (a share of the seed blocks)."""
        return self.strategy is not None and self._draw("producer", t) < self.strategy.share

    def get_seats(self, block: bytes, t: int, solver: str) -> list[tuple[int, str, tuple[int, ...]]]:
        """(slot, verifier, sampled segments) of each seat of a commitment."""
        terms = self.terms
        drawn = _draw_seats(block, t, solver, terms.seats, len(self.verifiers), terms.num_segments, terms.samples)
        return [(slot, self.verifiers[index], samples) for slot, index, samples in drawn]

    def choose_block(self, t: int) -> bytes:
        """The round's seed value (the seed block's RANDAO value, or its hash under a blockhash seed): a re-rolling
        producer (reroll_seed) that faked tries `terms.get_seed_draws(draws)` candidates -- every block it grinds
        under a blockhash seed, its block or none (withheld) under RANDAO -- and keeps the first whose draws miss
        every faked segment of its commitment (the first one if none does)."""
        first = self._h("block", t)
        if self.roles.get(self.solvers[0]) != "reroll_seed" or self.strategy is None:
            return first
        planted, _, wrong, _ = self.work_of(t, 0)
        if planted or not wrong:
            return first
        for g in range(self.terms.get_seed_draws(self.strategy.draws)):
            block = first if g == 0 else self._h("block", t, g)
            if not any(x in wrong for _, _, samples in self.get_seats(block, t, self.solvers[0]) for x in samples):
                return block
        return first

    # -- a commitment ----------------------------------------------------------------------------------------------

    def play_commitment(self, t: int, i: int, solver: str) -> tuple[bool, list[str]]:
        """Train, commit, open, attest, reveal or dispute one commitment; returns (paid, standing attesters)."""
        terms = self.terms
        planted, trained, wrong, openable = self.work_of(t, i)
        role = self.roles.get(solver, "honest")
        self._book(solver, -int(trained * self.value.compute_cost))
        self.steps["train"] += terms.inner_steps
        seats = self.get_seats(self.block, t, solver)
        replay_fails = wrong if not planted else frozenset() if role == "grief_plant" else None

        def is_wrong(segment: int) -> bool:
            return replay_fails is None or segment in replay_fails

        hits = [any(is_wrong(x) for x in samples) for _, _, samples in seats]
        if not openable or (role == "reroll_unopened" and not planted and any(hits)):  # reported unopened: slashed
            self._book(solver, -terms.run.solver_min_stake, caught=True)
            self._book(POOL, terms.run.solver_min_stake)
            return False, []
        atts = []
        for (slot, verifier, samples), hit in zip(seats, hits, strict=True):
            action, replayed, named = self.attest(verifier, solver, planted, samples, is_wrong)
            self._book(verifier, -replayed * self.segment_cost)
            self.steps["seat"] += replayed * terms.steps_per_segment
            if action == "abstain":  # R4: reported (the solver reports its own), the bond to the pool
                self._book(verifier, -terms.run.attestation_bond, caught=True)
                self._book(POOL, terms.run.attestation_bond)
            atts.append(Attestation(slot, verifier, action, hit, named))
        attested = [a for a in atts if a.action != "abstain"]
        if planted:  # the reveal: passes forfeit bond and penalty to the plant pool, fails earn the jackpot
            for a in attested:
                amount = terms.plant.jackpot if a.action == "fail" else -compute_planted_pass_loss(terms)
                self._book(a.verifier, amount, caught=a.action == "pass")
                self._book(PLANT_POOL, -amount)
            true = not self.pop.seat_plant_check or self.check_plant_seats(t, i, solver, seats, attested, wrong)
            opened = [x for _, _, s in seats for x in s]
            paid = true and self.check_plant(t, i, solver, opened, wrong) and bool(attested)
            return paid, [a.verifier for a in attested if a.action == "fail"]
        self.challenge(t, i, solver, atts, wrong)
        provers = [a.verifier for a in atts if a.action == "fail" and a.state in ("final", "upheld")]
        provers += [a.challenger for a in atts if a.action == "pass" and a.state == "overturned"]
        if provers:
            self._book(solver, -terms.run.solver_min_stake, caught=True)
            per_prover, to_pool = compute_fault_reward(terms.run.solver_min_stake, len(provers))
            for prover in provers:
                self._book(prover, per_prover)
            self._book(POOL, to_pool)
        passes = sum(a.action == "pass" and a.state in ("final", "upheld") for a in atts)
        faults = sum(a.action == "fail" and a.state != "overturned" for a in atts)
        faults += sum(a.action == "pass" and a.state == "overturned" for a in atts)
        passes += sum(a.action == "fail" and a.state == "overturned" for a in atts)  # cleared fails count as passes
        accepted = is_tally_accepted(passes, faults, self.needed)
        if accepted and role == "poison":  # the poisoned Δ enters θ: worth V to the cheater outside the run
            self._book(solver, self.value.round_value)
        return accepted, [a.verifier for a in attested if a.state in ("final", "upheld")]

    def attest(
        self, verifier: str, solver: str, planted: bool, samples: tuple[int, ...], is_wrong
    ) -> tuple[str, int, int]:
        """(action, draws replayed, named segment) of a seat."""
        role, partner = self.roles.get(verifier, "honest"), self.roles.get(solver, "")
        if role == "lazy" or (role == "lazy_early" and self.run_round < self.terms.unplantable_rounds):
            return "pass", 0, samples[0]
        if role == "partial":
            return ("fail" if is_wrong(samples[0]) else "pass"), 1, samples[0]
        if role == "fail_all":
            return "fail", 0, samples[0]
        if (role == "griefer" and partner != "partner") or (role == "skipper" and partner == "skip_partner"):
            return "abstain", 0, samples[0]
        if role == "accomplice" and partner in ("collude", "plant_tipoff") and (planted or partner == "collude"):
            return ("fail" if planted else "pass"), 0, samples[0]  # told the plant; passes unplanted work unseen
        wrong = [x for x in samples if is_wrong(x)]
        return ("fail", len(samples), wrong[0]) if wrong else ("pass", len(samples), samples[0])

    def check_plant_seats(
        self, t: int, i: int, solver: str, seats: list, attested: list[Attestation], wrong: frozenset[int]
    ) -> bool:
        """Seat holders check the plant (node/plant_checks.py `PlantDefence`): every honest verifier that attested a
        seat of the planted commitment replays its seat's draws with the revealed secret, and the first whose draws
        meet a segment that is not the planted training disputes the plant (KIND_PLANT); a jury that finds it false
        slashes the solver's solverMinStake and leaves it unpaid. True: the plant stands."""
        terms, drawn = self.terms, {slot: samples for slot, _, samples in seats}
        for a in attested:
            if self.roles.get(a.verifier, "honest") != "honest":
                continue  # a deviant verifier runs no honest node
            samples = drawn[a.slot]
            self._book(a.verifier, -len(samples) * self.segment_cost)
            self.steps["seat"] += len(samples) * terms.steps_per_segment
            if not any(x in wrong for x in samples):
                continue
            won, signers = self.decide(t, ("plant-seat", i), True, None, (a.verifier, solver, solver))
            if won is None:
                fee = compute_unresolved_fee(terms)
                self._book(a.verifier, -fee)
                self._book(POOL, fee)
                return True
            self.pay_verdict(terms.run.solver_min_stake, signers, a.verifier, solver)
            return False
        return True

    def check_plant(self, t: int, i: int, solver: str, opened: list[int], wrong: frozenset[int]) -> bool:
        """A whistleblower replays one opened draw of a planted commitment with the revealed secret (picked from the
        reveal's block, as whistleblower.decide.choose_plant_check) and disputes a false plant (KIND_PLANT): a jury
        that finds it false slashes the solver's solverMinStake (the dispute total) and leaves it unpaid. Paid?"""
        terms, draw = self.terms, int.from_bytes(self._h("plant-check", t, i), "big")
        if Fraction(draw % 10**9, 10**9) >= self.pop.plant_check:
            return True
        self._book(PLANT_CHECKER, -self.segment_cost)
        self.steps["plant"] += terms.steps_per_segment
        if opened[draw % len(opened)] not in wrong:
            return True
        won, signers = self.decide(t, ("plant", i), True, None, (PLANT_CHECKER, solver, solver))
        if won is None:
            fee = compute_unresolved_fee(terms)
            self._book(PLANT_CHECKER, -fee)
            self._book(POOL, fee)
            return True
        self.pay_verdict(terms.run.solver_min_stake, signers, PLANT_CHECKER, solver)
        return False

    def challenge(self, t: int, i: int, solver: str, atts: list[Attestation], wrong: frozenset[int]) -> None:
        """R5: whistleblowers re-check a fraction F of the passes; R3: the solver replays the named segment of every
        fail and challenges the ones its replay contradicts; then the strategy's own challenger, if any."""
        terms = self.terms
        for a in atts:
            if a.action == "pass" and is_selected(
                self._h("wb-block", t, i), RUN_ID, t, solver, a.slot, WHISTLEBLOWER, self.pop.recheck_fraction
            ):
                self._book(WHISTLEBLOWER, -terms.samples * self.segment_cost)
                self.steps["whistle"] += terms.samples * terms.steps_per_segment
                if a.hit:
                    self.dispute(t, (i, a.slot), a, WHISTLEBLOWER, True, solver)
        for a in atts:
            if a.action == "fail" and a.state == "final" and a.named not in wrong:  # a cheater knows its fakes
                self._book(solver, -self.segment_cost)
                self.steps["defence"] += terms.steps_per_segment
                self.dispute(t, (i, a.slot), a, solver, True, solver)
        kind = self.strategy.kind if self.strategy else ""
        targets = [a for a in atts if a.action == "pass" and not a.hit and a.state == "final"]
        if kind == "sybil_jurors" and i == 1 + t % (len(self.solvers) - 1):
            targets = targets[:1]
        elif kind != "preempt" or i != 1:
            targets = []
        for a in targets:
            self.dispute(t, (i, a.slot), a, CHALLENGER, False, solver)

    def dispute(self, t: int, label: tuple, a: Attestation, challenger: str, truth: bool, solver: str) -> None:
        terms = self.terms
        side = True if challenger == CHALLENGER else None
        won, signers = self.decide(t, label, truth, side, (challenger, a.verifier, solver))
        if won is None:
            fee = compute_unresolved_fee(terms)
            self._book(challenger, -fee, caught=True)
            self._book(POOL, fee)
            a.state = "voided"
            return
        a.state, a.challenger = ("overturned", challenger) if won else ("upheld", "")
        self.pay_verdict(
            compute_dispute_total(terms, won), signers, *((challenger, a.verifier) if won else (a.verifier, challenger))
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
        self, t: int, label: tuple, truth: bool, coalition_side: bool | None, parties
    ) -> tuple[bool | None, list[str]]:
        """The verdict (True: the challenger wins; None: unresolved after every appeal) and its signers."""
        terms = self.terms
        for appeals in range(MAX_APPEALS + 1):
            size = get_appeal_jury_size(terms.run.jury_size, appeals)
            jury = draw_jury(self.registry, self._h("jury", t, label, appeals), size, parties, appeals)
            sides: dict[bool, list[str]] = {True: [], False: []}
            for seat in jury.eligible_seats:
                juror, role = jury.pool[seat].account, self.roles.get(jury.pool[seat].account, "honest")
                if role == "silent":
                    continue
                if role == "coalition" and coalition_side is not None:
                    sides[coalition_side].append(juror)
                    continue
                self._book(juror, -self.segment_cost)  # an honest juror replays the disputed segment
                self.steps["jury"] += terms.steps_per_segment
                sides[truth].append(juror)
            if jury.can_decide:
                for outcome in (truth, not truth):
                    if len(sides[outcome]) >= jury.quorum:
                        return outcome, sides[outcome]
        return None, []


@cache
def _draw_seats(
    block: bytes, t: int, solver: str, seats: int, verifiers: int, segments: int, samples: int
) -> tuple[tuple[int, int, tuple[int, ...]], ...]:
    """(slot, verifier index, sampled segments) of each seat: the same in every play of a preset, so computed once
    per worker process."""
    seed = compute_sampling_seed(block, RUN_ID, t, solver)
    indices = compute_seat_verifier_indices(seed, seats, verifiers)
    return tuple(
        (slot, index, compute_sampled_segments(compute_seat_seed(seed, slot), segments, samples))
        for slot, index in enumerate(indices)
    )


@cache
def _chain(key: bytes, rounds: int) -> tuple[Hash32, ...]:
    return compute_secret_chain(compute_chain_seed(key, RUN_ID), rounds)


@cache
def _is_planted(secret: bytes, r: int, solver: str, previous_seed_base: bytes, rate_bps: int) -> bool:
    return is_round_planted(secret, RUN_ID, r, solver, previous_seed_base, rate_bps)


def get_roles(preset: Preset, strategy: Strategy) -> dict[str, str]:
    """Who deviates: solver 0, verifier 0, juror 0, or a coalition (accomplice verifiers, jurors and a challenger)."""
    pop, kind = preset.population, strategy.kind
    solver, verifier = _address("solver", 0), _address("verifier", 0)
    single = {"lazy": "lazy", "fail_all": "fail_all", "lazy_unplantable": "lazy_early", "partial_lazy": "partial"}
    if kind in single:
        return {verifier: single[kind]}
    if kind == "silent_juror":
        return {_address("juror", 0): "silent"}
    if kind == "silent_griefer":
        return {verifier: "griefer", solver: "partner"}
    if kind == "accomplice_skip":
        return {solver: "skip_partner", verifier: "skipper"}
    if kind in ("collude", "plant_tipoff"):
        members = 1 if kind == "plant_tipoff" else get_coalition_size(strategy.share, pop.verifiers)
        return {solver: kind, **{_address("verifier", i): "accomplice" for i in range(members)}}
    if kind in ("preempt", "sybil_jurors"):
        jurors = {_address("juror", i): "coalition" for i in range(get_coalition_size(strategy.share, pop.jurors))}
        return {CHALLENGER: "challenger", **({solver: "rival"} if kind == "preempt" else {}), **jurors}
    return {solver: kind}
