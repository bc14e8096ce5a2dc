// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";
import {Constants} from "../src/Constants.sol";

/// @notice Constants.sol equals tests/vectors/constants.json. Both that file and protocol/contract_constants.py are
///         generated from Constants.sol's AST (`make vectors`, tests/vectors/generate_constants.py) and pytest fails
///         when they are stale; this test compares the *compiled* values with the file, so a constant the generator
///         misread, or a hand edit of the file, fails here too. tests/protocol/test_contract_constants.py checks that
///         every constant of Constants.sol is listed below.
contract ConstantsTest is Test {
    string internal json;

    function setUp() public {
        json = vm.readFile(string.concat(vm.projectRoot(), "/../tests/vectors/constants.json"));
    }

    function _u(string memory name) internal view returns (uint256) {
        return vm.parseJsonUint(json, string.concat(".", name));
    }

    function test_constants_equalPython_succeeds() public view {
        assertEq(_u("ROLE_SOLVER"), Constants.ROLE_SOLVER, "ROLE_SOLVER");
        assertEq(_u("ROLE_VERIFIER"), Constants.ROLE_VERIFIER, "ROLE_VERIFIER");
        assertEq(_u("BPS_DENOMINATOR"), Constants.BPS_DENOMINATOR, "BPS_DENOMINATOR");
        assertEq(_u("MAX_SAMPLES"), Constants.MAX_SAMPLES, "MAX_SAMPLES");
        assertEq(
            _u("MAX_VERIFIERS_PER_COMMITMENT"), Constants.MAX_VERIFIERS_PER_COMMITMENT, "MAX_VERIFIERS_PER_COMMITMENT"
        );
        assertEq(_u("MAX_OPENED_LEAVES"), Constants.MAX_OPENED_LEAVES, "MAX_OPENED_LEAVES");
        assertEq(_u("MAX_VERIFIERS_PER_RUN"), Constants.MAX_VERIFIERS_PER_RUN, "MAX_VERIFIERS_PER_RUN");
        assertEq(_u("MAX_JURY_SIZE"), Constants.MAX_JURY_SIZE, "MAX_JURY_SIZE");
        assertEq(_u("MIN_JURY_SIZE"), Constants.MIN_JURY_SIZE, "MIN_JURY_SIZE");
        assertEq(_u("MAX_APPEALS"), Constants.MAX_APPEALS, "MAX_APPEALS");
        assertEq(_u("JURY_PARTY_SLACK"), Constants.JURY_PARTY_SLACK, "JURY_PARTY_SLACK");
        assertEq(_u("QUORUM_NUMERATOR"), Constants.QUORUM_NUMERATOR, "QUORUM_NUMERATOR");
        assertEq(_u("QUORUM_DENOMINATOR"), Constants.QUORUM_DENOMINATOR, "QUORUM_DENOMINATOR");
        assertEq(_u("WINNER_REWARD_BPS"), Constants.WINNER_REWARD_BPS, "WINNER_REWARD_BPS");
        assertEq(_u("JUROR_REWARD_BPS"), Constants.JUROR_REWARD_BPS, "JUROR_REWARD_BPS");
        assertEq(_u("JUROR_MIN_STAKE"), Constants.JUROR_MIN_STAKE, "JUROR_MIN_STAKE");
        assertEq(_u("JUROR_EXIT_DELAY"), Constants.JUROR_EXIT_DELAY, "JUROR_EXIT_DELAY");
        assertEq(_u("REWARD_CLAIM_WINDOW"), Constants.REWARD_CLAIM_WINDOW, "REWARD_CLAIM_WINDOW");
        assertEq(_u("MAX_PLANT_RATE_BPS"), Constants.MAX_PLANT_RATE_BPS, "MAX_PLANT_RATE_BPS");
        assertEq(_u("PLANT_DELAY_ROUNDS"), Constants.PLANT_DELAY_ROUNDS, "PLANT_DELAY_ROUNDS");
        assertEq(_u("MAX_REVEAL_GAP"), Constants.MAX_REVEAL_GAP, "MAX_REVEAL_GAP");
        assertEq(
            _u("UNRESOLVED_CHALLENGE_FEE_BPS"), Constants.UNRESOLVED_CHALLENGE_FEE_BPS, "UNRESOLVED_CHALLENGE_FEE_BPS"
        );
        assertEq(_u("VERIFIER_DRAW_INDEX"), Constants.VERIFIER_DRAW_INDEX, "VERIFIER_DRAW_INDEX");
        assertEq(vm.parseJsonBytes32(json, ".SEAT_SEED_TAG"), Constants.SEAT_SEED_TAG, "SEAT_SEED_TAG");
        assertEq(_u("MIN_BLOCK_SECONDS"), Constants.MIN_BLOCK_SECONDS, "MIN_BLOCK_SECONDS");
        assertEq(_u("MAX_BLOCK_SECONDS"), Constants.MAX_BLOCK_SECONDS, "MAX_BLOCK_SECONDS");
        assertEq(_u("SEED_HORIZON_BLOCKS"), Constants.SEED_HORIZON_BLOCKS, "SEED_HORIZON_BLOCKS");
        assertEq(_u("RANDAO_LAG_BLOCKS"), Constants.RANDAO_LAG_BLOCKS, "RANDAO_LAG_BLOCKS");
        assertEq(_u("MAX_START_DELAY"), Constants.MAX_START_DELAY, "MAX_START_DELAY");
        assertEq(_u("REVENUE_PRECISION"), Constants.REVENUE_PRECISION, "REVENUE_PRECISION");
        assertEq(_u("MAX_TOTAL_SHARES"), Constants.MAX_TOTAL_SHARES, "MAX_TOTAL_SHARES");
        assertEq(_u("MIN_SUPPLY_FOR_RELEASE"), Constants.MIN_SUPPLY_FOR_RELEASE, "MIN_SUPPLY_FOR_RELEASE");
        assertEq(_u("UNOWNED_REVENUE_GRACE"), Constants.UNOWNED_REVENUE_GRACE, "UNOWNED_REVENUE_GRACE");
        assertEq(vm.parseJsonBytes(json, ".BLS_SIG_DST"), bytes(Constants.BLS_SIG_DST), "BLS_SIG_DST");
        assertEq(vm.parseJsonBytes(json, ".BLS_POP_DST"), bytes(Constants.BLS_POP_DST), "BLS_POP_DST");
        assertEq(vm.parseJsonBytes32(json, ".FAULT_SOLVER"), Constants.FAULT_SOLVER, "FAULT_SOLVER");
        assertEq(vm.parseJsonBytes32(json, ".FAULT_ATTESTATION"), Constants.FAULT_ATTESTATION, "FAULT_ATTESTATION");
    }
}
