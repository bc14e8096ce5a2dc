"""Every strategy of the economics bench, priced: the analytic expected profit per round of each row.

protocol/economics.py holds the payoffs of single outcomes and the odds of the draws; this module turns them into one
expectation per strategy (`compute_expectation`), under the rules of issue 37 (docs/economics.md, Model):

- R1 a commitment is accepted on standing passes + cleared fails of a strict majority of its seats and no standing
  fault; a seat nobody attested counts against it;
- R2 a fail a jury overturns is cleared: it counts like a pass;
- R3 every solver replays the named segment of each fail on its own commitment and challenges a fail its replay
  contradicts, so false fails on honest work are challenged with probability 1;
- R4 a seat not attested by attestEnd is reported and charged the attestation bond (into the pool);
- R5 whistleblowers re-check a fraction F of the passes only, and one opened draw of each planted commitment;
- R6 nothing pays a re-check: a whistleblower earns only what its challenges win.

bench/economics.py plays the same strategies with the protocol's own draws (bench/economics_sim.py) and reports both.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import comb
from typing import Literal

from protocol.constants import BPS_DENOMINATOR, JUROR_REWARD_BPS, WINNER_REWARD_BPS
from protocol.economics import (
    EconomicsError,
    EconomicTerms,
    Population,
    Rewards,
    Valuation,
    compute_dispute_payout,
    compute_dispute_total,
    compute_fake_catch_probability,
    compute_jury_odds,
    compute_lazy_verifier_loss,
    compute_unresolved_fee,
    get_coalition_size,
    get_fake_mixture,
    get_rewards,
    get_seat_overlap,
)
from protocol.sampling import compute_detection_probability

StrategyKind = Literal[
    "honest_solver", "fake", "withhold", "copy_root", "reroll_unopened", "reroll_seed", "poison", "lazy",
    "lazy_unplantable", "partial_lazy", "fail_all", "silent_griefer", "collude", "accomplice_skip", "preempt",
    "sybil_jurors", "silent_juror", "forge_plant", "grief_plant", "plant_tipoff",
]  # fmt: skip
GRINDING_DRAWS = 2**20
"""Seed-block contents a grinding block producer tries (extraData, transaction order: a million hashes take under a
second). Under a blockhash seed each is a new seed; under the protocol's RANDAO seed none is, and the producer is left
with EconomicTerms.get_seed_draws: publish or withhold, two seeds."""
JURY_TRUST_SHARE = Fraction(1, 3)
"""Juries assume fewer than a third of the registry is dishonest (a 2/3 quorum): sybil rows at or above it are
listed but not counted."""


@dataclass(frozen=True)
class Strategy:
    """One row. `fraction`: the faked fraction f (`segments`, when set, fakes exactly that many segments instead);
    `share`: the coalition's share of the verifier list (collude, plant_tipoff), of the juror registry (preempt,
    sybil_jurors), or the share of seed blocks the solver produces (reroll_seed); `draws`: the seed candidates a
    re-rolling producer tries (it picks from `terms.get_seed_draws(draws)` of them: at most two under a RANDAO
    seed). A row with `excluded` set is reported but left out of the best dishonest profit, for the reason given
    (`get_exclusion` adds the rows that are honest play at a preset's terms)."""

    name: str
    kind: StrategyKind
    fraction: Fraction = Fraction(1)
    share: Fraction = Fraction(0)
    segments: int = 0
    draws: int = 1
    dishonest: bool = True
    excluded: str = ""


def _sybil(percent: int) -> Strategy:
    share = Fraction(percent, 100)
    reason = "outside the jury trust assumption: juries assume < 1/3 of the registry dishonest (a 2/3 quorum)"
    return Strategy(f"sybil jurors holding {percent}% + a challenger", "sybil_jurors", share=share,
                    excluded=reason if share >= JURY_TRUST_SHARE else "")  # fmt: skip


STRATEGIES: tuple[Strategy, ...] = (
    Strategy("honest solver", "honest_solver", dishonest=False),
    *(Strategy(f"solver fakes f={f} of its segments", "fake", Fraction(f)) for f in ("0.05", "0.2", "0.5", "1")),
    Strategy("withholding: commit, never open or serve", "withhold"),
    Strategy("copy another's root or replay an old one", "copy_root"),
    Strategy("fakes one segment, leaves it unopened when a draw hits it", "reroll_unopened", segments=1),
    Strategy("fakes one segment, produces every seed block, re-rolls it once", "reroll_seed", share=Fraction(1),
             segments=1, draws=2),
    Strategy("fakes f=1/2 when it builds the seed block (1 in 10) and grinds it: RANDAO leaves it one re-roll",
             "reroll_seed", Fraction(1, 2), share=Fraction(1, 10), draws=GRINDING_DRAWS),
    Strategy("poisons one segment for an outside value V = the round's value", "poison", segments=1),
    Strategy("lazy verifier: passes without replaying", "lazy"),
    Strategy("lazy verifier only in rounds that cannot be planted", "lazy_unplantable"),
    Strategy("verifier replays 1 of a seat's s draws", "partial_lazy"),
    Strategy("verifier fails everything (F = 0; solvers defend themselves)", "fail_all"),
    Strategy("silent griefer: a rival solver's verifier abstains on every other seat", "silent_griefer"),
    Strategy("verifier colludes with a solver faking f=1 (1 accomplice)", "collude"),
    Strategy("verifiers holding 1/3 of the list collude with a solver faking f=1", "collude", share=Fraction(1, 3)),
    Strategy("accomplice abstains on all its partner's seats (partner fakes f=1)", "accomplice_skip"),
    Strategy("pre-emptive challenger (rival solver) with a 1/3 jury minority", "preempt", share=Fraction(1, 3)),
    *(_sybil(x) for x in (10, 20, 30, 40, 50)),
    Strategy("juror that never votes", "silent_juror"),
    *(Strategy(f"planted round: skips f={f} of its training, claims all", "forge_plant", Fraction(f))
      for f in ("0.2", "1")),
    Strategy("planted round: trains honestly, reveals the plant (griefs verifiers)", "grief_plant"),
    Strategy(
        "solver tells an accomplice verifier its plants", "plant_tipoff",
        excluded="harmless residual (docs/planted-faults.md, Attacks): the fail is right; it saves one replay",
    ),
)  # fmt: skip


def get_exclusion(strategy: Strategy, terms: EconomicTerms) -> str:
    """Why a row is not counted at these terms ("" when it is): its own reason, or being honest play here."""
    if strategy.excluded:
        return strategy.excluded
    if strategy.kind == "partial_lazy" and terms.samples == 1:
        return "honest play at s = 1: replaying 1 of 1 draws is the whole seat"
    if strategy.kind == "lazy_unplantable" and terms.unplantable_share == 0:
        return "honest play: every round of the run can be planted"
    return ""


def get_faking(strategy: Strategy, segments: int) -> tuple[tuple[int, Fraction], ...]:
    """(faked segments, probability) of a faking strategy: exactly `segments`, or the mixture of `fraction`."""
    if strategy.segments:
        if not 0 < strategy.segments <= segments:
            raise EconomicsError(f"cannot fake {strategy.segments} of {segments} segments")
        return ((strategy.segments, Fraction(1)),)
    return get_fake_mixture(strategy.fraction, segments)


@dataclass(frozen=True)
class Expectation:
    """Per round, relative to honest play: the player's profit (wei), how often it is caught (expected slashes,
    forfeits, lost bonds, abstention fees and unresolved-dispute fees) and what it costs honest parties besides."""

    profit: Fraction
    caught: Fraction
    harm: Fraction = Fraction(0)


def compute_expectation(
    strategy: Strategy, terms: EconomicTerms, population: Population, valuation: Valuation
) -> Expectation:
    """The analytic expected profit of `strategy` (the model: module docstring; derivations: docs/economics.md)."""
    r = get_rewards(terms, population, valuation)
    rho, sigma, kind = terms.planted_share, r.seats_per_verifier, strategy.kind
    loss = r.solver + terms.run.solver_min_stake  # a caught solver is slashed and unpaid
    overturned = Fraction(compute_dispute_total(terms, overturned=True))
    decided = compute_jury_odds(population.jurors, 0, terms.run.jury_size).truth  # an honest jury decides
    n, s, v = terms.num_segments, terms.samples, terms.seats
    if kind in ("fake", "reroll_unopened", "reroll_seed"):  # reroll_unopened: a hit commitment is slashed unopened
        q, draws = Fraction(1), 1
        if kind == "reroll_seed":  # a producer of a share q of the seed blocks keeps its best seed (of 2 under RANDAO)
            q, draws = strategy.share, terms.get_seed_draws(strategy.draws)
        faking = get_faking(strategy, n)
        saved = sum((w * k for k, w in faking), Fraction(0)) * r.round_compute / n
        caught = sum((w * _power(compute_detection_probability(Fraction(k, n), s, v), draws) for k, w in faking),
                     Fraction(0))  # fmt: skip
        return Expectation(q * (1 - rho) * (saved - caught * loss), q * (1 - rho) * caught)
    if kind == "poison":  # trains everything; a poisoned Δ that is accepted is worth V outside the run
        p = compute_detection_probability(Fraction(1, n), s, v)
        return Expectation((1 - rho) * ((1 - p) * valuation.round_value - p * loss), (1 - rho) * p)
    if kind in ("withhold", "copy_root"):  # unopenable for (run, round, solver): reported, slashed, never paid
        return Expectation(r.round_compute - loss, Fraction(1))
    if kind == "lazy":
        return Expectation(sigma * (r.seat_replay - compute_lazy_verifier_loss(terms) - rho * r.seat), sigma * rho)
    if kind == "lazy_unplantable":  # honest work passes rightly, and nobody can be planted there
        return Expectation(sigma * terms.unplantable_share * r.seat_replay, Fraction(0))
    if kind == "partial_lazy":  # a planted commitment is wrong in every segment: one draw finds it
        return Expectation(sigma * (s - 1) * r.segment_replay, Fraction(0))
    if kind == "fail_all":  # every false fail is challenged by its solver (R3) and overturned, or voided
        winner = compute_dispute_payout(int(overturned), 1).to_winner
        harm = sigma * (1 - rho) * (r.segment_replay - decided * winner + (1 - decided) * r.solver)
        return Expectation(sigma * (r.seat_replay - (1 - rho) * (r.seat + decided * overturned)),
                           sigma * (1 - rho) * decided, harm)  # fmt: skip
    if kind == "silent_griefer":
        return _compute_silent_griefer(terms, population, r)
    if kind in ("collude", "plant_tipoff"):
        return _compute_collusion(strategy, terms, population, r, population.recheck_fraction * decided)
    if kind == "accomplice_skip":
        return _compute_skipping_accomplice(strategy, terms, population, r)
    if kind in ("preempt", "sybil_jurors"):
        fault = Fraction(terms.run.solver_min_stake * WINNER_REWARD_BPS // BPS_DENOMINATOR)
        return _compute_capture(strategy, terms, population, r, overturned, fault)
    if kind == "silent_juror":
        d, registry = population.disputes_per_round, population.jurors
        odds = compute_jury_odds(registry, 0, terms.run.jury_size)
        earned = d * odds.truth * overturned * JUROR_REWARD_BPS / BPS_DENOMINATOR
        earned += (1 - (1 - odds.truth) ** d) * r.juror_bucket - d * odds.seats * r.segment_replay
        return Expectation(-earned / registry, Fraction(0))
    if kind == "forge_plant":  # the checked draws fall on untrained segments; a jury that decides slashes
        f = strategy.fraction
        found = population.plant_check * f  # a whistleblower replays one opened draw with the secret
        if population.seat_plant_check:  # and every seat holder its own draws (node/plant_checks.py)
            found = 1 - (1 - found) * (1 - compute_fake_catch_probability(terms, f, v))
        return Expectation(rho * (f * r.round_compute - found * decided * loss), rho * found * decided)
    if kind == "grief_plant":  # no draw is the planted training; the honest passes are overturned all the same
        disproven = (1 if population.seat_plant_check else population.plant_check) * decided
        lost = terms.run.attestation_bond + min(terms.plant.penalty, terms.run.verifier_min_stake) + terms.plant.jackpot
        return Expectation(-rho * disproven * loss, rho * disproven, rho * v * (lost + r.seat))
    return Expectation(Fraction(0), Fraction(0))  # honest_solver


def _power(p: Fraction, exponent: int) -> Fraction:
    """p ** exponent, exact up to 64 (a re-roll), in floating point beyond (grinding: far below anything priced)."""
    return p**exponent if exponent <= 64 or p in (0, 1) else Fraction(float(p) ** exponent)


def _compute_silent_griefer(terms: EconomicTerms, population: Population, r: Rewards) -> Expectation:
    """A verifier that abstains on every seat it holds outside its partner solver's commitment: each silent seat is
    charged the bond (R4) and forgoes R_v and a planted seat's jackpot; each victim it holds a seat of goes unpaid when
    the other seats cannot reach `needed` (R1), which raises the partner's share of the solver bucket."""
    m, v, verifiers = population.solvers, terms.seats, population.verifiers
    rho, needed = terms.planted_share, terms.get_needed(verifiers)
    held = Fraction((m - 1) * v, verifiers)
    own = held * (r.seat_replay - terms.run.attestation_bond - r.seat - rho * terms.plant.jackpot)
    unpaid = Fraction(v, verifiers) * ((1 - rho) * (v - 1 < needed) + rho * (v == 1))
    bucket = r.solver * m
    share = sum((comb(m - 1, k) * unpaid**k * (1 - unpaid) ** (m - 1 - k) * bucket / (m - k) for k in range(m)),
                Fraction(0))  # fmt: skip
    return Expectation(own + share - r.solver, held, (m - 1) * unpaid * r.solver)


def _compute_collusion(
    strategy: Strategy, terms: EconomicTerms, population: Population, r: Rewards, recheck: Fraction
) -> Expectation:
    """A solver faking f in its unplanted rounds with K accomplice verifiers, who pass its commitments without
    replaying (and fail its planted ones, which it tells them about); every other seat is honest. Caught when an
    honest seat samples a faked segment, or a whistleblower re-checks an accomplice's pass covering one. Passes of
    every seat reach `needed`, so it is paid exactly when it is not caught."""
    rho, v, s, n = terms.planted_share, terms.seats, terms.samples, terms.num_segments
    overlap = get_seat_overlap(population.verifiers, get_coalition_size(strategy.share, population.verifiers), v)
    held = sum((j * q for j, q in enumerate(overlap)), Fraction(0))
    if strategy.kind == "plant_tipoff":
        return Expectation(rho * held * r.seat_replay, Fraction(0))
    loss_if_caught = r.solver + terms.run.solver_min_stake
    loss_per_overturn = compute_dispute_total(terms, overturned=True) + r.seat
    unplanted, caught = strategy.fraction * r.round_compute, Fraction(0)
    for faked, w in get_fake_mixture(strategy.fraction, n):
        hit = 1 - (1 - Fraction(faked, n)) ** s
        for j, q in enumerate(overlap):
            p = 1 - (1 - hit) ** (v - j) * (1 - recheck * hit) ** j
            caught += w * q * (p + j * recheck * hit)  # the solver's slash, and each accomplice's overturn
            unplanted += w * q * (j * r.seat_replay - p * loss_if_caught - j * recheck * hit * loss_per_overturn)
    return Expectation((1 - rho) * unplanted + rho * held * r.seat_replay, (1 - rho) * caught)


def _compute_skipping_accomplice(
    strategy: Strategy, terms: EconomicTerms, population: Population, r: Rewards
) -> Expectation:
    """A solver faking f in its unplanted rounds whose accomplice verifier abstains on every seat of it (planted or
    not) instead of passing it: no pass to re-check, but each silent seat pays the bond (R4) and counts against
    acceptance (R1); honest seats fail what they sample wrong."""
    rho, v, s, n = terms.planted_share, terms.seats, terms.samples, terms.num_segments
    needed, verifiers = terms.get_needed(population.verifiers), population.verifiers
    overlap = get_seat_overlap(verifiers, get_coalition_size(strategy.share, verifiers), v)
    silent, slashed = r.seat_replay - terms.run.attestation_bond - r.seat, r.solver + terms.run.solver_min_stake
    unplanted, planted, caught = strategy.fraction * r.round_compute, Fraction(0), Fraction(0)
    for j, q in enumerate(overlap):
        planted += q * (j * (silent - terms.plant.jackpot) - (j == v) * r.solver)
        caught += q * j
        for faked, w in get_fake_mixture(strategy.fraction, n):
            clean = (1 - Fraction(faked, n)) ** (s * (v - j))  # no honest seat samples a faked segment
            paid = clean if v - j >= needed else Fraction(0)
            unplanted += w * q * (j * silent - (1 - clean) * slashed - (clean - paid) * r.solver)
            caught += (1 - rho) * w * q * (1 - clean)
    return Expectation((1 - rho) * unplanted + rho * planted, caught)


def _compute_capture(
    strategy: Strategy, terms: EconomicTerms, population: Population, r: Rewards, total: Fraction, fault: Fraction
) -> Expectation:
    """A challenger whose jurors hold `share` of the registry challenges honest passes of unplanted commitments (a
    planted one cannot be disputed): sybil_jurors one pass a round, for what a captured verdict pays; preempt every
    pass of one rival commitment a round, also to leave it unpaid (its solver shares go to the other solvers): under
    R1 the rival is paid only if no pass is overturned and at least `needed` are upheld."""
    rho, v, m = terms.planted_share, terms.seats, population.solvers
    coalition = get_coalition_size(strategy.share, population.jurors)
    odds = compute_jury_odds(population.jurors, coalition, terms.run.jury_size)
    won = total * (WINNER_REWARD_BPS + JUROR_REWARD_BPS) / BPS_DENOMINATOR  # the winner's and the signers' parts
    per_dispute = (
        odds.coalition * won - odds.truth * terms.run.challenge_bond - odds.unresolved * compute_unresolved_fee(terms)
    )
    if strategy.kind == "sybil_jurors":
        return Expectation((1 - rho) * (per_dispute + odds.coalition * fault), (1 - rho) * (1 - odds.coalition))
    needed = terms.get_needed(population.verifiers)
    paid = sum((comb(v, k) * odds.truth**k * odds.unresolved ** (v - k) for k in range(needed, v + 1)), Fraction(0))
    profit = v * per_dispute + (1 - (1 - odds.coalition) ** v) * fault
    profit += (1 - paid) * (r.solver * m / (m - 1) - r.solver)
    return Expectation((1 - rho) * profit, (1 - rho) * v * (1 - odds.coalition))


def compute_one_segment_detection(terms: EconomicTerms) -> Fraction:
    """P(some seat samples one given segment): 1 - (1 - 1/n)^(s x v), the catch probability of a one-segment cheat."""
    return compute_detection_probability(Fraction(1, terms.num_segments), terms.samples, terms.seats)


def compute_break_even_value(terms: EconomicTerms, population: Population, valuation: Valuation) -> Fraction:
    """V (wei per round) above which poisoning one segment pays: (1 - p) V = p (R_s + solverMinStake), p the
    one-segment detection probability (no whistleblower re-checks passes at the presets; F would not help, since a
    pass covering the poisoned segment is never sent by an honest seat)."""
    p = compute_one_segment_detection(terms)
    if p == 1:
        raise EconomicsError("a one-segment cheat is always caught: no value pays for it")
    return p * (get_rewards(terms, population, valuation).solver + terms.run.solver_min_stake) / (1 - p)


def compute_griefed_solver_income(terms: EconomicTerms, population: Population, valuation: Valuation) -> Fraction:
    """Wei per round of an honest solver when one verifier of the list fails everything: it holds a seat of the
    solver's commitment with probability v / N_v; on an unplanted one the solver replays the named segment and
    challenges (R3), and the jury overturns the fail (cleared, R2: paid) and pays it the winner's part of bond +
    verifierMinStake, or leaves it unresolved (voided: the fail blocks, the solver is unpaid and pays the fee)."""
    r = get_rewards(terms, population, valuation)
    decided = compute_jury_odds(population.jurors, 0, terms.run.jury_size).truth
    winner = compute_dispute_payout(compute_dispute_total(terms, overturned=True), 1).to_winner
    lost = (1 - decided) * (r.solver + compute_unresolved_fee(terms))
    held = Fraction(terms.seats, population.verifiers) * (1 - terms.planted_share)
    return r.solver - r.round_compute + held * (decided * winner - r.segment_replay - lost)
