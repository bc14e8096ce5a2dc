"""Every strategy row of the economics bench, priced under issue 37's rules as built (protocol/economics_strategies.py,
docs/economics.md): what each defence buys, shown by pricing the attack without it and with it (the built rules --
plants from round 0 with a start delay, a RANDAO seed -- against the rules before them), the rows that still pay
(with nobody checking plants; only a rule change fixes them), and the agreement of the analytic rows with the
simulation that plays them with the protocol's own draws (bench/economics_sim.py)."""

from __future__ import annotations

import math
import statistics
from dataclasses import replace
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.economics_frontier import is_rule_bound, price_rule_fixes
from bench.economics_sim import Preset, Simulation, get_roles
from protocol import run_presets
from protocol.constants import PLANT_DELAY_ROUNDS
from protocol.economics import (
    COMPUTE_SHARE,
    DEMO_POPULATION,
    DEMO_ROUND_VALUE,
    ETH,
    PRODUCTION_POPULATION,
    PRODUCTION_ROUND_VALUE,
    WATCH_FRACTIONS,
    EconomicTerms,
    Population,
    build_valuation,
    compute_honest_solver_income,
    compute_jury_odds,
    get_rewards,
)
from protocol.economics_strategies import (
    GRINDING_DRAWS,
    JURY_TRUST_SHARE,
    STRATEGIES,
    Strategy,
    compute_break_even_value,
    compute_expectation,
    compute_griefed_solver_income,
    compute_one_segment_detection,
    get_exclusion,
)

DEMO = EconomicTerms.from_creation(run_presets.DEMO)
ADVERSARIAL = EconomicTerms.from_creation(run_presets.ADVERSARIAL)
PRODUCTION = EconomicTerms.from_creation(run_presets.PRODUCTION)
DEFAULTS = {
    "demo": (DEMO, DEMO_POPULATION, DEMO_ROUND_VALUE),
    "adversarial-demo": (ADVERSARIAL, DEMO_POPULATION, DEMO_ROUND_VALUE),
    "production": (PRODUCTION, PRODUCTION_POPULATION, PRODUCTION_ROUND_VALUE),
}


def profit(strategy: Strategy, terms: EconomicTerms, population: Population, round_value: int) -> Fraction:
    valuation = build_valuation(terms, population, round_value, COMPUTE_SHARE)
    return compute_expectation(strategy, terms, population, valuation).profit


def strategy(kind: str, **fields) -> Strategy:
    return next(s for s in STRATEGIES if s.kind == kind and all(getattr(s, k) == v for k, v in fields.items()))


def unwatched(population: Population) -> Population:
    return replace(population, recheck_fraction=Fraction(0), plant_check=Fraction(0))


def before_issue_37(terms: EconomicTerms) -> EconomicTerms:
    """The rules before plants from round 0 and the RANDAO seed: two unplantable rounds, a blockhash seed."""
    return replace(terms, unplantable_rounds=PLANT_DELAY_ROUNDS, seed_from_randao=False)


def preset_of(name: str, population: Population | None = None) -> Preset:
    terms, default, value = DEFAULTS[name]
    population = population or default
    return Preset(name, terms, population, build_valuation(terms, population, value, COMPUTE_SHARE))


# -- the rows ------------------------------------------------------------------------------------------------------


def test_every_strategy_of_issues_17_and_37_is_a_named_row():
    kinds = {s.kind for s in STRATEGIES}
    assert {"honest_solver", "fake", "withhold", "copy_root", "reroll_unopened", "reroll_seed", "poison", "lazy",
            "lazy_unplantable", "partial_lazy", "fail_all", "silent_griefer", "collude", "accomplice_skip", "preempt",
            "sybil_jurors", "silent_juror", "forge_plant", "grief_plant"} <= kinds  # fmt: skip
    assert {s.share for s in STRATEGIES if s.kind == "sybil_jurors"} == {Fraction(x, 100) for x in (10, 20, 30, 40, 50)}
    assert len({s.name for s in STRATEGIES}) == len(STRATEGIES)


@pytest.mark.parametrize("preset", sorted(DEFAULTS))
def test_sybil_jurors_below_a_third_are_counted_and_lose_and_above_are_listed_only(preset):
    terms, population, value = DEFAULTS[preset]
    for s in (s for s in STRATEGIES if s.kind == "sybil_jurors"):
        if s.share < JURY_TRUST_SHARE:
            assert not get_exclusion(s, terms) and profit(s, terms, population, value) < 0, s.name
        else:
            assert "trust assumption" in get_exclusion(s, terms), s.name


@pytest.mark.parametrize("preset", sorted(DEFAULTS))
def test_every_counted_row_loses_as_built_with_plant_checks(preset):
    """At F = 0 and every plant checked, as built (plants from round 0, a RANDAO seed), no counted row pays."""
    terms, population, value = DEFAULTS[preset]
    paying = {s.name for s in STRATEGIES if s.dishonest and not get_exclusion(s, terms)
              if profit(s, terms, population, value) >= 0}  # fmt: skip
    assert paying == set()
    assert not any(is_rule_bound(s, preset_of(preset)) for s in STRATEGIES)


@pytest.mark.parametrize("preset", sorted(DEFAULTS))
def test_with_nobody_watching_seat_holders_checking_plants_make_every_counted_row_lose(preset):
    """Without seat holders checking the plants of their seats (the rules before issue 37) the rows that pay with
    nobody watching are the plant rows, which no term deters (rule-bound); with them (as built: node/plant_checks.py)
    every counted row loses at F = 0 with no whistleblower."""
    terms, population, value = DEFAULTS[preset]
    nobody = unwatched(population)
    assert nobody.seat_plant_check, "seat holders are verifiers doing their own seats, not watchers"
    assert all(profit(s, terms, nobody, value) < 0 for s in STRATEGIES if s.dishonest and not get_exclusion(s, terms))
    before = replace(nobody, seat_plant_check=False)
    paying = {s for s in STRATEGIES if s.dishonest and not get_exclusion(s, terms)
              if profit(s, terms, before, value) >= 0}  # fmt: skip
    assert {s.kind for s in paying} == {"forge_plant", "grief_plant"}
    assert all(is_rule_bound(s, preset_of(preset, before)) for s in paying)


@pytest.mark.parametrize("preset", sorted(DEFAULTS))
def test_the_rule_fixes_price_the_built_rules_against_the_rules_before_them(preset):
    fixes = price_rule_fixes(preset_of(preset))
    assert fixes["as_built"]["status"] == "built" and fixes["as_built"]["best_dishonest_profit"] < 0
    assert fixes["as_built"]["best_dishonest_profit_no_watchers"] < 0
    assert fixes["before_issue_37_rules"]["best_dishonest_profit"] > 0
    unchecked = fixes["without_seat_plant_checks"]  # a forged plant nobody checks
    assert unchecked["status"] == "reference" and unchecked["best_dishonest_profit_no_watchers"] > 0


# -- R3: self-defence makes failing everything lose at F = 0 -------------------------------------------------------


@pytest.mark.parametrize("preset", sorted(DEFAULTS))
def test_failing_everything_loses_at_every_f_and_the_griefed_solver_keeps_its_income(preset):
    terms, population, value = DEFAULTS[preset]
    for f in WATCH_FRACTIONS:
        assert profit(strategy("fail_all"), terms, replace(population, recheck_fraction=f), value) < 0
    valuation = build_valuation(terms, population, value, COMPUTE_SHARE)
    honest = compute_honest_solver_income(terms, population, valuation)
    assert compute_griefed_solver_income(terms, population, valuation) >= Fraction(9, 10) * honest


@pytest.mark.parametrize("preset", sorted(DEFAULTS))
def test_a_griefed_solver_earns_more_than_its_replay_costs(preset):
    """The defence's cost is one segment's replay per false fail; the failer's forfeit pays the winner far more."""
    terms, population, value = DEFAULTS[preset]
    valuation = build_valuation(terms, population, value, COMPUTE_SHARE)
    assert compute_jury_odds(population.jurors, 0, terms.run.jury_size).truth > Fraction(99, 100)
    assert compute_griefed_solver_income(terms, population, valuation) > compute_honest_solver_income(
        terms, population, valuation
    )


# -- R1 and R4: silence is charged and counts against acceptance ---------------------------------------------------


@pytest.mark.parametrize("seats", [1, 2, 3, 4])
def test_a_silent_griefer_loses_and_harms_only_where_one_silent_seat_blocks_acceptance(seats):
    terms = PRODUCTION.with_run(verifiers_per_commitment=seats)
    population, value = PRODUCTION_POPULATION, PRODUCTION_ROUND_VALUE
    valuation = build_valuation(terms, population, value, COMPUTE_SHARE)
    expectation = compute_expectation(strategy("silent_griefer"), terms, population, valuation)
    assert expectation.profit < 0
    assert (expectation.harm > 0) == (seats <= 2)  # with 3 seats the other two are a majority


@pytest.mark.parametrize("preset", sorted(DEFAULTS))
def test_an_accomplice_that_abstains_loses_more_than_one_that_passes(preset):
    terms, population, value = DEFAULTS[preset]
    skip = profit(strategy("accomplice_skip"), terms, population, value)
    assert skip < 0 and skip <= profit(strategy("collude", share=Fraction(0)), terms, population, value) + ETH


# -- plants, and where nobody can be planted -----------------------------------------------------------------------


def test_lazy_verifier_pays_without_plants_and_loses_with_them():
    lazy = strategy("lazy")
    unplanted = PRODUCTION.with_plant(rate_bps=0)
    assert profit(lazy, unplanted, PRODUCTION_POPULATION, PRODUCTION_ROUND_VALUE) > 0  # the verifier's dilemma
    assert profit(lazy, PRODUCTION, PRODUCTION_POPULATION, PRODUCTION_ROUND_VALUE) < 0


@pytest.mark.parametrize("preset", sorted(DEFAULTS))
def test_laziness_where_plants_are_publicly_impossible_paid_until_plants_started_in_round_zero(preset):
    terms, population, value = DEFAULTS[preset]
    lazy = strategy("lazy_unplantable")
    old = before_issue_37(terms)  # terms set during round 0: rounds 0 and 1 publicly unplantable
    assert profit(lazy, old, population, value) > 0 and not get_exclusion(lazy, old)
    assert terms.unplantable_rounds == 0  # as built: every preset has a start delay
    assert profit(lazy, terms, population, value) == 0 and "honest play" in get_exclusion(lazy, terms)


def test_replaying_one_of_two_draws_pays_and_one_sample_per_seat_makes_it_honest_play():
    partial = strategy("partial_lazy")
    two_draws = DEMO.with_run(samples_per_commitment=2)  # the demos sampled twice per seat before issue 37
    assert profit(partial, two_draws, DEMO_POPULATION, DEMO_ROUND_VALUE) > 0
    assert DEMO.samples == 1 and get_exclusion(partial, DEMO)
    assert PRODUCTION.samples == 1 and get_exclusion(partial, PRODUCTION)
    assert profit(partial, PRODUCTION, PRODUCTION_POPULATION, PRODUCTION_ROUND_VALUE) == 0


def test_forged_plant_pays_without_plant_checks_and_loses_with_them_or_with_seat_holders_checking():
    forge = strategy("forge_plant", fraction=Fraction(1))
    assert profit(forge, DEMO, replace(unwatched(DEMO_POPULATION), seat_plant_check=False), DEMO_ROUND_VALUE) > 0
    assert profit(forge, DEMO, DEMO_POPULATION, DEMO_ROUND_VALUE) < 0
    seat_checks = replace(unwatched(DEMO_POPULATION), seat_plant_check=True)
    assert profit(forge, DEMO, seat_checks, DEMO_ROUND_VALUE) < 0


def test_a_false_plant_nobody_checks_griefs_for_free_and_seat_holders_checking_make_it_lose():
    grief = strategy("grief_plant")
    valuation = build_valuation(DEMO, DEMO_POPULATION, DEMO_ROUND_VALUE, COMPUTE_SHARE)
    free = compute_expectation(grief, DEMO, replace(unwatched(DEMO_POPULATION), seat_plant_check=False), valuation)
    assert free.profit == 0 and free.harm > 0
    seat_checks = replace(unwatched(DEMO_POPULATION), seat_plant_check=True)
    assert compute_expectation(grief, DEMO, seat_checks, valuation).profit < 0


def test_preemptive_challenger_pays_with_the_old_demo_bond_and_loses_with_the_new():
    preempt = strategy("preempt")
    old = EconomicTerms.from_creation(run_presets.DEMO.with_run(challenge_bond=run_presets.TINY.run.challenge_bond))
    assert profit(preempt, old, DEMO_POPULATION, DEMO_ROUND_VALUE) > 0
    assert profit(preempt, DEMO, DEMO_POPULATION, DEMO_ROUND_VALUE) < 0


# -- the seed: leaving a commitment unopened re-rolls nothing; a RANDAO seed leaves a producer one re-roll ------------


@pytest.mark.parametrize("preset", sorted(DEFAULTS))
def test_withholding_the_opening_is_no_reroll_one_reroll_loses_and_grinding_paid_only_a_blockhash_seed(preset):
    terms, population, value = DEFAULTS[preset]
    one_segment = Strategy("", "fake", segments=1)
    assert profit(strategy("reroll_unopened"), terms, population, value) == profit(
        one_segment, terms, population, value
    )
    assert profit(strategy("reroll_seed", draws=2), terms, population, value) < 0
    grinder = strategy("reroll_seed", share=Fraction(1, 10))
    assert grinder.draws == GRINDING_DRAWS and "RANDAO leaves it one re-roll" in grinder.name
    assert profit(grinder, terms, population, value) < 0 and not get_exclusion(grinder, terms)
    assert profit(grinder, replace(terms, seed_from_randao=False), population, value) > 0  # a blockhash seed


@pytest.mark.parametrize("preset", sorted(DEFAULTS))
@pytest.mark.parametrize("share", [Fraction(1, 10), Fraction(1)])
def test_a_randao_seed_caps_every_reroll_at_two_draws(preset, share):
    """A reroll_seed row trying 2**20 seeds prices like 2 under a RANDAO seed, and like 2**20 under a blockhash one."""
    terms, population, value = DEFAULTS[preset]
    row = Strategy("", "reroll_seed", Fraction(1, 2), share=share, draws=2**20)
    blockhash = replace(terms, seed_from_randao=False)
    assert profit(row, terms, population, value) == profit(replace(row, draws=2), terms, population, value)
    assert profit(row, blockhash, population, value) > profit(replace(row, draws=2), blockhash, population, value)
    assert profit(replace(row, draws=2), blockhash, population, value) == profit(row, terms, population, value)


# -- a value-driven cheat: poisoning one segment -----------------------------------------------------------------


def test_production_break_even_value_of_a_one_segment_cheat_is_at_least_the_rounds_value():
    valuation = build_valuation(PRODUCTION, PRODUCTION_POPULATION, PRODUCTION_ROUND_VALUE, COMPUTE_SHARE)
    assert compute_break_even_value(PRODUCTION, PRODUCTION_POPULATION, valuation) >= PRODUCTION_ROUND_VALUE
    assert profit(strategy("poison"), PRODUCTION, PRODUCTION_POPULATION, PRODUCTION_ROUND_VALUE) < 0


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 400), st.sampled_from([5, 10, 25, 50]))
def test_poisoning_pays_exactly_above_the_break_even_value(samples, seats, stake, k):
    terms = PRODUCTION.with_run(
        samples_per_commitment=samples, verifiers_per_commitment=seats, solver_min_stake=stake * ETH,
        steps_per_segment=k,
    )  # fmt: skip
    valuation = build_valuation(terms, PRODUCTION_POPULATION, PRODUCTION_ROUND_VALUE, COMPUTE_SHARE)
    value, p = compute_break_even_value(terms, PRODUCTION_POPULATION, valuation), compute_one_segment_detection(terms)
    assert (1 - p) * value == p * (get_rewards(terms, PRODUCTION_POPULATION, valuation).solver + stake * ETH)
    poison = compute_expectation(strategy("poison"), terms, PRODUCTION_POPULATION, valuation).profit  # V = 10 ETH
    assert (poison < 0) == (valuation.round_value < value)


# -- the analytic rows agree with the simulation ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "fields", "old_rules"),
    [
        ("fail_all", {}, False),
        ("lazy", {}, False),
        ("silent_griefer", {}, False),
        ("accomplice_skip", {}, False),
        ("reroll_unopened", {}, False),
        ("reroll_seed", {"share": Fraction(1, 10)}, False),  # grinding, capped by RANDAO at one re-roll
        ("lazy_unplantable", {}, True),  # the rules before a start delay: rounds 0 and 1 publicly unplantable
    ],
)
def test_the_analytic_rows_agree_with_the_simulation(kind, fields, old_rules):
    """The demo preset, 600 rounds played twice on the same draws (honest, then deviating): the simulated mean profit
    is within 4 standard errors (plus the solver-bucket rounding) of the analytic expectation."""
    terms, population, value = DEFAULTS["demo"]
    terms = before_issue_37(terms) if old_rules else terms
    preset = Preset("demo", terms, population, build_valuation(terms, population, value, COMPUTE_SHARE))
    row = strategy(kind, **fields)
    players = frozenset(get_roles(preset, row))
    rounds = 600
    base = Simulation(preset, None, rounds, seed=5).play({"p": players})["p"]
    dev = Simulation(preset, row, rounds, seed=5).play({"p": players})["p"]
    diffs = [d - b for d, b in zip(dev, base, strict=True)]
    stderr = statistics.stdev(diffs) / math.sqrt(rounds) if any(diffs) else 0
    expected = compute_expectation(row, terms, population, preset.valuation).profit
    assert expected != 0
    assert abs(statistics.fmean(diffs) - expected) <= 4 * stderr + ETH // 1000, (
        kind,
        statistics.fmean(diffs),
        expected,
    )
