"""The incentives of a run in code: what each outcome pays each role, and the odds of the protocol's draws.

Issues 17 and 37 ask for a measurement that no cheating strategy pays. This module holds the payoffs of single
outcomes and the distributions; protocol/economics_strategies.py prices each strategy with them, and
bench/economics.py plays many rounds with the protocol's own draws and books every transfer with the same functions
(docs/economics.md). Payoffs of single outcomes are integer wei, as the contracts compute them (Disputes.execute and
expire, Verification._slashSolver with FaultRewards, Verification.onPlantRevealed and reportAbstention);
probabilities and expectations are exact Fractions.

The model (docs/economics.md gives the reasons): one deviating party or coalition among honest ones; expectations
are per round and relative to the same party playing honestly, so a negative number is what the strategy costs
its player. All shares of a round are worth `Valuation.round_value` wei (split by the run's bps), M solvers commit
equal tokens and honest work is accepted; H inner steps cost `Valuation.compute_cost`, so a seat's replay costs
C x s x k / H. A slash takes the full minimum stake (topped up afterwards); the plant pool pays every jackpot; honest
jurors all vote, a coalition's jurors vote for the coalition's side. The rules of issue 37: a commitment is accepted
on standing passes and cleared fails of a strict majority of its seats (`protocol.types.get_needed_seats`), a silent
seat is reported and charged the attestation bond, every solver challenges the fails on its own work that its replay
contradicts, and whistleblowers re-check passes only (a fraction F) plus one opened draw of each planted commitment.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import lru_cache
from math import comb
from typing import Any

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
    PLANT_DELAY_ROUNDS,
    UNRESOLVED_CHALLENGE_FEE_BPS,
    WINNER_REWARD_BPS,
    get_appeal_jury_size,
    get_quorum,
)
from protocol.errors import GradledgerError
from protocol.run_terms import CreationTerms, PlantTerms, RunTerms
from protocol.sampling import compute_detection_probability

ETH = 10**18


class EconomicsError(GradledgerError):
    """Terms, a population or a strategy that the economic model cannot evaluate."""


RANDAO_SEED_DRAWS = 2
"""The seeds a producer of a round's seed block chooses between when the seed is the block's RANDAO value
(Verification.drawSeed reads the header's mixHash through BlockRandomness): the beacon chain fixed that value before
the block was built, so grinding the block's contents moves nothing, and withholding the block is the one re-roll."""


@dataclass(frozen=True)
class EconomicTerms:
    """The terms the payoffs depend on: what the run is created with (`creation`: its RunTerms, H and k fixed, and its
    plant terms and pool), plus the model's two assumptions about the run's seeds. No field repeats the RunTerms
    struct: the properties below name its quantities by the letters of docs/economics.md (s, v, H, k, rounds).

    `unplantable_rounds`: the rounds at the start of a run in which nobody can be planted, publicly. PLANT_DELAY_ROUNDS
    for a run whose plant terms are set after round 0 started (the plant draw of round r needs round r - 1's seed, and
    an anchor set in round 0 applies from round 2); 0 for a run whose terms are set before its start (Plants: the
    terms fix a run seed block and anchors registered before the start are eligible from round 0), which
    `from_creation` derives from a start delay. `seed_from_randao`: the round's seed is the seed block's RANDAO value
    (Verification.drawSeed, as built), so the block's producer cannot grind it, only withhold its block: a re-rolling
    producer picks among at most RANDAO_SEED_DRAWS seeds (`get_seed_draws`); False prices the older blockhash seed,
    which a producer grinds through as many candidates as it hashes."""

    creation: CreationTerms
    unplantable_rounds: int = PLANT_DELAY_ROUNDS
    seed_from_randao: bool = True

    def __post_init__(self) -> None:
        run = self.run
        if run.inner_steps < 1 or run.steps_per_segment < 1 or run.inner_steps % run.steps_per_segment:
            raise EconomicsError(
                f"H={run.inner_steps} must be a positive multiple of k={run.steps_per_segment} (terms that leave H "
                "and k to the training config are priced once they fix them: `with_run(inner_steps=..., ...)`)"
            )
        if not (1 <= self.samples <= MAX_SAMPLES and 1 <= self.seats <= MAX_VERIFIERS_PER_COMMITMENT):
            raise EconomicsError(f"need 1 <= s <= {MAX_SAMPLES} and 1 <= v <= {MAX_VERIFIERS_PER_COMMITMENT}")
        if not MIN_JURY_SIZE <= run.jury_size <= MAX_JURY_SIZE:
            raise EconomicsError(f"jury size must be in [{MIN_JURY_SIZE}, {MAX_JURY_SIZE}], got {run.jury_size}")
        if not 0 <= self.plant.rate_bps <= MAX_PLANT_RATE_BPS:
            raise EconomicsError(f"plant rate must be in [0, {MAX_PLANT_RATE_BPS}] bps, got {self.plant.rate_bps}")
        if not 0 <= self.plant.penalty <= run.verifier_min_stake:
            raise EconomicsError("the plant penalty must be in [0, verifierMinStake] (Plants.setTerms)")
        if min(run.solver_min_stake, run.attestation_bond, run.challenge_bond, self.plant.jackpot) < 0:
            raise EconomicsError("stakes, bonds and the jackpot are non-negative wei")
        if run.solver_share_bps + run.verifier_share_bps + run.juror_share_bps != BPS_DENOMINATOR:
            raise EconomicsError("the solver, verifier and juror shares must add up to 10,000 bps")
        if self.rounds < 1 or self.unplantable_rounds < 0:
            raise EconomicsError(f"a run has >= 1 round and >= 0 unplantable ones, got {self.rounds}")

    @classmethod
    def from_creation(cls, creation: CreationTerms) -> EconomicTerms:
        """The terms of a run created with `creation` (a preset of protocol/run_presets.py, H and k fixed), under the
        protocol's seed (RANDAO).

        Unplantable rounds: 0 when the run plants (`plant.rate_bps` > 0) and starts after a delay (`run.start_delay`
        > 0, RunTerms.startDelay). devnet's create_run sends Plants.setTerms right after createRun, so such a run's
        terms are set before round 0 starts: they fix the run seed block (Plants.drawRunSeed), every anchor registered
        before the start is eligible from round 0, and every round can be planted; the nodes anchor as soon as they
        see the terms, inside the delay. A solver that anchors after the start is unpaid in its first
        PLANT_DELAY_ROUNDS rounds (pay blocked, still seated), which the presets leave out: their solvers all anchor
        in the delay. Without a delay (or without planting) the terms land during round 0 and the first
        PLANT_DELAY_ROUNDS rounds cannot be planted, publicly."""
        early = creation.run.start_delay > 0 and creation.plants
        return cls(creation, unplantable_rounds=0 if early else PLANT_DELAY_ROUNDS)

    def with_run(self, **changes: Any) -> EconomicTerms:
        """These terms with some RunTerms fields changed (`terms.with_run(verifiers_per_commitment=5)`)."""
        return replace(self, creation=self.creation.with_run(**changes))

    def with_plant(self, *, pool: int | None = None, **changes: Any) -> EconomicTerms:
        """These terms with some PlantTerms fields changed, and the plant pool if `pool` is given."""
        return replace(self, creation=self.creation.with_plant(pool=pool, **changes))

    @property
    def run(self) -> RunTerms:
        return self.creation.run

    @property
    def plant(self) -> PlantTerms:
        return self.creation.plant

    @property
    def plant_pool(self) -> int:
        """The plant pool the run starts with (Plants.setTerms' value): it pays every jackpot."""
        return self.creation.plant_pool

    @property
    def inner_steps(self) -> int:
        """H."""
        return self.run.inner_steps

    @property
    def steps_per_segment(self) -> int:
        """k."""
        return self.run.steps_per_segment

    @property
    def samples(self) -> int:
        """s: the segments each seat samples (samples_per_commitment)."""
        return self.run.samples_per_commitment

    @property
    def seats(self) -> int:
        """v: the seats of a commitment (verifiers_per_commitment)."""
        return self.run.verifiers_per_commitment

    @property
    def rounds(self) -> int:
        """The run's length (max_rounds)."""
        return self.run.max_rounds

    def get_seed_draws(self, draws: int) -> int:
        """The seeds a producer of the seed block that tries `draws` candidates actually picks from: all of them
        under a blockhash seed, at most RANDAO_SEED_DRAWS under a RANDAO one (publish its block or withhold it)."""
        if draws < 1:
            raise EconomicsError(f"a re-rolling producer draws at least one seed, got {draws}")
        return min(draws, RANDAO_SEED_DRAWS) if self.seed_from_randao else draws

    @property
    def num_segments(self) -> int:
        return self.run.num_segments

    @property
    def plant_rate(self) -> Fraction:
        return Fraction(self.plant.rate_bps, BPS_DENOMINATOR)

    @property
    def unplantable_share(self) -> Fraction:
        """u: the share of a run's rounds in which no commitment can be planted, known to everyone in advance."""
        return Fraction(min(self.unplantable_rounds, self.rounds), self.rounds)

    @property
    def planted_share(self) -> Fraction:
        """rho': the probability that a commitment of a round drawn at random from the run is planted, rho x (1 - u)."""
        return self.plant_rate * (1 - self.unplantable_share)

    def get_needed(self, verifiers: int) -> int:
        """Verification's `needed` (protocol.types.get_needed_seats): a strict majority of min(v, listed verifiers)."""
        return min(self.seats, verifiers) // 2 + 1


@dataclass(frozen=True)
class Population:
    """Who plays: M solvers, the verifier list, the juror registry, the whistleblowers' re-check fraction F of the
    passes (fails are their solvers' to challenge), the disputes per round jurors decide without any deviant, and the
    probability that a planted commitment's plant is checked (a whistleblower replays one opened draw with the
    revealed secret; every `whistleblower watch` checks every plant, whatever F). `seat_plant_check`: every seat holder
    of a planted commitment replays its own draws with the revealed secret and disputes a false plant (built in issue
    37: node/plant_checks.py `PlantDefence`, run by every honest verifier node; False prices the rules before it).
    Seat holders are verifiers doing their own seats' work, not watchers: nobody watching leaves it on."""

    solvers: int
    verifiers: int
    jurors: int
    recheck_fraction: Fraction
    disputes_per_round: int = 1
    plant_check: Fraction = Fraction(1)
    seat_plant_check: bool = True

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
    solver_reward = Fraction(round_value * terms.run.solver_share_bps, BPS_DENOMINATOR * population.solvers)
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
    return terms.run.attestation_bond + terms.run.verifier_min_stake if overturned else terms.run.challenge_bond


def compute_unresolved_fee(terms: EconomicTerms) -> int:
    """What a challenger loses when its dispute ends without a verdict after every appeal (Disputes.expire)."""
    return terms.run.challenge_bond * UNRESOLVED_CHALLENGE_FEE_BPS // BPS_DENOMINATOR


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
    return terms.run.attestation_bond + min(terms.plant.penalty, terms.run.verifier_min_stake)


def compute_planted_fail_gain(terms: EconomicTerms, pool: int) -> int:
    """A fail on a planted commitment earns the jackpot, or what is left of the pool."""
    return min(terms.plant.jackpot, max(pool, 0))


def compute_lazy_verifier_loss(terms: EconomicTerms) -> Fraction:
    """Wei a verifier passing without replaying loses per seat from plants, against an honest one:
    rho' x (bond + penalty + jackpot) (docs/planted-faults.md, Attacks), rho' the planted share of commitments."""
    return terms.planted_share * (compute_planted_pass_loss(terms) + terms.plant.jackpot)


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
        value * terms.run.solver_share_bps / m, value * terms.run.verifier_share_bps / (m * terms.seats),
        value * terms.run.juror_share_bps, cost, cost * terms.samples * terms.steps_per_segment / terms.inner_steps,
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


def compute_verification_cost_ratio(terms: EconomicTerms, population: Population) -> Fraction:
    """Replayed inner steps per trained one: every seat replays s segments of k steps, whistleblowers re-check a
    fraction F of the passes (all seats of unplanted commitments when everyone is honest; a planted seat is decided by
    the reveal) the same way and replay one segment of each planted commitment (the plant check); with seat holders
    checking plants (`seat_plant_check`, as built), each seat of a planted commitment replays its s draws once more
    with the revealed secret. Self-defence replays one segment per fail on honest work, which honest verifiers
    never send."""
    rho = terms.planted_share
    seat = terms.samples * terms.steps_per_segment
    replays = terms.seats * seat * (1 + population.recheck_fraction * (1 - rho) + rho * population.seat_plant_check)
    replays += rho * population.plant_check * terms.steps_per_segment
    return replays / terms.inner_steps


def compute_whistleblower_income(
    terms: EconomicTerms, population: Population, valuation: Valuation, fraction: Fraction | None = None
) -> Fraction:
    """Wei per round an honest whistleblower earns re-checking a fraction F (default: the population's) of the passes
    while everyone is honest: no challenge ever wins, and nothing pays a re-check (docs/economics.md, Paid watching),
    so it is minus the replays, -F x M x v x (1 - rho') x (a seat's replay)."""
    f = population.recheck_fraction if fraction is None else Fraction(fraction)
    r = get_rewards(terms, population, valuation)
    return -f * population.solvers * terms.seats * (1 - terms.planted_share) * r.seat_replay


def compute_plant_check_income(terms: EconomicTerms, population: Population, valuation: Valuation) -> Fraction:
    """Wei per round the plant checks cost while every plant is true: one segment per planted commitment checked."""
    r = get_rewards(terms, population, valuation)
    return -terms.planted_share * population.solvers * population.plant_check * r.segment_replay


def compute_honest_verifier_income(terms: EconomicTerms, population: Population, valuation: Valuation) -> Fraction:
    """Wei per round of an honest verifier: R_v per seat, the jackpot of each planted seat, minus its replays."""
    r = get_rewards(terms, population, valuation)
    return r.seats_per_verifier * (r.seat + terms.planted_share * terms.plant.jackpot - r.seat_replay)


def compute_honest_solver_income(terms: EconomicTerms, population: Population, valuation: Valuation) -> Fraction:
    """Wei per round of an honest solver among honest parties: R_s - C (no fail on its work, so no self-defence)."""
    r = get_rewards(terms, population, valuation)
    return r.solver - r.round_compute


PRODUCTION_POPULATION = Population(solvers=16, verifiers=32, jurors=100, recheck_fraction=Fraction(0))
"""Who plays the production preset (protocol.run_presets.PRODUCTION, H=500, k=10): 16 solvers, 32 verifiers, 100
registered jurors; nobody re-checks passes (F = 0: nothing pays a re-check, so deterrence must not rely on one), and
some whistleblower checks one opened draw of every planted commitment (plant_check = 1; bench/economics.py also prices
every row with nobody checking plants)."""
PRODUCTION_ROUND_VALUE = 10 * ETH
DEMO_POPULATION = Population(solvers=4, verifiers=6, jurors=30, recheck_fraction=Fraction(0))
"""The demos' terms are played by this population: M=4 as in the adversarial demo, more verifiers and a juror
registry large enough that "x% of the registry" is a number of jurors; F = 0 as in production."""
DEMO_ROUND_VALUE = ETH
COMPUTE_SHARE = Fraction(1, 2)
"""A round of training costs half of the solver's round reward (C = R_s / 2) unless a bench run says otherwise."""
WATCH_FRACTIONS = (Fraction(0), Fraction(1, 10), Fraction(1, 4), Fraction(1, 2), Fraction(1))
"""The pass re-check fractions F the bench prices the whistleblower's income at (`whistleblower_income_by_f`)."""
