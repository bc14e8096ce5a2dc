"""A run's terms in one type (protocol/run_terms.py) and the presets as its values (protocol/run_presets.py): binding
to a run, H and k fixed by a preset against the training config's, and a terms file read over a preset."""

from __future__ import annotations

from dataclasses import fields

import pytest

from protocol.run_presets import ADVERSARIAL, DEFAULT, DEMO, ETH, PRESETS, PRODUCTION, TINY, get_preset
from protocol.run_terms import ZERO_HASH, CreationTerms, PlantTerms, RunTerms, TermsError, update_creation_terms
from protocol.types import RunTerms as ReExportedRunTerms


def test_one_type_for_the_struct_reexported_where_it_always_was():
    assert ReExportedRunTerms is RunTerms
    assert [f.name for f in fields(RunTerms)][:3] == ["config_hash", "dataset_root", "theta0_hash"]
    assert [f.name for f in fields(RunTerms)][-2:] == ["max_rounds", "start_delay"]  # Types.sol's order


def test_presets_are_unbound_values_of_the_one_type():
    assert set(PRESETS) == {"tiny", "default", "demo", "adversarial", "production"}
    for preset in PRESETS.values():
        assert isinstance(preset, CreationTerms) and isinstance(preset.run, RunTerms)
        assert (preset.run.config_hash, preset.run.dataset_root, preset.run.theta0_hash) == (ZERO_HASH,) * 3
        assert not preset.run.is_bound
    assert (TINY.run.inner_steps, TINY.run.steps_per_segment) == (0, 0)  # the training config's
    assert (DEFAULT.run.inner_steps, DEFAULT.run.steps_per_segment) == (20, 5)
    assert DEMO.run.inner_steps == ADVERSARIAL.run.inner_steps == 20
    assert not TINY.plants and DEMO.plants and ADVERSARIAL.plants and PRODUCTION.plants


def test_the_production_preset_is_the_documented_one():
    """docs/economics.md: 3 seats of 1 sample, a 200 ETH solver stake, juries of 15, 1% plants with a 0.02 ETH jackpot
    and a 5 ETH penalty, H=500 in segments of 10, 1-hour commit window, an hour's start delay."""
    run = PRODUCTION.run
    assert (run.inner_steps, run.steps_per_segment, run.samples_per_commitment, run.verifiers_per_commitment) == (
        500, 10, 1, 3,
    )  # fmt: skip
    assert (run.jury_size, run.solver_min_stake, run.commit_window, run.attest_window) == (15, 200 * ETH, 3600, 1800)
    assert (run.start_delay, run.max_rounds) == (3600, 1000)
    assert PRODUCTION.plant == PlantTerms(100, ETH // 50, 5 * ETH) and PRODUCTION.plant_pool == 10 * ETH


def test_bind_fixes_the_hashes_and_takes_h_and_k_from_the_config_unless_the_terms_fix_them():
    hashes = {"config_hash": b"\x01" * 32, "dataset_root": b"\x02" * 32, "theta0_hash": b"\x03" * 32}
    bound = TINY.run.bind(**hashes, inner_steps=6, steps_per_segment=2)
    assert bound.is_bound and (bound.inner_steps, bound.steps_per_segment) == (6, 2)
    assert bound.config_hash == b"\x01" * 32 and bound.max_rounds == TINY.run.max_rounds
    assert PRODUCTION.run.bind(**hashes, inner_steps=500, steps_per_segment=10).is_bound
    with pytest.raises(TermsError, match=r"fix H=500 \(inner_steps\) but the training config has H=20"):
        PRODUCTION.run.bind(**hashes, inner_steps=20, steps_per_segment=10)
    with pytest.raises(TermsError, match=r"fix k=10 \(steps_per_segment\) but the training config has k=5"):
        PRODUCTION.run.bind(**hashes, inner_steps=500, steps_per_segment=5)


def test_training_steps_come_from_the_command_line_the_terms_or_neither():
    assert PRODUCTION.run.get_training_steps(None, None) == (500, 10)
    assert PRODUCTION.run.get_training_steps(500, None) == (500, 10)
    assert TINY.run.get_training_steps(None, None) == (None, None)  # the config preset's own
    assert TINY.run.get_training_steps(30, 5) == (30, 5)
    with pytest.raises(TermsError, match="H=500"):
        PRODUCTION.run.get_training_steps(20, None)


def test_a_terms_file_overrides_a_preset_and_round_trips_what_is_printed():
    assert update_creation_terms(TINY, PRODUCTION.to_mapping(), "f") == PRODUCTION
    changed = update_creation_terms(PRODUCTION, {"run": {"max_rounds": 10}, "plant": {"rate_bps": 0}}, "f")
    assert changed == PRODUCTION.with_run(max_rounds=10).with_plant(rate_bps=0)
    assert update_creation_terms(DEMO, {"plant_pool": 7}, "f").plant_pool == 7
    assert update_creation_terms(DEMO, {}, "f") == DEMO  # every term left out is the preset's


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"run": {"commit_window_s": 600}}, "unknown key 'commit_window_s' in [run]; did you mean 'commit_window'?"),
        ({"max_rounds": 5}, "unknown key 'max_rounds' in the top level; did you mean 'run.max_rounds'?"),
        ({"plant": {"rate": 5}}, "unknown key 'rate' in [plant]; did you mean 'rate_bps'?"),
        ({"run": {"zzz": 1}}, "unknown key 'zzz' in [run]; valid keys there: inner_steps, steps_per_segment"),
        ({"run": {"config_hash": "0x00"}}, "config_hash is not a term to choose"),
        ({"run": {"max_rounds": -1}}, "run.max_rounds must be a non-negative integer"),
        ({"run": {"max_rounds": "ten"}}, "run.max_rounds must be a non-negative integer"),
        ({"run": {"max_rounds": True}}, "run.max_rounds must be a non-negative integer"),
        ({"run": [1, 2]}, "run must be a table of terms"),
        ({"plant_pool": 1.5}, "plant_pool must be a non-negative integer"),
    ],
)
def test_a_terms_file_with_unknown_or_malformed_keys_is_refused_naming_the_fix(values, message):
    with pytest.raises(TermsError) as refused:
        update_creation_terms(TINY, values, "--rules terms.json")
    assert str(refused.value).startswith("--rules terms.json: ") and message in str(refused.value)


def test_an_unknown_preset_names_the_nearest():
    assert get_preset("production") is PRODUCTION
    with pytest.raises(TermsError, match="unknown run terms preset 'prodution'; did you mean 'production'"):
        get_preset("prodution")
