"""The plant rules (protocol/planting.py, docs/planted-faults.md): chains, reveals and the plant draw."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.constants import MAX_PLANT_RATE_BPS
from protocol.hashing import keccak256
from protocol.planting import (
    PlantError,
    compute_chain_seed,
    compute_plant_draw,
    compute_secret_chain,
    get_plant_anchor,
    get_round_secret,
    is_plant_eligible,
    is_round_planted,
    verify_round_secret,
)

SOLVER = "0x00000000000000000000000000000000000000a1"
KEY = bytes(range(32))


def test_chain_seed_depends_on_key_and_run():
    assert compute_chain_seed(KEY, 1) == compute_chain_seed(KEY, 1)
    assert compute_chain_seed(KEY, 1) != compute_chain_seed(KEY, 2)
    assert compute_chain_seed(KEY, 1) != compute_chain_seed(bytes(32), 1)
    with pytest.raises(PlantError, match="32 bytes"):
        compute_chain_seed(b"short", 1)


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=1, max_value=40), st.data())
def test_each_round_secret_is_a_preimage_of_the_previous(max_rounds, data):
    chain = compute_secret_chain(compute_chain_seed(KEY, 7), max_rounds)
    anchor = get_plant_anchor(chain)
    r = data.draw(st.integers(min_value=0, max_value=max_rounds - 1))
    secret = get_round_secret(chain, r)
    previous = anchor if r == 0 else get_round_secret(chain, r - 1)
    assert keccak256(secret) == previous
    assert verify_round_secret(secret, r, anchor, -1), "every secret reaches the anchor"
    known = data.draw(st.integers(min_value=-1, max_value=r - 1))
    link = anchor if known == -1 else get_round_secret(chain, known)
    assert verify_round_secret(secret, r, link, known)


def test_a_secret_of_another_round_or_chain_is_rejected():
    chain = compute_secret_chain(compute_chain_seed(KEY, 7), 10)
    other = compute_secret_chain(compute_chain_seed(bytes(32), 7), 10)
    anchor = get_plant_anchor(chain)
    assert not verify_round_secret(get_round_secret(chain, 4), 3, anchor, -1), "round 4's secret is not round 3's"
    assert not verify_round_secret(get_round_secret(other, 3), 3, anchor, -1), "another chain's secret"
    with pytest.raises(PlantError, match="earlier link"):
        verify_round_secret(get_round_secret(chain, 3), 3, get_round_secret(chain, 3), 3)
    with pytest.raises(PlantError, match="outside the chain"):
        get_round_secret(chain, 10)


def test_plants_apply_two_rounds_after_the_anchor():
    assert not is_plant_eligible(anchor_round=3, round_index=4)
    assert is_plant_eligible(anchor_round=3, round_index=5)


def test_plant_draw_mixes_every_input():
    chain = compute_secret_chain(compute_chain_seed(KEY, 7), 10)
    x = get_round_secret(chain, 2)
    base = keccak256(b"seed base of round 1")
    draw = compute_plant_draw(x, 7, 2, SOLVER, base)
    assert 0 <= draw < 10_000
    # each input changed alone moves the draw (these fixed inputs collide with none: checked, not assumed)
    assert compute_plant_draw(get_round_secret(chain, 3), 7, 2, SOLVER, base) != draw, "the secret"
    assert compute_plant_draw(x, 8, 2, SOLVER, base) != draw, "the run"
    assert compute_plant_draw(x, 7, 3, SOLVER, base) != draw, "the round"
    assert compute_plant_draw(x, 7, 2, "0x00000000000000000000000000000000000000a2", base) != draw, "the solver"
    assert compute_plant_draw(x, 7, 2, SOLVER, keccak256(b"another block")) != draw, "the previous seed base"


def test_plant_rate_bounds():
    x, base = keccak256(b"x"), keccak256(b"b")
    draw = compute_plant_draw(x, 1, 2, SOLVER, base)
    assert not is_round_planted(x, 1, 2, SOLVER, base, 0), "rate 0: nobody plants"
    assert is_round_planted(x, 1, 2, SOLVER, base, MAX_PLANT_RATE_BPS) == (draw < MAX_PLANT_RATE_BPS)
    with pytest.raises(PlantError, match="plant rate"):
        is_round_planted(x, 1, 2, SOLVER, base, MAX_PLANT_RATE_BPS + 1)


def test_plant_frequency_matches_the_rate():
    """Over 4,000 (secret, round) draws at rho = 5% the plant count is binomial(4000, 0.05): mean 200, sd 13.8;
    the band [145, 255] is mean +- 4 sd."""
    chain = compute_secret_chain(compute_chain_seed(KEY, 3), 4000)
    base = keccak256(b"previous seed base")
    planted = sum(is_round_planted(get_round_secret(chain, r), 3, r, SOLVER, base, 500) for r in range(4000))
    assert 145 <= planted <= 255


def test_plants_from_round_zero_need_an_early_anchor_and_early_terms():
    from protocol.planting import is_planting_round

    # terms set after the start: rounds before PLANT_DELAY_ROUNDS never follow the plant rules
    assert not is_planting_round(2000, 0) and not is_planting_round(2000, 1) and is_planting_round(2000, 2)
    assert not is_planting_round(0, 5, from_round_zero=True)
    # terms set before the start: every round does
    assert is_planting_round(2000, 0, from_round_zero=True)
    # an early anchor is eligible from round 0 only when the terms were early too
    assert is_plant_eligible(0, 0, early_anchor=True, from_round_zero=True)
    assert not is_plant_eligible(0, 0, early_anchor=True, from_round_zero=False)
    assert not is_plant_eligible(0, 1, early_anchor=False, from_round_zero=True)
    assert is_plant_eligible(0, 2, early_anchor=False, from_round_zero=True)
