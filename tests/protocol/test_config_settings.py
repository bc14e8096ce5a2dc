"""protocol/config.py: `--set SECTION.KEY=VALUE` overrides, and unknown keys refused with the nearest valid name."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.config import RunConfig, build_run_config, get_config_field_names, parse_config_assignments
from protocol.errors import ConfigError

ROOT = "0x" + "11" * 32


def _build(overrides):
    return build_run_config(preset="tiny", run_seed=ROOT, dataset_root=ROOT, overrides=overrides)


def test_parse_config_assignments_reads_json_values_and_nests_the_path():
    got = parse_config_assignments(["train.inner_lr=3e-4", "model.n_layer=2", "train.carry_moments=true", "a.b.c=x y"])
    assert got["train"] == {"inner_lr": 0.0003, "carry_moments": True}
    assert (got["model"], got["a"]) == ({"n_layer": 2}, {"b": {"c": "x y"}})
    config = _build(parse_config_assignments(["train.inner_lr=3e-4", "model.n_layer=2"]))
    assert (config.train.inner_lr, config.model.n_layer) == (0.0003, 2)


@pytest.mark.parametrize(
    ("assignments", "needle"),
    [
        (["train"], "write it as SECTION.KEY=VALUE"),
        (["train.=1"], "write it as SECTION.KEY=VALUE"),
        (["train.inner_lr=1", "train.inner_lr=2"], "train.inner_lr is set twice"),
        (["train=1", "train.inner_lr=2"], "train was already set to a value"),
    ],
)
def test_parse_config_assignments_refuses_malformed_settings(assignments, needle):
    with pytest.raises(ConfigError, match=needle):
        parse_config_assignments(assignments)


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        ({"trian": {}}, "trian: unknown key (did you mean 'train'?)"),
        ({"train": {"inner_lrr": 1}}, "train.inner_lrr: unknown key (did you mean 'inner_lr'?)"),
        ({"model": {"n_layr": 1}}, "model.gpt.n_layr: unknown key (did you mean 'n_layer'?)"),
        ({"profile": {"threadz": 1}}, "profile.threadz: unknown key (valid keys here: name,"),
    ],
)
def test_build_run_config_unknown_key_names_the_nearest_valid_name(overrides, needle):
    with pytest.raises(ConfigError) as info:
        _build(overrides)
    assert needle in str(info.value), str(info.value)


@given(st.sampled_from(["train", "sketch", "profile", "thresholds", "data"]), st.data())
def test_every_misspelt_key_one_letter_off_is_refused_naming_it(section, data):
    names = get_config_field_names((section,))
    name = data.draw(st.sampled_from(names))
    typo = name + "x"  # one letter more: never a valid key, always close to the one meant
    with pytest.raises(ConfigError) as info:
        _build({section: {typo: 1}})
    assert f"{section}.{typo}: unknown key (did you mean {name!r}?)" in str(info.value)


def test_get_config_field_names_walks_sections_and_the_model_union():
    assert get_config_field_names(()) == list(RunConfig.model_fields)
    assert "n_layer" in get_config_field_names(("model", "gpt"))
    assert "hf_config" in get_config_field_names(("model", "hf"))
    assert get_config_field_names(("no-such",)) == []
