"""The incentives of a run in code: what each outcome pays each role, and what each strategy is expected to earn.

Issue 17 asks for a measurement that no cheating strategy pays. This is the one copy of the payoffs: bench/economics.py
plays many rounds with the protocol's own draws and books every transfer with these functions, next to the
expectations computed here (docs/economics.md). Payoffs of single outcomes are integer wei, as the contracts compute
them (Disputes.execute and expire, Verification._slashSolver with FaultRewards, Verification.onPlantRevealed);
probabilities and expectations are exact Fractions.

The model (docs/economics.md gives the reasons): one deviating party or coalition among honest ones; expectations
are per round and relative to the same party playing honestly, so a negative number is what the strategy costs
its player. All shares of a round are worth `Valuation.round_value` wei (split by the run's bps), M solvers commit
equal tokens and honest work is accepted; H inner steps cost `Valuation.compute_cost`, so a seat's replay costs
C x s x k / H. A slash takes the full minimum stake (topped up afterwards); the plant pool pays every jackpot; honest
jurors all vote, a coalition's jurors vote for the coalition's side.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from math import comb
from typing import Any, Literal

from protocol.constants import (
    BPS_DENOMINATOR,
    JUROR_REWARD_BPS,
    JURY_PARTY_SLACK,
    MAX_APPEALS,
    MAX_JURY_SIZE,
    MAX_PLANT_RATE_BPS,
    MAX_SAMPLES,
    MAX_VERIFIERS_PER_COMMITMENT,
    MIN_JURY_SIZE,
    UNRESOLVED_CHALLENGE_FEE_BPS,
    WINNER_REWARD_BPS,
    get_appeal_jury_size,
    get_quorum,
)
from protocol.errors import GradledgerError
from protocol.sampling import compute_detection_probability
from protocol.types import PlantTerms

ETH = 10**18


class EconomicsError(GradledgerError):
    """Terms, a population or a strategy that the economic model cannot evaluate."""


@dataclass(frozen=True)
class EconomicTerms:
    """The run terms the payoffs depend on: RunTerms' sampling and money fields and the plant terms (wei)."""

    inner_steps: int
    steps_per_segment: int
    samples: int
    seats: int
    jury_size: int
    solver_min_stake: int
    verifier_min_stake: int
    attestation_bond: int
    challenge_bond: int
    solver_share_bps: int
    verifier_share_bps: int
    juror_share_bps: int
    plant: PlantTerms
    plant_pool: int

    def __post_init__(self) -> None:
        if self.steps_per_segment < 1 or self.inner_steps % self.steps_per_segment:
            raise EconomicsError(f"H={self.inner_steps} must be a positive multiple of k={self.steps_per_segment}")
        if not (1 <= self.samples <= MAX_SAMPLES and 1 <= self.seats <= MAX_VERIFIERS_PER_COMMITMENT):
            raise EconomicsError(f"need 1 <= s <= {MAX_SAMPLES} and 1 <= v <= {MAX_VERIFIERS_PER_COMMITMENT}")
        if not MIN_JURY_SIZE <= self.jury_size <= MAX_JURY_SIZE:
            raise EconomicsError(f"jury size must be in [{MIN_JURY_SIZE}, {MAX_JURY_SIZE}], got {self.jury_size}")
        if not 0 <= self.plant.rate_bps <= MAX_PLANT_RATE_BPS:
            raise EconomicsError(f"plant rate must be in [0, {MAX_PLANT_RATE_BPS}] bps, got {self.plant.rate_bps}")
        if not 0 <= self.plant.penalty <= self.verifier_min_stake:
            raise EconomicsError("the plant penalty must be in [0, verifierMinStake] (Plants.setTerms)")
        if min(self.solver_min_stake, self.attestation_bond, self.challenge_bond, self.plant.jackpot) < 0:
            raise EconomicsError("stakes, bonds and the jackpot are non-negative wei")
        if self.solver_share_bps + self.verifier_share_bps + self.juror_share_bps != BPS_DENOMINATOR:
            raise EconomicsError("the solver, verifier and juror shares must add up to 10,000 bps")

    @classmethod
    def from_rules(cls, rules: Any, inner_steps: int, steps_per_segment: int) -> EconomicTerms:
        """The terms of a run created with `rules`, a devnet.runs.RunRules (duck-typed: protocol/ cannot import
        devnet/), and a config of H=inner_steps, k=steps_per_segment."""
        return cls(
            inner_steps, steps_per_segment, rules.samples_per_commitment, rules.verifiers_per_commitment,
            rules.jury_size, rules.solver_min_stake_wei, rules.verifier_min_stake_wei, rules.attestation_bond_wei,
            rules.challenge_bond_wei, rules.solver_share_bps, rules.verifier_share_bps, rules.juror_share_bps,
            rules.get_plant_terms(), rules.plant_pool_wei,
        )  # fmt: skip

    @property
    def num_segments(self) -> int:
        return self.inner_steps // self.steps_per_segment

    @property
    def plant_rate(self) -> Fraction:
        return Fraction(self.plant.rate_bps, BPS_DENOMINATOR)


@dataclass(frozen=True)
class Population:
    """Who plays: M solvers, the verifier list, the juror registry, the whistleblowers' re-check fraction F (per
    attestation, passes and fails alike), the disputes per round jurors decide without any deviant, and the
    probability that a planted commitment's plant is checked (a whistleblower replays one opened draw with the
    revealed secret; every `whistleblower watch` checks every plant, whatever F)."""

    solvers: int
    verifiers: int
    jurors: int
    recheck_fraction: Fraction
    disputes_per_round: int = 1
    plant_check: Fraction = Fraction(1)

    def __post_init__(self) -> None:
        if self.solvers < 2 or self.verifiers < 1 or self.jurors < MIN_JURY_SIZE or self.disputes_per_round < 0:
            raise EconomicsError("need >= 2 solvers, >= 1 verifier, >= 3 jurors and >= 0 disputes per round")
        if not 0 <= self.recheck_fraction <= 1:
            raise EconomicsError(f"the re-check fraction F is in [0, 1], got {self.recheck_fraction}")
        if not 0 <= self.plant_check <= 1:
            raise EconomicsError(f"the plant check probability is in [0, 1], got {self.plant_check}")


@dataclass(frozen=True)
class Valuation:
    """What all the shares of one round and H inner steps of training are worth, in wei."""

    round_value: int
    compute_cost: int


def build_valuation(
    terms: EconomicTerms, population: Population, round_value: int, compute_share: Fraction
) -> Valuation:
    """A valuation where a round of training costs `compute_share` of the solver's round reward R_s."""
    solver_reward = Fraction(round_value * terms.solver_share_bps, BPS_DENOMINATOR * population.solvers)
    return Valuation(round_value, int(compute_share * solver_reward))


@dataclass(frozen=True)
class DisputePayout:
    """Disputes.execute: WINNER_REWARD_BPS of the total to the winner (its own bond comes back besides),
    JUROR_REWARD_BPS split among the signers, the rest and the division dust to the run's pool."""

    to_winner: int
    per_juror: int
    to_pool: int


def compute_dispute_payout(total: int, signers: int) -> DisputePayout:
    if signers < 1 or total < 0:
        raise EconomicsError(f"a verdict has at least one signer and a non-negative total, got {signers}, {total}")
    to_winner = total * WINNER_REWARD_BPS // BPS_DENOMINATOR
    per_juror = total * JUROR_REWARD_BPS // BPS_DENOMINATOR // signers
    return DisputePayout(to_winner, per_juror, total - to_winner - per_juror * signers)


def compute_dispute_total(terms: EconomicTerms, overturned: bool) -> int:
    """T of a decided attestation dispute: an overturned attestation forfeits its bond and its verifier's minimum
    stake; an upheld one, the challenger's bond."""
    return terms.attestation_bond + terms.verifier_min_stake if overturned else terms.challenge_bond


def compute_unresolved_fee(terms: EconomicTerms) -> int:
    """What a challenger loses when its dispute ends without a verdict after every appeal (Disputes.expire)."""
    return terms.challenge_bond * UNRESOLVED_CHALLENGE_FEE_BPS // BPS_DENOMINATOR


def compute_fault_reward(taken: int, provers: int) -> tuple[int, int]:
    """(per prover, to the pool) of a solver slash: half to the fault's provers in equal shares (FaultRewards), the
    rest and the dust to the pool; with no prover (an unopened commitment) all of it goes to the pool."""
    if taken < 0 or provers < 0:
        raise EconomicsError("a slash and its prover count are non-negative")
    if provers == 0:
        return 0, taken
    per_prover = taken * WINNER_REWARD_BPS // BPS_DENOMINATOR // provers
    return per_prover, taken - per_prover * provers


def compute_planted_pass_loss(terms: EconomicTerms) -> int:
    """A pass on a planted commitment: its bond and `penalty` of its verifier's stake go to the plant pool."""
    return terms.attestation_bond + min(terms.plant.penalty, terms.verifier_min_stake)


def compute_planted_fail_gain(terms: EconomicTerms, pool: int) -> int:
    """A fail on a planted commitment earns the jackpot, or what is left of the pool."""
    return min(terms.plant.jackpot, max(pool, 0))


def compute_lazy_verifier_loss(terms: EconomicTerms) -> Fraction:
    """Wei a verifier passing without replaying loses per seat from plants, against an honest one:
    rho x (bond + penalty + jackpot) (docs/planted-faults.md, Attacks)."""
    return terms.plant_rate * (compute_planted_pass_loss(terms) + terms.plant.jackpot)


@dataclass(frozen=True)
class Rewards:
    """Per round, wei: R_s per accepted commitment, R_v per standing attestation, the juror bucket, C per round of
    training, a seat's replay (s x k steps), one segment's replay (k steps), and seats per verifier (M v / N_v)."""

    solver: Fraction
    seat: Fraction
    juror_bucket: Fraction
    round_compute: Fraction
    seat_replay: Fraction
    segment_replay: Fraction
    seats_per_verifier: Fraction


def get_rewards(terms: EconomicTerms, population: Population, valuation: Valuation) -> Rewards:
    value, cost, m = (
        Fraction(valuation.round_value, BPS_DENOMINATOR),
        Fraction(valuation.compute_cost),
        population.solvers,
    )
    return Rewards(
        value * terms.solver_share_bps / m, value * terms.verifier_share_bps / (m * terms.seats),
        value * terms.juror_share_bps, cost, cost * terms.samples * terms.steps_per_segment / terms.inner_steps,
        cost * terms.steps_per_segment / terms.inner_steps, Fraction(m * terms.seats, population.verifiers),
    )  # fmt: skip


def get_fake_mixture(fraction: Fraction, segments: int) -> tuple[tuple[int, Fraction], ...]:
    """(faked segments, probability): faking a fraction f of n segments fakes floor(fn) or ceil(fn) of them, mixed
    so that fn are faked on average (f = 0.05 of 4 segments is one segment, one round in five)."""
    if not 0 <= fraction <= 1:
        raise EconomicsError(f"a faked fraction is in [0, 1], got {fraction}")
    exact = fraction * segments
    low = exact.numerator // exact.denominator
    return ((low, Fraction(1)),) if exact == low else ((low, 1 - (exact - low)), (low + 1, exact - low))


def compute_fake_catch_probability(terms: EconomicTerms, fraction: Fraction, honest_seats: int) -> Fraction:
    """P(some honest seat samples a faked segment): 1 - (1 - f)^(s x seats), averaged over the faking mixture."""
    n, total = terms.num_segments, Fraction(0)
    for faked, weight in get_fake_mixture(fraction, n):
        total += weight * compute_detection_probability(Fraction(faked, n), terms.samples, honest_seats)
    return total


def get_seat_overlap(verifiers: int, coalition: int, seats: int) -> tuple[Fraction, ...]:
    """P(j of a commitment's seats go to the coalition), j = 0..seats: seats are drawn without replacement from the
    verifier list (protocol.sampling.compute_seat_verifier_indices), so j is hypergeometric."""
    if not 0 <= coalition <= verifiers or not 0 < seats <= verifiers:
        raise EconomicsError(f"{seats} seats and a coalition of {coalition} do not fit {verifiers} verifiers")
    total = comb(verifiers, seats)
    return tuple(Fraction(comb(coalition, j) * comb(verifiers - coalition, seats - j), total) for j in range(seats + 1))


@dataclass(frozen=True)
class JuryOdds:
    """How one dispute ends when honest jurors vote for the truth and a coalition's for the other side: a quorum
    for the truth, one for the coalition, or none after every appeal; `seats`: expected seats drawn in all."""

    truth: Fraction
    coalition: Fraction
    unresolved: Fraction
    seats: Fraction


def _seat_distribution(registry: int, coalition: int, jury_size: int) -> dict[tuple[int, int], Fraction]:
    """P(h honest, c coalition seats): jury_size + JURY_PARTY_SLACK independent draws from the registry, a juror
    already seated skipped, at most jury_size seats (protocol.jury.draw_jury; no party sits in the registry)."""
    if registry <= jury_size + JURY_PARTY_SLACK:
        raise EconomicsError(f"a registry of {registry} fits the jury pool: seats follow registry order, not draws")
    states: dict[tuple[int, int], Fraction] = {(0, 0): Fraction(1)}
    for _ in range(jury_size + JURY_PARTY_SLACK):
        following: dict[tuple[int, int], Fraction] = {}
        for (h, c), p in states.items():
            new_c, new_h = Fraction(coalition - c, registry), Fraction(registry - coalition - h, registry)
            moves = [((h, c), Fraction(1))] if h + c == jury_size else [((h, c + 1), new_c), ((h + 1, c), new_h)]
            moves += [] if h + c == jury_size else [((h, c), 1 - new_c - new_h)]
            for state, q in moves:
                following[state] = following.get(state, Fraction(0)) + p * q
        states = following
    return states


@lru_cache(maxsize=256)
def compute_jury_odds(registry: int, coalition: int, jury_size: int, coalition_votes: bool = True) -> JuryOdds:
    """Outcome odds of a dispute over its juries: the run's size, then get_appeal_jury_size after each silent one,
    MAX_APPEALS times. A jury of fewer than MIN_JURY_SIZE seats cannot decide; a verdict needs get_quorum(seats,
    appeals) matching signers (a simple majority at the last level). With `coalition_votes=False` the coalition only
    withholds its votes (a blocking minority)."""
    if not 0 <= coalition <= registry:
        raise EconomicsError(f"a coalition of {coalition} does not fit a registry of {registry}")
    truth, captured, seats, remaining = Fraction(0), Fraction(0), Fraction(0), Fraction(1)
    for appeals in range(MAX_APPEALS + 1):
        silent = Fraction(0)
        for (h, c), p in _seat_distribution(registry, coalition, get_appeal_jury_size(jury_size, appeals)).items():
            seats += remaining * p * (h + c)
            decides = h + c >= MIN_JURY_SIZE
            if decides and h >= get_quorum(h + c, appeals):
                truth += remaining * p
            elif decides and coalition_votes and c >= get_quorum(h + c, appeals):
                captured += remaining * p
            else:
                silent += p
        remaining *= silent
    return JuryOdds(truth, captured, remaining, seats)


def get_coalition_size(share: Fraction, registry: int) -> int:
    """Members of a coalition holding `share` of a registry: at least one."""
    return max(1, round(share * registry))


StrategyKind = Literal[
    "honest_solver", "fake", "withhold", "copy_root", "lazy", "fail_all", "collude", "preempt", "sybil_jurors",
    "silent_juror", "forge_plant", "grief_plant", "plant_tipoff",
]  # fmt: skip


@dataclass(frozen=True)
class Strategy:
    """One row. `fraction`: the faked fraction f; `share`: the coalition's share of the verifier list (collude,
    plant_tipoff) or of the juror registry (preempt, sybil_jurors). A row with `excluded` set is reported but left out
    of the best dishonest profit, for the reason given (a rule not built yet, or beyond the model's assumptions)."""

    name: str
    kind: StrategyKind
    fraction: Fraction = Fraction(1)
    share: Fraction = Fraction(0)
    dishonest: bool = True
    excluded: str = ""


STRATEGIES: tuple[Strategy, ...] = (
    Strategy("honest solver", "honest_solver", dishonest=False),
    *(Strategy(f"solver fakes f={f} of its segments", "fake", Fraction(f)) for f in ("0.05", "0.2", "0.5", "1")),
    Strategy("withholding: commit, never open or serve", "withhold"),
    Strategy("copy another's root or replay an old one", "copy_root"),
    Strategy("lazy verifier: passes without replaying", "lazy"),
    Strategy("verifier fails everything", "fail_all"),
    Strategy("verifier colludes with a solver faking f=1 (1 accomplice)", "collude"),
    Strategy("verifiers holding 1/3 of the list collude with a solver faking f=1", "collude", share=Fraction(1, 3)),
    Strategy("pre-emptive challenger (rival solver) with a 1/3 jury minority", "preempt", share=Fraction(1, 3)),
    *(Strategy(f"sybil jurors holding {x}% + a challenger", "sybil_jurors", share=Fraction(x, 100)) for x in (10, 20)),
    Strategy("sybil jurors holding 33% + a challenger", "sybil_jurors", share=Fraction(33, 100)),
    Strategy("juror that never votes", "silent_juror"),
    Strategy(
        "sybil jurors holding 50% + a challenger", "sybil_jurors", share=Fraction(1, 2),
        excluded="beyond the model: juries assume fewer than 1/3 dishonest jurors (a 2/3 quorum)",
    ),
    *(Strategy(f"planted round: trains f={f} of it, claims all", "forge_plant", Fraction(f)) for f in ("0.2", "1")),
    Strategy("planted round: trains honestly, reveals the plant (griefs verifiers)", "grief_plant"),
    Strategy(
        "solver tells an accomplice verifier its plants", "plant_tipoff",
        excluded="harmless residual (docs/planted-faults.md, Attacks): the fail is right; it saves one replay",
    ),
)  # fmt: skip


@dataclass(frozen=True)
class Expectation:
    """Per round, relative to honest play: the player's profit (wei), how often it is caught (expected slashes,
    forfeits, lost bonds and unresolved-dispute fees) and what it costs honest parties besides (wei)."""

    profit: Fraction
    caught: Fraction
    harm: Fraction = Fraction(0)


def compute_expectation(
    strategy: Strategy, terms: EconomicTerms, population: Population, valuation: Valuation
) -> Expectation:
    """The analytic expected profit of `strategy` (the model: module docstring; derivations: docs/economics.md)."""
    r = get_rewards(terms, population, valuation)
    rho, f, F, sigma = terms.plant_rate, strategy.fraction, population.recheck_fraction, r.seats_per_verifier
    stake, overturned = Fraction(terms.solver_min_stake), Fraction(compute_dispute_total(terms, overturned=True))
    fault_share = Fraction(compute_fault_reward(terms.solver_min_stake, 1)[0])
    decided = compute_jury_odds(population.jurors, 0, terms.jury_size).truth  # an honest jury decides
    kind = strategy.kind
    if kind == "fake":
        caught = compute_fake_catch_probability(terms, f, terms.seats)
        return Expectation((1 - rho) * (f * r.round_compute - caught * (r.solver + stake)), (1 - rho) * caught)
    if kind in ("withhold", "copy_root"):  # unopenable for (run, round, solver): reported, slashed, never paid
        return Expectation(r.round_compute - r.solver - stake, Fraction(1))
    if kind == "lazy":
        return Expectation(sigma * (r.seat_replay - compute_lazy_verifier_loss(terms) - rho * r.seat), sigma * rho)
    if kind == "fail_all":  # a false fail is re-checked (F) and overturned, or it stands and slashes the solver
        challenged = decided * (overturned + r.seat) + (1 - decided) * r.seat
        per_seat = r.seat_replay + (1 - rho) * ((1 - F) * fault_share - F * challenged)
        return Expectation(sigma * per_seat, sigma * (1 - rho) * F * decided)
    if kind in ("collude", "plant_tipoff"):
        return _compute_collusion(strategy, terms, population, r, F * decided)
    if kind in ("preempt", "sybil_jurors"):
        return _compute_capture(strategy, terms, population, r, overturned, fault_share)
    if kind == "silent_juror":
        d, n = population.disputes_per_round, population.jurors
        odds = compute_jury_odds(n, 0, terms.jury_size)
        earned = d * odds.truth * overturned * JUROR_REWARD_BPS / BPS_DENOMINATOR
        earned += (1 - (1 - odds.truth) ** d) * r.juror_bucket - d * odds.seats * r.segment_replay
        return Expectation(-earned / n, Fraction(0))
    disproven = population.plant_check * decided  # a false plant's checked draw goes to a jury that decides
    if kind == "forge_plant":  # the checked draw is one of the untrained ones with probability f
        return Expectation(rho * f * (r.round_compute - disproven * (r.solver + stake)), rho * f * disproven)
    if kind == "grief_plant":  # no draw is the planted training; the honest passes are overturned all the same
        lost = compute_planted_pass_loss(terms) + terms.plant.jackpot + r.seat
        return Expectation(-rho * disproven * (r.solver + stake), rho * disproven, rho * terms.seats * lost)
    return Expectation(Fraction(0), Fraction(0))  # honest_solver


def _compute_collusion(
    strategy: Strategy, terms: EconomicTerms, population: Population, r: Rewards, recheck: Fraction
) -> Expectation:
    """A solver faking f in its unplanted rounds with K accomplice verifiers, who pass its commitments without
    replaying (and fail its planted ones, which it tells them about); every other seat is honest. Caught when an
    honest seat samples a faked segment, or a whistleblower re-checks an accomplice's pass covering one."""
    rho, v, s, n = terms.plant_rate, terms.seats, terms.samples, terms.num_segments
    overlap = get_seat_overlap(population.verifiers, get_coalition_size(strategy.share, population.verifiers), v)
    held = sum((j * q for j, q in enumerate(overlap)), Fraction(0))
    if strategy.kind == "plant_tipoff":
        return Expectation(rho * held * r.seat_replay, Fraction(0))
    loss_if_caught = r.solver + terms.solver_min_stake
    loss_per_overturn = compute_dispute_total(terms, overturned=True) + r.seat
    unplanted, caught = strategy.fraction * r.round_compute, Fraction(0)
    for faked, w in get_fake_mixture(strategy.fraction, n):
        hit = 1 - (1 - Fraction(faked, n)) ** s
        for j, q in enumerate(overlap):
            p = 1 - (1 - hit) ** (v - j) * (1 - recheck * hit) ** j
            caught += w * q * (p + j * recheck * hit)  # the solver's slash, and each accomplice's overturn
            unplanted += w * q * (j * r.seat_replay - p * loss_if_caught - j * recheck * hit * loss_per_overturn)
    return Expectation((1 - rho) * unplanted + rho * held * r.seat_replay, (1 - rho) * caught)


def _compute_capture(
    strategy: Strategy, terms: EconomicTerms, population: Population, r: Rewards, total: Fraction, fault: Fraction
) -> Expectation:
    """A challenger whose jurors hold `share` of the registry challenges honest passes of unplanted commitments (a
    planted one cannot be disputed): sybil_jurors one pass a round, for what a captured verdict pays; preempt every
    pass of one rival commitment a round, also to leave it unpaid (its solver shares go to the other solvers)."""
    rho, v, m = terms.plant_rate, terms.seats, population.solvers
    odds = compute_jury_odds(population.jurors, get_coalition_size(strategy.share, population.jurors), terms.jury_size)
    won = total * (WINNER_REWARD_BPS + JUROR_REWARD_BPS) / BPS_DENOMINATOR  # the winner's and the signers' parts
    per_dispute = (
        odds.coalition * won - odds.truth * terms.challenge_bond - odds.unresolved * compute_unresolved_fee(terms)
    )
    if strategy.kind == "sybil_jurors":
        return Expectation((1 - rho) * (per_dispute + odds.coalition * fault), (1 - rho) * (1 - odds.coalition))
    profit = v * per_dispute + (1 - (1 - odds.coalition) ** v) * fault
    profit += (odds.coalition + odds.unresolved) ** v * (r.solver * m / (m - 1) - r.solver)
    return Expectation((1 - rho) * profit, (1 - rho) * v * (1 - odds.coalition))


def compute_verification_cost_ratio(terms: EconomicTerms, population: Population) -> Fraction:
    """Replayed inner steps per trained one: every seat replays s segments of k steps, whistleblowers re-check a
    fraction F of the seats of unplanted commitments the same way (a planted seat is decided by the reveal) and
    replay one segment of each planted commitment (the plant check)."""
    rho = terms.plant_rate
    replays = terms.seats * terms.samples * terms.steps_per_segment * (1 + population.recheck_fraction * (1 - rho))
    replays += rho * population.plant_check * terms.steps_per_segment
    return replays / terms.inner_steps


PRODUCTION_POPULATION = Population(solvers=16, verifiers=32, jurors=100, recheck_fraction=Fraction(1, 2))
"""Who plays the production preset (devnet.runs.PRODUCTION_RULES at H=500, k=10): 16 solvers, 32 verifiers, 100
registered jurors, whistleblowers re-checking half of the seats (`whistleblower watch --fraction 0.5`)."""
PRODUCTION_ROUND_VALUE = 10 * ETH
DEMO_POPULATION = Population(solvers=4, verifiers=6, jurors=30, recheck_fraction=Fraction(1))
"""The demos' terms are played by this population: M=4 as in the adversarial demo, more verifiers and a juror
registry large enough that "x% of the registry" is a number of jurors; F=1 is `whistleblower watch`'s default."""
DEMO_ROUND_VALUE = ETH
COMPUTE_SHARE = Fraction(1, 2)
"""A round of training costs half of the solver's round reward (C = R_s / 2) unless a bench run says otherwise."""
