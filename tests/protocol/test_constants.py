"""protocol.constants mirrors contracts/src/Constants.sol.

The chain of equality: Python constants == tests/vectors/constants.json (checked here) and
constants.json == Constants.sol (checked by `forge test`, contracts/test/Constants.t.sol); both files are generated
from Constants.sol (tests/protocol/test_contract_constants.py).
"""

from __future__ import annotations

import json

from py_ecc.bls import G2ProofOfPossession

from protocol import constants
from protocol.sampling import MAX_SAMPLES
from tests.vectors.generate_bls import VECTORS_DIR


def test_constants_file_equals_python():
    written = json.loads((VECTORS_DIR / "constants.json").read_text())
    assert written == constants.get_constants(), "stale; run: make vectors"


def test_max_samples_equals_sampling_module():
    assert constants.MAX_SAMPLES == MAX_SAMPLES


def test_dsts_equal_py_ecc():
    assert constants.BLS_SIG_DST == G2ProofOfPossession.DST
    assert constants.BLS_POP_DST == G2ProofOfPossession.POP_TAG


def test_quorum_is_two_thirds_rounded_up_and_a_majority_at_the_last_appeal():
    assert [constants.get_quorum(j, 0) for j in (1, 3, 5, 21)] == [1, 2, 4, 14]
    assert [constants.get_quorum(j, constants.MAX_APPEALS - 1) for j in (3, 15)] == [2, 10]
    # issue 36, finding 5: a minority of the last jury can no longer block every verdict
    assert [constants.get_quorum(j, constants.MAX_APPEALS) for j in (1, 3, 5, 15, 21)] == [1, 2, 3, 8, 11]


def test_payout_shares_leave_a_pool_remainder():
    assert constants.WINNER_REWARD_BPS + constants.JUROR_REWARD_BPS < constants.BPS_DENOMINATOR


def test_revenue_precision_covers_every_share_unit():
    # the carried remainder of each release is below one wei only if PRECISION >= max supply
    assert constants.REVENUE_PRECISION >= constants.MAX_TOTAL_SHARES


def test_jury_pool_fits_a_32_bit_bitmap():
    assert constants.MAX_JURY_SIZE + constants.JURY_PARTY_SLACK <= 32
    assert 16 * constants.MAX_VERIFIERS_PER_COMMITMENT <= 128
