"""The incentive model (protocol/economics.py, docs/economics.md): payoffs that match the contracts' arithmetic,
distributions that are distributions, and the attacks of issue 17 priced at the default terms.

Each attack test first shows the strategy paying under terms that lack the defence (no plants, no plant checks, the
old 2 ETH demo challenge bond), then losing under the terms the demos and the production preset use.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from devnet.runs import PRODUCTION_INNER_STEPS, PRODUCTION_RULES, PRODUCTION_STEPS_PER_SEGMENT, RunRules
from gradledger.adversarial_demo import ADVERSARIAL_RULES
from gradledger.demo import DEMO_INNER_STEPS, DEMO_RULES
from protocol.constants import BPS_DENOMINATOR, JUROR_REWARD_BPS, WINNER_REWARD_BPS
from protocol.economics import (
    COMPUTE_SHARE,
    DEMO_POPULATION,
    DEMO_ROUND_VALUE,
    ETH,
    PRODUCTION_POPULATION,
    PRODUCTION_ROUND_VALUE,
    STRATEGIES,
    EconomicsError,
    EconomicTerms,
    Population,
    Strategy,
    build_valuation,
    compute_dispute_payout,
    compute_expectation,
    compute_fake_catch_probability,
    compute_fault_reward,
    compute_jury_odds,
    compute_verification_cost_ratio,
    get_fake_mixture,
    get_seat_overlap,
)

DEMO = EconomicTerms.from_rules(DEMO_RULES, DEMO_INNER_STEPS, 5)
ADVERSARIAL = EconomicTerms.from_rules(ADVERSARIAL_RULES, DEMO_INNER_STEPS, 5)
PRODUCTION = EconomicTerms.from_rules(PRODUCTION_RULES, PRODUCTION_INNER_STEPS, PRODUCTION_STEPS_PER_SEGMENT)
DEFAULTS = {
    "demo": (DEMO, DEMO_POPULATION, DEMO_ROUND_VALUE),
    "adversarial-demo": (ADVERSARIAL, DEMO_POPULATION, DEMO_ROUND_VALUE),
    "production": (PRODUCTION, PRODUCTION_POPULATION, PRODUCTION_ROUND_VALUE),
}


def profit(strategy: Strategy, terms: EconomicTerms, population: Population, round_value: int) -> Fraction:
    valuation = build_valuation(terms, population, round_value, COMPUTE_SHARE)
    return compute_expectation(strategy, terms, population, valuation).profit


def strategy(kind: str) -> Strategy:
    return next(s for s in STRATEGIES if s.kind == kind)


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


def test_terms_with_shares_not_adding_up_raise():
    with pytest.raises(EconomicsError, match="10,000 bps"):
        replace(DEMO, juror_share_bps=DEMO.juror_share_bps + 1)


def test_terms_with_h_not_a_multiple_of_k_raise():
    with pytest.raises(EconomicsError, match="multiple of k"):
        EconomicTerms.from_rules(DEMO_RULES, 21, 5)


# -- the defaults: no dishonest strategy pays ----------------------------------------------------------------------


@pytest.mark.parametrize("preset", sorted(DEFAULTS))
def test_every_counted_dishonest_strategy_loses_at_the_default_terms(preset):
    terms, population, value = DEFAULTS[preset]
    for s in STRATEGIES:
        if s.dishonest and not s.excluded:
            assert profit(s, terms, population, value) < 0, (preset, s.name)


def test_every_strategy_of_the_issue_is_present_and_counted():
    kinds = {s.kind for s in STRATEGIES if not s.excluded}
    assert {"honest_solver", "fake", "withhold", "copy_root", "lazy", "collude", "preempt", "sybil_jurors",
            "silent_juror"} <= kinds  # fmt: skip
    assert len({s.fraction for s in STRATEGIES if s.kind == "fake"}) >= 3
    assert all(s.excluded for s in STRATEGIES if s.kind == "sybil_jurors" and s.share >= Fraction(1, 2))


def test_production_replays_at_most_a_tenth_of_the_training():
    assert compute_verification_cost_ratio(PRODUCTION, PRODUCTION_POPULATION) <= Fraction(1, 10)


# -- attacks: each pays without its defence and loses with it -------------------------------------------------------


def test_lazy_verifier_pays_without_plants_and_loses_with_them():
    lazy = strategy("lazy")
    unplanted = replace(PRODUCTION, plant=replace(PRODUCTION.plant, rate_bps=0))
    assert profit(lazy, unplanted, PRODUCTION_POPULATION, PRODUCTION_ROUND_VALUE) > 0  # the verifier's dilemma
    assert profit(lazy, PRODUCTION, PRODUCTION_POPULATION, PRODUCTION_ROUND_VALUE) < 0


def test_forged_plant_pays_without_plant_checks_and_loses_with_them():
    forge = next(s for s in STRATEGIES if s.kind == "forge_plant" and s.fraction == 1)
    unchecked = replace(DEMO_POPULATION, plant_check=Fraction(0))
    assert profit(forge, DEMO, unchecked, DEMO_ROUND_VALUE) > 0
    assert profit(forge, DEMO, DEMO_POPULATION, DEMO_ROUND_VALUE) < 0


def test_preemptive_challenger_pays_with_the_old_demo_bond_and_loses_with_the_new():
    preempt = strategy("preempt")
    old = EconomicTerms.from_rules(replace(DEMO_RULES, challenge_bond_wei=RunRules().challenge_bond_wei), 20, 5)
    assert profit(preempt, old, DEMO_POPULATION, DEMO_ROUND_VALUE) > 0
    assert profit(preempt, DEMO, DEMO_POPULATION, DEMO_ROUND_VALUE) < 0


def test_griefing_plant_costs_the_solver_and_harms_verifiers():
    grief = strategy("grief_plant")
    valuation = build_valuation(DEMO, DEMO_POPULATION, DEMO_ROUND_VALUE, COMPUTE_SHARE)
    expectation = compute_expectation(grief, DEMO, DEMO_POPULATION, valuation)
    assert (
        expectation.profit < 0
        and expectation.harm > 0
        and expectation.caught
        == DEMO.plant_rate * 1 * (compute_jury_odds(DEMO_POPULATION.jurors, 0, DEMO.jury_size).truth)
    )


def test_plant_checks_add_one_segment_per_planted_commitment():
    unchecked = replace(PRODUCTION_POPULATION, plant_check=Fraction(0))
    extra = compute_verification_cost_ratio(PRODUCTION, PRODUCTION_POPULATION) - compute_verification_cost_ratio(
        PRODUCTION, unchecked
    )
    assert extra == PRODUCTION.plant_rate * PRODUCTION.steps_per_segment / PRODUCTION.inner_steps
