"""The incentive model's payoffs and distributions (protocol/economics.py, docs/economics.md): payoffs that match the
contracts' arithmetic, distributions that are distributions, and the honest roles' incomes and verification cost at
the default terms. The strategies priced with them: tests/protocol/test_economics_strategies.py."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol import run_presets
from protocol.constants import BPS_DENOMINATOR, JUROR_REWARD_BPS, PLANT_DELAY_ROUNDS, WINNER_REWARD_BPS
from protocol.economics import (
    COMPUTE_SHARE,
    DEMO_POPULATION,
    DEMO_ROUND_VALUE,
    ETH,
    PRODUCTION_POPULATION,
    PRODUCTION_ROUND_VALUE,
    RANDAO_SEED_DRAWS,
    WATCH_FRACTIONS,
    EconomicsError,
    EconomicTerms,
    build_valuation,
    compute_dispute_payout,
    compute_fake_catch_probability,
    compute_fault_reward,
    compute_honest_solver_income,
    compute_honest_verifier_income,
    compute_jury_odds,
    compute_plant_check_income,
    compute_verification_cost_ratio,
    compute_whistleblower_income,
    get_fake_mixture,
    get_seat_overlap,
)
from protocol.types import get_needed_seats

DEMO = EconomicTerms.from_creation(run_presets.DEMO)
PRODUCTION = EconomicTerms.from_creation(run_presets.PRODUCTION)
PRODUCTION_VALUATION = build_valuation(PRODUCTION, PRODUCTION_POPULATION, PRODUCTION_ROUND_VALUE, COMPUTE_SHARE)
DEMO_VALUATION = build_valuation(DEMO, DEMO_POPULATION, DEMO_ROUND_VALUE, COMPUTE_SHARE)


# -- payoffs of single outcomes: the contracts' integer arithmetic, every wei accounted for -----------------------


@given(st.integers(0, 10**30), st.integers(1, 21))
def test_dispute_payout_conserves_the_total(total, signers):
    payout = compute_dispute_payout(total, signers)
    assert payout.to_winner + payout.per_juror * signers + payout.to_pool == total
    assert payout.to_winner == total * WINNER_REWARD_BPS // BPS_DENOMINATOR and payout.to_pool >= 0
    assert payout.per_juror * signers <= total * JUROR_REWARD_BPS // BPS_DENOMINATOR


@given(st.integers(0, 10**30), st.integers(0, 8))
def test_fault_reward_conserves_the_slash(taken, provers):
    per_prover, to_pool = compute_fault_reward(taken, provers)
    assert per_prover * provers + to_pool == taken and to_pool >= 0


def test_dispute_payout_without_signers_raises():
    with pytest.raises(EconomicsError, match="at least one signer"):
        compute_dispute_payout(ETH, 0)


# -- distributions ---------------------------------------------------------------------------------------------


@given(st.fractions(0, 1, max_denominator=100), st.integers(1, 60))
def test_fake_mixture_fakes_f_of_the_segments_on_average(f, segments):
    mixture = get_fake_mixture(f, segments)
    assert sum(w for _, w in mixture) == 1 and all(0 <= k <= segments for k, _ in mixture)
    assert sum(k * w for k, w in mixture) == f * segments


@given(st.integers(1, 40), st.data())
def test_seat_overlap_is_hypergeometric(verifiers, data):
    seats = data.draw(st.integers(1, min(verifiers, 8)))
    coalition = data.draw(st.integers(0, verifiers))
    overlap = get_seat_overlap(verifiers, coalition, seats)
    assert sum(overlap) == 1
    assert sum(j * q for j, q in enumerate(overlap)) == Fraction(seats * coalition, verifiers)


@pytest.mark.parametrize(("registry", "coalition", "jury"), [(30, 0, 3), (30, 10, 3), (100, 33, 15), (100, 50, 15)])
def test_jury_odds_add_up(registry, coalition, jury):
    odds = compute_jury_odds(registry, coalition, jury)
    assert odds.truth + odds.coalition + odds.unresolved == 1
    assert (odds.coalition == 0) == (coalition == 0)
    withheld = compute_jury_odds(registry, coalition, jury, coalition_votes=False)
    assert withheld.coalition == 0 and withheld.truth >= odds.truth  # a captured jury is appealed instead


def test_fake_catch_probability_of_everything_faked_is_one():
    assert compute_fake_catch_probability(DEMO, Fraction(1), DEMO.seats) == 1
    assert compute_fake_catch_probability(DEMO, Fraction(0), DEMO.seats) == 0


# -- terms -------------------------------------------------------------------------------------------------------


def test_terms_with_shares_not_adding_up_raise():
    with pytest.raises(EconomicsError, match="10,000 bps"):
        DEMO.with_run(juror_share_bps=DEMO.run.juror_share_bps + 1)


def test_terms_with_h_not_a_multiple_of_k_raise():
    with pytest.raises(EconomicsError, match="multiple of k"):
        EconomicTerms.from_creation(run_presets.DEMO.with_run(inner_steps=21))


@given(st.integers(1, 8), st.integers(1, 64))
def test_needed_seats_is_the_contracts_strict_majority(seats, verifiers):
    terms = DEMO.with_run(verifiers_per_commitment=seats)
    assert terms.get_needed(verifiers) == get_needed_seats(seats, verifiers)
    assert 2 * terms.get_needed(verifiers) > min(seats, verifiers)


@given(st.integers(1, 2000))
def test_the_first_rounds_of_a_run_without_a_start_delay_cannot_be_planted(rounds):
    terms = replace(DEMO.with_run(max_rounds=rounds), unplantable_rounds=PLANT_DELAY_ROUNDS)
    assert terms.unplantable_share == Fraction(min(PLANT_DELAY_ROUNDS, rounds), rounds)
    assert terms.planted_share == terms.plant_rate * (1 - terms.unplantable_share)
    assert replace(terms, unplantable_rounds=0).planted_share == terms.plant_rate


@pytest.mark.parametrize("preset", [run_presets.DEMO, run_presets.ADVERSARIAL, run_presets.PRODUCTION])
def test_a_run_that_plants_after_a_start_delay_plants_from_round_zero_and_one_without_from_round_two(preset):
    """from_creation follows Plants: terms set before the start (devnet sends setTerms right after createRun, so any
    start delay) make every round plantable; no delay, or no planting, leaves PLANT_DELAY_ROUNDS unplantable."""
    assert preset.run.start_delay > 0 and preset.plant.rate_bps > 0  # every preset plants from round 0
    assert EconomicTerms.from_creation(preset).unplantable_rounds == 0
    for other in (preset.with_run(start_delay=0), preset.with_plant(rate_bps=0)):
        assert EconomicTerms.from_creation(other).unplantable_rounds == PLANT_DELAY_ROUNDS
    assert EconomicTerms.from_creation(preset.with_run(start_delay=1)).unplantable_share == 0


@given(st.integers(1, 2**40))
def test_a_randao_seed_leaves_a_producer_two_seeds_whatever_it_grinds_and_a_blockhash_seed_all(draws):
    assert DEMO.seed_from_randao and PRODUCTION.seed_from_randao  # the protocol's rule (Verification.drawSeed)
    assert DEMO.get_seed_draws(draws) == min(draws, RANDAO_SEED_DRAWS) == min(draws, 2)
    assert replace(DEMO, seed_from_randao=False).get_seed_draws(draws) == draws


def test_a_producer_draws_at_least_one_seed():
    with pytest.raises(EconomicsError, match="at least one seed"):
        DEMO.get_seed_draws(0)


# -- the honest roles and the cost of verification at the default terms -----------------------------------------


def test_production_replays_at_most_a_tenth_of_the_training():
    assert compute_verification_cost_ratio(PRODUCTION, PRODUCTION_POPULATION) <= Fraction(1, 10)


def test_plant_checks_add_one_segment_per_planted_commitment():
    unchecked = replace(PRODUCTION_POPULATION, plant_check=Fraction(0))
    extra = compute_verification_cost_ratio(PRODUCTION, PRODUCTION_POPULATION) - compute_verification_cost_ratio(
        PRODUCTION, unchecked
    )
    assert extra == PRODUCTION.planted_share * PRODUCTION.steps_per_segment / PRODUCTION.inner_steps


def test_seat_holders_checking_plants_replay_each_planted_seat_once_more():
    seat_checks = PRODUCTION_POPULATION
    assert seat_checks.seat_plant_check, "built: node/plant_checks.py"
    extra = compute_verification_cost_ratio(PRODUCTION, seat_checks) - compute_verification_cost_ratio(
        PRODUCTION, replace(PRODUCTION_POPULATION, seat_plant_check=False)
    )
    seat = PRODUCTION.samples * PRODUCTION.steps_per_segment
    assert extra == PRODUCTION.planted_share * PRODUCTION.seats * seat / PRODUCTION.inner_steps
    assert compute_verification_cost_ratio(PRODUCTION, seat_checks) <= Fraction(1, 10)


def test_the_presets_rely_on_no_unpaid_pass_rechecks():
    assert PRODUCTION_POPULATION.recheck_fraction == DEMO_POPULATION.recheck_fraction == 0
    assert compute_whistleblower_income(PRODUCTION, PRODUCTION_POPULATION, PRODUCTION_VALUATION) == 0


@pytest.mark.parametrize(
    ("terms", "population", "valuation"),
    [(DEMO, DEMO_POPULATION, DEMO_VALUATION), (PRODUCTION, PRODUCTION_POPULATION, PRODUCTION_VALUATION)],
)
def test_watching_unpaid_costs_in_proportion_to_f_and_honest_roles_earn(terms, population, valuation):
    incomes = [compute_whistleblower_income(terms, population, valuation, f) for f in WATCH_FRACTIONS]
    assert incomes[0] == 0 and all(a > b for a, b in pairwise(incomes))
    assert incomes[-1] == 4 * incomes[2] == 10 * incomes[1]  # linear in F: nothing pays a re-check
    assert compute_plant_check_income(terms, population, valuation) < 0
    assert compute_honest_solver_income(terms, population, valuation) > 0
    assert compute_honest_verifier_income(terms, population, valuation) > 0
