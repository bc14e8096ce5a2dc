// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";
import {Plants} from "../src/Plants.sol";
import {IRunRegistry} from "../src/interfaces/IRunRegistry.sol";
import {IStakeManager} from "../src/interfaces/IStakeManager.sol";
import {IVerification} from "../src/interfaces/IVerification.sol";

/// @notice Exposes Plants' reveal window (`_revealEnd`, which `reveal`, `reportUnrevealed` and `isChallengeBlocked`
///         read) without a deployment: the window is a pure function of the round's times.
contract RevealWindowHarness is Plants {
    constructor() Plants(IRunRegistry(address(0)), IVerification(address(0)), IStakeManager(address(0)), address(0)) {}

    function revealEnd(uint256 attestEnd, uint256 challengeEnd) external pure returns (uint256) {
        IRunRegistry.RoundTimes memory t;
        t.attestEnd = attestEnd;
        t.challengeEnd = challengeEnd;
        return _revealEnd(t);
    }
}

/// @notice The reveal window of a round equals protocol/planting.py's (`get_reveal_end`, `is_in_reveal_window`,
///         `is_reveal_overdue`), from the vectors `python -m tests.vectors.generate` writes into
///         tests/vectors/planting.json: the window's end, and at each boundary whether `reveal` records a reveal
///         (attestEnd <= now < revealEnd; TooEarly before, OutsideRevealWindow after) and whether `reportUnrevealed`
///         may report a missing one (now >= revealEnd; RevealWindowOpen before).
contract PlantingRevealWindowTest is Test {
    string internal plantingJson;
    RevealWindowHarness internal harness;

    function setUp() public {
        plantingJson = vm.readFile(string.concat(vm.projectRoot(), "/../tests/vectors/planting.json"));
        harness = new RevealWindowHarness();
    }

    function test_revealEnd_pythonVectors_succeeds() public view {
        uint256 n = vm.parseJsonUint(plantingJson, ".revealWindowCount");
        assertGt(n, 0, "no reveal window vectors");
        for (uint256 i; i < n; ++i) {
            string memory base = string.concat(".revealWindows[", vm.toString(i), "]");
            uint256 attestEnd = vm.parseJsonUint(plantingJson, string.concat(base, ".attestEnd"));
            uint256 challengeEnd = vm.parseJsonUint(plantingJson, string.concat(base, ".challengeEnd"));
            uint256 end = harness.revealEnd(attestEnd, challengeEnd);
            assertEq(end, vm.parseJsonUint(plantingJson, string.concat(base, ".revealEnd")), "reveal end differs");
            uint256 probes = vm.parseJsonUint(plantingJson, string.concat(base, ".probeCount"));
            assertGt(probes, 0, "no probes");
            for (uint256 j; j < probes; ++j) {
                string memory probe = string.concat(base, ".probes[", vm.toString(j), "]");
                uint256 time = vm.parseJsonUint(plantingJson, string.concat(probe, ".now"));
                bool open = attestEnd <= time && time < end; // `reveal`: TooEarly below, OutsideRevealWindow above
                bool overdue = time >= end; // `reportUnrevealed`: RevealWindowOpen below
                assertEq(open, vm.parseJsonBool(plantingJson, string.concat(probe, ".open")), "window open differs");
                assertEq(overdue, vm.parseJsonBool(plantingJson, string.concat(probe, ".overdue")), "overdue differs");
            }
        }
    }

    /// @dev The window never outlasts the challenge window, and leaves its second half for challenges.
    function testFuzz_revealEnd_insideChallengeWindow_succeeds(uint64 attestEnd, uint64 challengeWindow) public view {
        uint256 challengeEnd = uint256(attestEnd) + challengeWindow;
        uint256 end = harness.revealEnd(attestEnd, challengeEnd);
        assertGe(end, attestEnd);
        assertLe(end, challengeEnd);
        assertGe(challengeEnd - end, end - attestEnd, "the challenges' half is the larger one");
    }
}
