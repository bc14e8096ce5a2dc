"""Does any cheating strategy pay? An agent-based simulation of many rounds, next to the analytic expectations.

    python bench/economics.py [--quick] [--rounds R] [--seed S] [--compute-share c] [--workers W]

Presets: the demo's run terms (protocol.run_presets.DEMO, H=20, k=5), the adversarial demo's
(protocol.run_presets.ADVERSARIAL) and the documented production preset (protocol.run_presets.PRODUCTION,
H=500, k=10), each played by a population (protocol.economics.DEMO_POPULATION / PRODUCTION_POPULATION) and valued at
`--round-value` ETH for all the shares of a round, with a round of training costing `--compute-share` of a solver's
round reward R_s (default 1/2). The rules are issue 37's (protocol/economics_strategies.py: majority acceptance,
cleared fails, solver self-defence, abstention fees, whistleblowers re-checking passes only, nothing paying a re-check)
as built: every preset has a start delay, so its plants start in round 0, and the seed is the seed block's RANDAO
value, so a block producer re-rolls it at most once (`rule_fixes` prices the rules before them, and the open fixes).

For every strategy of protocol.economics_strategies.STRATEGIES the simulation (bench/economics_sim.py) plays the same
rounds twice with the same random inputs: once with everyone honest, once with the strategy's players deviating; the
rows whose number depends on plant checks are played again with nobody checking plants ("no watchers": F = 0 and no
plant check).

The last line of output is one JSON object: `strategies` (the demo preset's rows: `name`, `expected_profit_per_round`
and `caught_per_round` -- analytic -- with the simulated mean, its standard error and the simulated catch rate
alongside, `expected_profit_no_watchers`, `break_even_stake_ratio`), `best_dishonest_profit` (the largest over every
preset of the rows counted, at the presets' assumptions), `best_dishonest_profit_no_watchers`, per preset
`whistleblower_income`, `whistleblower_income_by_f`, `griefed_solver_income_ratio`, `break_even_value_one_segment`,
`honest_solver_income`, `verification_cost_ratio`, the rule fixes priced (`rule_fixes`), `planted_fault_rate`, `units`.
JSON and a PNG (the deterrence frontier, verification cost against the break-even value of a one-segment cheat, and
every row) go to `--out`.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from fractions import Fraction
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.economics_frontier import (
    STAKE_FIELDS,
    compute_break_even_stake,
    get_production_target,
    is_rule_bound,
    no_watchers,
    price_rule_fixes,
    profit_of,
    sweep_break_even,
    sweep_frontier,
    write_plot,
)
from bench.economics_sim import PLANT_CHECKER, WHISTLEBLOWER, Preset, Simulation, _address, get_roles
from protocol.economics import (
    COMPUTE_SHARE,
    DEMO_POPULATION,
    DEMO_ROUND_VALUE,
    ETH,
    PRODUCTION_POPULATION,
    PRODUCTION_ROUND_VALUE,
    WATCH_FRACTIONS,
    EconomicTerms,
    build_valuation,
    compute_honest_verifier_income,
    compute_plant_check_income,
    compute_verification_cost_ratio,
    compute_whistleblower_income,
    get_rewards,
)  # fmt: skip
from protocol.economics_strategies import (
    JURY_TRUST_SHARE,
    STRATEGIES,
    Strategy,
    compute_break_even_value,
    compute_expectation,
    compute_griefed_solver_income,
    compute_one_segment_detection,
    get_exclusion,
)  # fmt: skip
from protocol.sampling import compute_detection_probability

FULL = {"demo": 6000, "adversarial-demo": 4000, "production": 2500}
QUICK = {"demo": 1500, "adversarial-demo": 1000, "production": 500}
WATCHED_KINDS = ("forge_plant", "grief_plant")
"""Rows whose number depends on plant checks: simulated again with nobody checking plants."""


# ---------------------------------------------------------------------------------------
# Presets, simulation jobs, rows


def build_presets(compute_share: Fraction, round_value: dict[str, int]) -> dict[str, Preset]:
    """The demos' presets and the production preset, each at the H and k it fixes (protocol/run_presets.py)."""
    from protocol.run_presets import ADVERSARIAL, DEMO, PRODUCTION

    terms = {
        "demo": (EconomicTerms.from_creation(DEMO), DEMO_POPULATION),
        "adversarial-demo": (EconomicTerms.from_creation(ADVERSARIAL), DEMO_POPULATION),
        "production": (EconomicTerms.from_creation(PRODUCTION), PRODUCTION_POPULATION),
    }
    return {
        name: Preset(name, t, pop, build_valuation(t, pop, round_value[name], compute_share))
        for name, (t, pop) in terms.items()
    }


def describe_terms(t: EconomicTerms) -> dict[str, Any]:
    """A preset's terms in the report, under the names and in the order the report has always used (the model's
    letters: samples s, seats v, rounds), whatever the Python types are called."""
    run = t.run
    return {
        "inner_steps": t.inner_steps, "steps_per_segment": t.steps_per_segment, "samples": t.samples,
        "seats": t.seats, "jury_size": run.jury_size, "solver_min_stake": run.solver_min_stake,
        "verifier_min_stake": run.verifier_min_stake, "attestation_bond": run.attestation_bond,
        "challenge_bond": run.challenge_bond, "solver_share_bps": run.solver_share_bps,
        "verifier_share_bps": run.verifier_share_bps, "juror_share_bps": run.juror_share_bps,
        "plant": t.plant.__dict__, "plant_pool": t.plant_pool, "rounds": t.rounds,
        "unplantable_rounds": t.unplantable_rounds, "seed_from_randao": t.seed_from_randao,
    }  # fmt: skip


def run_job(preset: Preset, index: int | None, rounds: int, seed: int) -> dict[str, Any]:
    """Play the preset with STRATEGIES[index] deviating, or (index None) with everyone honest, recording the net wei
    per round of every strategy's players, of the verifiers outside them, of the solvers and of the watchers."""
    strategy = None if index is None else STRATEGIES[index]
    indices = list(range(len(STRATEGIES))) if index is None else [index]
    verifiers = frozenset(_address("verifier", j) for j in range(preset.population.verifiers))
    groups = {"solvers": frozenset(_address("solver", j) for j in range(preset.population.solvers)),
              "whistleblower": frozenset({WHISTLEBLOWER}), "plant-checker": frozenset({PLANT_CHECKER})}  # fmt: skip
    for i in indices:
        players = frozenset(get_roles(preset, STRATEGIES[i]))
        groups[f"{i}"] = players
        groups[f"{i}-others"] = verifiers - players
    simulation = Simulation(preset, strategy, rounds, seed)
    series = simulation.play(groups)
    return {"series": series, "caught": simulation.caught, "steps": dict(simulation.steps)}


def _simulated(index: int, runs: dict) -> dict[str, Any]:
    if index not in runs or None not in runs:
        return {}
    base, dev = runs[None]["series"], runs[index]["series"]
    diffs = [d - b for d, b in zip(dev[f"{index}"], base[f"{index}"], strict=True)]
    others = [b - d for d, b in zip(dev[f"{index}-others"], base[f"{index}-others"], strict=True)]
    return {
        "profit": statistics.fmean(diffs) / ETH,
        "stderr": statistics.stdev(diffs) / math.sqrt(len(diffs)) / ETH,
        "caught": runs[index]["caught"] / len(diffs),
        "harm": statistics.fmean(others) / ETH,
        "rounds": len(diffs),
    }


def build_row(strategy: Strategy, index: int, preset: Preset, runs: dict, unwatched: dict) -> dict[str, Any]:
    t, pop, val = preset.terms, preset.population, preset.valuation
    solver = get_rewards(t, pop, val).solver
    expectation = compute_expectation(strategy, t, pop, val)
    status, stake = compute_break_even_stake(strategy, preset)
    field, exclusion = STAKE_FIELDS.get(strategy.kind), get_exclusion(strategy, t)
    row: dict[str, Any] = {
        "name": strategy.name,
        "kind": strategy.kind,
        "dishonest": strategy.dishonest,
        "counted": strategy.dishonest and not exclusion,
        "excluded": exclusion or None,
        "rule_bound": is_rule_bound(strategy, preset),
        "rule_bound_no_watchers": is_rule_bound(strategy, no_watchers(preset)),
        "expected_profit_per_round": _eth(expectation.profit),
        "expected_profit_no_watchers": _eth(profit_of(strategy, no_watchers(preset))),
        "profit_in_round_rewards": float(expectation.profit / solver),
        "caught_per_round": float(expectation.caught),
        "harm_to_honest_per_round": _eth(expectation.harm),
        "stake_field": field,
        "stake_ratio_now": float(getattr(t.run, field) / solver) if field else None,
        "break_even_stake_ratio": float(stake / solver) if stake is not None else None,
        "break_even": status,
    }
    simulated = _simulated(index, runs)
    if simulated:
        row["simulated_profit_per_round"] = simulated["profit"]
        row["simulated_stderr"] = simulated["stderr"]
        row["simulated_caught_per_round"] = simulated["caught"]
        row["simulated_harm_to_honest_verifiers_per_round"] = simulated["harm"]
        row["simulated_rounds"] = simulated["rounds"]
    simulated = _simulated(index, unwatched)
    if simulated:
        row["simulated_profit_no_watchers"] = simulated["profit"]
        row["simulated_stderr_no_watchers"] = simulated["stderr"]
    return row


def _mean_series(runs: dict, index: int | None, group: str, members: int = 1) -> float | None:
    if index not in runs:
        return None
    return statistics.fmean(runs[index]["series"][group]) / members / ETH


def analyse_preset(preset: Preset, runs: dict, unwatched: dict) -> dict[str, Any]:
    t, pop, val = preset.terms, preset.population, preset.valuation
    r = get_rewards(t, pop, val)
    rows = [build_row(s, i, preset, runs, unwatched) for i, s in enumerate(STRATEGIES)]
    counted = [row for row in rows if row["counted"]]
    best = max(counted, key=lambda row: row["expected_profit_per_round"])
    best_nw = max(counted, key=lambda row: row["expected_profit_no_watchers"])
    worst_open = max((row for row in rows if row["dishonest"]), key=lambda row: row["expected_profit_per_round"])
    rho = t.planted_share
    steps = runs[None]["steps"] if None in runs else {}
    honest_solver = r.solver - r.round_compute
    griefed = compute_griefed_solver_income(t, pop, val)
    fail_all = next(i for i, s in enumerate(STRATEGIES) if s.kind == "fail_all")
    m = pop.solvers
    simulated_griefed = _mean_series(runs, fail_all, "solvers", m)
    simulated_honest = _mean_series(runs, None, "solvers", m)
    sybil = [
        row for row, s in zip(rows, STRATEGIES, strict=True) if s.kind == "sybil_jurors" and s.share < JURY_TRUST_SHARE
    ]
    p1 = compute_one_segment_detection(t)
    return {
        "terms": describe_terms(t),
        "population": {
            **pop.__dict__,
            "recheck_fraction": float(pop.recheck_fraction),
            "plant_check": float(pop.plant_check),
        },
        "valuation_eth": {"round_value": val.round_value / ETH, "compute_cost_per_round": val.compute_cost / ETH},
        "rewards_eth": {k: _eth(v) if k != "seats_per_verifier" else float(v) for k, v in r.__dict__.items()},
        "honest_profits_per_round": {
            "solver": _eth(honest_solver),
            "verifier": _eth(compute_honest_verifier_income(t, pop, val)),
            "whistleblower": _eth(compute_whistleblower_income(t, pop, val)),
            "plant_checker": _eth(compute_plant_check_income(t, pop, val)),
            "juror": -next(row for row in rows if row["kind"] == "silent_juror")["expected_profit_per_round"],
        },
        "strategies": rows,
        "best_dishonest_profit": best["expected_profit_per_round"],
        "best_dishonest_strategy": best["name"],
        "best_dishonest_profit_no_watchers": best_nw["expected_profit_no_watchers"],
        "best_dishonest_strategy_no_watchers": best_nw["name"],
        "best_dishonest_profit_including_excluded": worst_open["expected_profit_per_round"],
        "best_dishonest_strategy_including_excluded": worst_open["name"],
        "profitable_counted_rows": {
            row["name"]: [row["expected_profit_per_round"], row["expected_profit_no_watchers"]]
            for row in counted
            if max(row["expected_profit_per_round"], row["expected_profit_no_watchers"]) >= 0
        },
        "sybil_jurors_below_one_third_unprofitable": all(
            row["expected_profit_per_round"] < 0 and row["counted"] for row in sybil
        ),
        "whistleblower_income": _eth(compute_whistleblower_income(t, pop, val)),
        "simulated_whistleblower_income": _mean_series(runs, None, "whistleblower"),
        "whistleblower_income_by_f": {
            f"{float(f):g}": _eth(compute_whistleblower_income(t, pop, val, f)) for f in WATCH_FRACTIONS
        },
        "plant_check_income": _eth(compute_plant_check_income(t, pop, val)),
        "simulated_plant_check_income": _mean_series(runs, None, "plant-checker"),
        "honest_solver_income": _eth(honest_solver),
        "griefed_solver_income": _eth(griefed),
        "griefed_solver_income_ratio": float(griefed / honest_solver),
        "simulated_griefed_solver_income_ratio": simulated_griefed / simulated_honest
        if simulated_griefed is not None and simulated_honest
        else None,
        "break_even_value_one_segment": _eth(compute_break_even_value(t, pop, val)),
        "one_segment_detection": float(p1),
        "rule_fixes": price_rule_fixes(preset),
        "verification_cost_ratio": float(compute_verification_cost_ratio(t, pop)),
        "planted_training_share": float(t.plant_rate),
        "planted_share": float(rho),
        "unplantable_share": float(t.unplantable_share),
        "simulated_verification_cost_ratio": sum(steps.get(k, 0) for k in ("seat", "whistle", "plant")) / steps["train"]
        if steps
        else None,
        "simulated_jury_cost_ratio": steps.get("jury", 0) / steps["train"] if steps else None,
        "detection": {
            "one_faked_segment": float(p1),
            **{
                f"f={x}": float(compute_detection_probability(Fraction(x), t.samples, t.seats))
                for x in ("0.05", "0.2", "0.5", "1")
            },
            "lazy_pass_per_seat": float(rho),
            "accomplice_pass_on_faked_segment": float(pop.recheck_fraction),
        },
        "constraints": {"penalty_at_most_verifier_stake": t.plant.penalty <= t.run.verifier_min_stake},
        "plant_pool_per_round_eth": _eth(rho * m * t.seats * t.plant.jackpot),
        "plant_pool_rounds": float(t.plant_pool / (rho * m * t.seats * t.plant.jackpot))
        if rho and t.plant.jackpot
        else None,
    }


# ---------------------------------------------------------------------------------------
# Main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer rounds and a smaller frontier grid")
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


UNITS = {
    "expected_profit_per_round": "ETH per round, relative to the same party playing honestly (analytic, "
    "protocol.economics_strategies.compute_expectation) at the presets' assumptions (F = 0, every plant checked); "
    "simulated_profit_per_round: the Monte-Carlo mean, same units",
    "expected_profit_no_watchers": "the same with nobody watching: F = 0 and no plant check",
    "profit_in_round_rewards": "expected_profit_per_round / R_s, a solver's round reward at the preset's value",
    "caught_per_round": "expected slashes, forfeits, lost bonds, abstention and unresolved fees per round",
    "break_even_stake_ratio": "stake_field at which the profit reaches 0, / R_s; null: see break_even "
    "(never_pays: not even with no stake; always_pays: no stake stops it)",
    "verification_cost_ratio": "inner steps replayed by seats, whistleblowers and plant checks / inner steps trained",
    "whistleblower_income": "ETH per round of an honest whistleblower re-checking F of the passes while everyone is "
    "honest (nothing pays a re-check); plant checks apart (plant_check_income)",
    "griefed_solver_income_ratio": "honest solver's income with one fail-everything verifier in the list (it "
    "challenges every false fail, R3) / its income among honest parties",
    "break_even_value_one_segment": "ETH of outside value per round above which poisoning one segment pays",
    "planted_fault_rate": "the run's plant rate rho; planted_share: rho x (1 - u), u the share of a run's rounds that "
    "cannot be planted (0 with a start delay: plants from round 0; else the first PLANT_DELAY_ROUNDS)",
    "rule_fixes": "the best counted row under each rule set: as_built (plants from round 0, a RANDAO seed, seat "
    "holders checking plants), the built rules taken back for reference (before_issue_37_rules, without_...)",
    "rule_bound": "a row no economic term deters at the preset's rules and watchers, only a rule change "
    "(rule_bound_no_watchers: with nobody watching)",
}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    started = time.perf_counter()
    values = {"demo": args.demo_round_value, "adversarial-demo": args.demo_round_value,
              "production": args.production_round_value}  # fmt: skip
    presets = build_presets(args.compute_share, {k: int(v * ETH) for k, v in values.items()})
    rounds = {name: args.rounds or (QUICK if args.quick else FULL)[name] for name in presets}
    watched = [i for i, s in enumerate(STRATEGIES) if s.kind in WATCHED_KINDS]
    jobs = [(name, index, False) for name in presets for index in [None, *range(len(STRATEGIES))]]
    jobs += [(name, index, True) for name in presets for index in [None, *watched]]
    log(f"{len(jobs)} plays of {rounds} rounds on {args.workers} workers")
    runs: dict[tuple[str, bool], dict] = {(name, nw): {} for name in presets for nw in (False, True)}
    with ProcessPoolExecutor(args.workers) as pool:
        futures = {
            job: pool.submit(
                run_job, no_watchers(presets[job[0]]) if job[2] else presets[job[0]], job[1], rounds[job[0]], args.seed
            )
            for job in jobs
        }
        points = sweep_frontier(presets["production"], args.quick)
        break_even = sweep_break_even(presets["production"])
        for (name, index, nw), future in futures.items():
            runs[(name, nw)][index] = future.result()
    log(f"simulated in {time.perf_counter() - started:.0f} s")
    analysed = {name: analyse_preset(p, runs[(name, False)], runs[(name, True)]) for name, p in presets.items()}

    def per_preset(key: str) -> dict[str, Any]:
        return {k: p[key] for k, p in analysed.items()}

    summary = {
        "units": UNITS,
        "strategies": analysed["demo"]["strategies"],
        "best_dishonest_profit": max(p["best_dishonest_profit"] for p in analysed.values()),
        "best_dishonest_profit_by_preset": per_preset("best_dishonest_profit"),
        "best_dishonest_strategy_by_preset": per_preset("best_dishonest_strategy"),
        "best_dishonest_profit_no_watchers": max(p["best_dishonest_profit_no_watchers"] for p in analysed.values()),
        "best_dishonest_profit_no_watchers_by_preset": per_preset("best_dishonest_profit_no_watchers"),
        "best_dishonest_strategy_no_watchers_by_preset": per_preset("best_dishonest_strategy_no_watchers"),
        "best_dishonest_profit_including_excluded": {
            k: [p["best_dishonest_profit_including_excluded"], p["best_dishonest_strategy_including_excluded"]]
            for k, p in analysed.items()
        },
        "profitable_counted_rows": per_preset("profitable_counted_rows"),
        "rule_fixes": per_preset("rule_fixes"),
        "whistleblower_income": per_preset("whistleblower_income"),
        "whistleblower_income_by_f": per_preset("whistleblower_income_by_f"),
        "plant_check_income": per_preset("plant_check_income"),
        "griefed_solver_income_ratio": per_preset("griefed_solver_income_ratio"),
        "simulated_griefed_solver_income_ratio": per_preset("simulated_griefed_solver_income_ratio"),
        "break_even_value_one_segment": per_preset("break_even_value_one_segment"),
        "one_segment_detection": per_preset("one_segment_detection"),
        "honest_solver_income": per_preset("honest_solver_income"),
        "sybil_jurors_below_one_third_unprofitable": per_preset("sybil_jurors_below_one_third_unprofitable"),
        "verification_cost_ratio": per_preset("verification_cost_ratio"),
        "detection": per_preset("detection"),
        "planted_fault_rate": analysed["demo"]["planted_training_share"],
        "planted_fault_rate_by_preset": per_preset("planted_training_share"),
        "planted_share_by_preset": per_preset("planted_share"),
        "unplantable_share_by_preset": per_preset("unplantable_share"),
        "production_target": get_production_target(points, presets["production"]),
        "compute_share": float(args.compute_share),
        "rounds": rounds,
        "seed": args.seed,
    }
    summary["seconds"] = round(time.perf_counter() - started, 1)
    stem = "economics-quick" if args.quick else "economics"
    args.out.mkdir(parents=True, exist_ok=True)
    detail = {"summary": summary, "presets": analysed, "frontier": points, "break_even_frontier": break_even}
    (args.out / f"{stem}.json").write_text(json.dumps(_finite(detail), indent=1) + "\n")
    write_plot(points, break_even, analysed, args.out / f"{stem}.png")
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
