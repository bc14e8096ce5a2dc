"""What bench/economics.py derives from the analytic model, and its PNG: break-even stakes, the best counted row,
the rule fixes priced, the deterrence frontier, the break-even value of a one-segment cheat against the verification
cost, and the plot of all of it."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from bench.economics_sim import Preset
from protocol.constants import PLANT_DELAY_ROUNDS
from protocol.economics import (
    ETH,
    RANDAO_SEED_DRAWS,
    EconomicTerms,
    compute_verification_cost_ratio,
    get_rewards,
)
from protocol.economics_strategies import (
    STRATEGIES,
    Strategy,
    compute_break_even_value,
    compute_expectation,
    get_exclusion,
)


def _eth(wei: Fraction | int) -> float:
    return float(Fraction(wei) / ETH)


def no_watchers(preset: Preset) -> Preset:
    """The preset with nobody watching: no pass re-checks (F = 0) and no plant checks."""
    return replace(preset, population=replace(preset.population, recheck_fraction=Fraction(0), plant_check=Fraction(0)))


def is_rule_bound(strategy: Strategy, preset: Preset) -> bool:
    """Rows no economic term deters at the preset's rules and watchers, only a rule change: lazy passes where plants
    are publicly impossible (a run with unplantable rounds: its terms set after the start), a producer grinding a
    blockhash seed (more candidates than RANDAO_SEED_DRAWS count only without a RANDAO seed), and the plant rows while
    nobody checks plants (with no check nothing at stake is ever lost: a forged plant pays rho' f C whatever the
    stakes, a false one griefs for free; seat holders checking plants would fix them, docs/economics.md). As built
    (start delays, a RANDAO seed) and at the presets' assumptions (every plant checked) no counted row is rule-bound;
    the deterrence frontier prices the terms against every other counted row."""
    terms, population = preset.terms, preset.population
    if strategy.kind == "lazy_unplantable":
        return terms.unplantable_share > 0
    if strategy.kind == "reroll_seed":
        return terms.get_seed_draws(strategy.draws) > RANDAO_SEED_DRAWS
    if strategy.kind in ("forge_plant", "grief_plant"):
        return population.plant_check == 0 and not population.seat_plant_check
    return False


# ---------------------------------------------------------------------------------------
# Analysis: break-even stakes, honest incomes, best rows, rule fixes, the frontiers

STAKE_FIELDS = {
    "fake": "solver_min_stake", "withhold": "solver_min_stake", "copy_root": "solver_min_stake",
    "reroll_unopened": "solver_min_stake", "reroll_seed": "solver_min_stake", "poison": "solver_min_stake",
    "collude": "solver_min_stake", "accomplice_skip": "solver_min_stake", "forge_plant": "solver_min_stake",
    "lazy": "verifier_min_stake", "fail_all": "verifier_min_stake", "silent_griefer": "attestation_bond",
    "preempt": "challenge_bond", "sybil_jurors": "challenge_bond",
}  # fmt: skip
"""The stake each strategy puts at risk (a verifier's plant penalty scales with its stake); others risk none."""


def profit_of(strategy: Strategy, preset: Preset) -> Fraction:
    return compute_expectation(strategy, preset.terms, preset.population, preset.valuation).profit


def with_stake(terms: EconomicTerms, field: str, value: int) -> EconomicTerms:
    if field != "verifier_min_stake":
        stake: dict[str, Any] = {field: value}  # a field named at run time: mypy cannot check it by name
        return terms.with_run(**stake)
    penalty = terms.plant.penalty * value // terms.run.verifier_min_stake if terms.run.verifier_min_stake else 0
    return replace(terms, creation=terms.creation.with_run(verifier_min_stake=value).with_plant(penalty=penalty))


def compute_break_even_stake(strategy: Strategy, preset: Preset) -> tuple[str, int | None]:
    """The smallest stake (wei, of STAKE_FIELDS[kind]) at which the expected profit is <= 0, by bisection (profit
    falls with the stake): ("pays_below", stake), ("never_pays", None) when it does not pay even with no stake,
    ("always_pays", None) when no stake stops it."""
    field = STAKE_FIELDS.get(strategy.kind)

    def profit(stake: int | None) -> Fraction:
        terms = preset.terms if stake is None or field is None else with_stake(preset.terms, field, stake)
        return profit_of(strategy, replace(preset, terms=terms))

    if field is None or profit(0) <= 0:
        return ("always_pays" if field is None and profit(None) > 0 else "never_pays"), None
    low, high = 0, max(getattr(preset.terms.run, field), ETH)
    while profit(high) > 0:
        low, high = high, high * 2
        if high > 2**128:
            return "always_pays", None
    while high - low > max(1, high // 10**9):
        middle = (low + high) // 2
        low, high = (middle, high) if profit(middle) > 0 else (low, middle)
    return "pays_below", high


def get_best(preset: Preset, strategies: tuple[Strategy, ...] = STRATEGIES, counted_only: bool = True,
             skip_rule_bound: bool = False) -> tuple[Fraction, str]:  # fmt: skip
    rows = [
        s for s in strategies
        if s.dishonest and (not counted_only or not get_exclusion(s, preset.terms))
        and not (skip_rule_bound and is_rule_bound(s, preset))
    ]  # fmt: skip
    return max((profit_of(s, preset), s.name) for s in rows)


RULE_FIX_STATUS = {
    "as_built": "built",
    "before_issue_37_rules": "reference",
    "without_plants_from_round_zero": "reference",
    "without_seed_from_randao": "reference",
    "without_seat_plant_checks": "reference",
}
"""Each priced rule set: the protocol as built (plants from round 0 with a start delay, a RANDAO seed), the built
rules taken back for reference (both, or one at a time), and each rule change still open applied to what is built."""


def price_rule_fixes(preset: Preset) -> dict[str, Any]:
    """The best counted row (and its verification cost) under each rule set of RULE_FIX_STATUS, at the presets'
    assumptions and with nobody watching. Built: plants from round 0 (the preset's start delay: no unplantable
    round), the seed from the seed block's RANDAO value (a producer can only withhold its block: one re-roll), and
    seat holders checking the plants of their seats (node/plant_checks.py: each verifier replays its seats' draws of a
    planted commitment with the revealed secret and disputes a false plant, KIND_PLANT), which is what decides the
    plant rows with nobody watching. `before_issue_37_rules` takes all three back (PLANT_DELAY_ROUNDS unplantable
    rounds, a blockhash seed, no seat checks; every other term as built), the `without_` rows one at a time."""
    built = preset.terms
    old_plants = replace(built, unplantable_rounds=PLANT_DELAY_ROUNDS)
    no_seat_checks = replace(preset.population, seat_plant_check=False)
    variants: dict[str, Preset] = {
        "as_built": preset,
        "before_issue_37_rules": replace(
            preset, terms=replace(old_plants, seed_from_randao=False), population=no_seat_checks
        ),
        "without_plants_from_round_zero": replace(preset, terms=old_plants),
        "without_seed_from_randao": replace(preset, terms=replace(built, seed_from_randao=False)),
        "without_seat_plant_checks": replace(preset, population=no_seat_checks),
    }
    out = {}
    for name, p in variants.items():
        best, who = get_best(p)
        best_nw, who_nw = get_best(no_watchers(p))
        out[name] = {
            "status": RULE_FIX_STATUS[name],
            "best_dishonest_profit": _eth(best),
            "strategy": who,
            "best_dishonest_profit_no_watchers": _eth(best_nw),
            "strategy_no_watchers": who_nw,
            "verification_cost_ratio": float(compute_verification_cost_ratio(p.terms, p.population)),
        }
    return out


def sweep_frontier(base: Preset, quick: bool) -> list[dict[str, Any]]:
    """Verification compute against the best counted cheat a term can deter (rule-bound rows left out), over seats,
    samples, k, F and the plant rate (H fixed)."""
    grid = [
        (k, s, v, f, rate)
        for k in ((10, 25) if quick else (5, 10, 25, 50))
        for s in (1, 2)
        for v in (1, 2, 3, 4)
        for f in ((Fraction(0), Fraction(1, 2)) if quick else (Fraction(0), Fraction(1, 4), Fraction(1, 2)))
        for rate in ((0, 100) if quick else (0, 100, 500))
    ]
    points = []
    for k, s, v, f, rate in grid:
        terms = base.terms.with_run(
            steps_per_segment=k, samples_per_commitment=s, verifiers_per_commitment=v
        ).with_plant(rate_bps=rate)
        preset = replace(base, terms=terms, population=replace(base.population, recheck_fraction=f))
        best, name = get_best(preset, skip_rule_bound=True)
        ratio = compute_verification_cost_ratio(terms, preset.population)
        solver = get_rewards(terms, preset.population, preset.valuation).solver
        points.append({"k": k, "samples": s, "seats": v, "recheck_fraction": float(f), "plant_rate_bps": rate,
                       "ratio": float(ratio), "best": float(best / solver), "strategy": name})  # fmt: skip
    return points


def sweep_break_even(base: Preset) -> list[dict[str, Any]]:
    """The break-even value of a one-segment cheat against the verification cost, over k, s, v and the solver stake."""
    points = []
    for stake in (10, 40, 80, 160, 320):
        for k in (5, 10, 25):
            for s in (1, 2):
                for v in range(1, 7):
                    terms = base.terms.with_run(
                        steps_per_segment=k, samples_per_commitment=s, verifiers_per_commitment=v,
                        solver_min_stake=stake * ETH,
                    )  # fmt: skip
                    points.append({"stake_eth": stake, "k": k, "samples": s, "seats": v,
                                   "ratio": float(compute_verification_cost_ratio(terms, base.population)),
                                   "break_even_eth": _eth(compute_break_even_value(terms, base.population,
                                                                                  base.valuation))})  # fmt: skip
    return points


def get_production_target(points: list[dict[str, Any]], preset: Preset, limit: float = 0.10) -> dict[str, Any]:
    """Whether a verification cost of at most `limit` deters every counted strategy, and the cheapest configuration
    on the grid that deters every counted row a term can deter."""
    ratio = float(compute_verification_cost_ratio(preset.terms, preset.population))
    best, name = get_best(preset)
    termed, termed_name = get_best(preset, skip_rule_bound=True)
    deterring = sorted((p for p in points if p["best"] < 0), key=lambda p: p["ratio"])
    return {
        "max_ratio": limit,
        "preset_ratio": ratio,
        "preset_best_dishonest_profit": _eth(best),
        "preset_best_dishonest_strategy": name,
        "reached": ratio <= limit and best < 0,
        "preset_best_without_rule_bound_rows": _eth(termed),
        "preset_best_strategy_without_rule_bound_rows": termed_name,
        "reached_without_rule_bound_rows": ratio <= limit and termed < 0,
        "cheapest_deterring_config": deterring[0] if deterring else None,
    }


# ---------------------------------------------------------------------------------------
# The PNG


def write_plot(
    points: list[dict[str, Any]], break_even: list[dict[str, Any]], presets: dict[str, dict[str, Any]], path: Path
) -> None:
    """Left: the deterrence frontier (verification compute against the best counted cheat a term can deter, in round
    rewards R_s) over the production grid. Middle: the break-even outside value of poisoning one segment against the
    verification compute, one line per solver stake. Right: every strategy's expected profit per preset, with the
    simulated means."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (frontier, value, table) = plt.subplots(1, 3, figsize=(25, 8), gridspec_kw={"width_ratios": [1, 1, 1.3]})
    _plot_frontier(frontier, points, presets)
    _plot_break_even(value, break_even, presets["production"])
    _plot_rows(table, presets)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".tmp.png")
    figure.savefig(tmp, dpi=90)
    plt.close(figure)
    tmp.replace(path)


def _plot_frontier(axis: Any, points: list[dict[str, Any]], presets: dict[str, dict[str, Any]]) -> None:
    for f in sorted({p["recheck_fraction"] for p in points}):
        chosen = [p for p in points if p["recheck_fraction"] == f]
        axis.scatter([p["ratio"] for p in chosen], [p["best"] for p in chosen], s=10, alpha=0.6, label=f"F={f:g}")
    for name, preset in presets.items():
        solver = preset["rewards_eth"]["solver"]
        termed = [r for r in preset["strategies"] if r["counted"] and not r["rule_bound"]]
        best = max(r["expected_profit_per_round"] for r in termed)
        axis.scatter([preset["verification_cost_ratio"]], [best / solver], marker="*", s=220, edgecolor="black",
                     label=f"preset: {name}", zorder=3)  # fmt: skip
    axis.axhline(0, color="black", linewidth=0.8)
    axis.axvline(0.10, color="grey", linestyle="--", linewidth=0.8, label="10% of training")
    axis.set_xscale("log")
    axis.set_yscale("symlog", linthresh=0.01)
    axis.set_xlabel("verification compute / training compute (seats + whistleblower re-checks + plant checks)")
    axis.set_ylabel("best counted dishonest profit per round, in R_s (< 0: nothing pays)")
    axis.set_title("deterrence frontier (production H=500; k, s, seats, F, plant rate varied;\n"
                   "rule-bound rows left out: none as built, every plant checked)", fontsize=10)  # fmt: skip
    axis.legend(fontsize=7)
    axis.grid(alpha=0.3)


def _plot_break_even(axis: Any, points: list[dict[str, Any]], production: dict[str, Any]) -> None:
    for stake in sorted({p["stake_eth"] for p in points}):
        chosen = sorted((p for p in points if p["stake_eth"] == stake), key=lambda p: p["ratio"])
        axis.plot([p["ratio"] for p in chosen], [p["break_even_eth"] for p in chosen], marker="o", markersize=3,
                  linewidth=0.8, alpha=0.8, label=f"solver stake {stake:g} ETH")  # fmt: skip
    axis.scatter([production["verification_cost_ratio"]], [production["break_even_value_one_segment"]], marker="*",
                 s=260, color="gold", edgecolor="black", zorder=3, label="production preset")  # fmt: skip
    axis.axhline(production["valuation_eth"]["round_value"], color="black", linewidth=0.8, linestyle=":",
                 label="the round's value")  # fmt: skip
    axis.axvline(0.10, color="grey", linestyle="--", linewidth=0.8, label="10% of training")
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel("verification compute / training compute (k, s, v varied)")
    axis.set_ylabel("break-even outside value of poisoning one segment, ETH per round")
    axis.set_title("a one-segment cheat: detection ~ s v / n ~ the verification cost,\n"
                   "so its break-even value is ~ cost x (stake + R_s)", fontsize=10)  # fmt: skip
    axis.legend(fontsize=7)
    axis.grid(alpha=0.3, which="both")


def _plot_rows(axis: Any, presets: dict[str, dict[str, Any]]) -> None:
    names = [row["name"] for row in next(iter(presets.values()))["strategies"]]
    for offset, (name, preset) in zip((-0.25, 0, 0.25), presets.items(), strict=False):
        ys = [i + offset for i in range(len(names))]
        axis.barh(ys, [row["profit_in_round_rewards"] for row in preset["strategies"]], height=0.25, label=name)
        solver = preset["rewards_eth"]["solver"]
        simulated = [
            (row.get("simulated_profit_per_round"), y) for row, y in zip(preset["strategies"], ys, strict=True)
        ]
        axis.scatter([v / solver for v, _ in simulated if v is not None], [y for v, y in simulated if v is not None],
                     s=8, color="black", zorder=3)  # fmt: skip
    axis.axvline(0, color="black", linewidth=0.8)
    axis.set_xscale("symlog", linthresh=0.001)
    axis.set_yticks(range(len(names)))
    axis.set_yticklabels(names, fontsize=7)
    axis.invert_yaxis()
    axis.set_xlabel("expected profit per round relative to honest play, in R_s (bars: analytic; dots: simulated)")
    axis.legend(fontsize=8)
    axis.grid(alpha=0.3, axis="x")
