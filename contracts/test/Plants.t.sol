// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Constants} from "../src/Constants.sol";
import {Plants} from "../src/Plants.sol";
import {RunRegistry} from "../src/RunRegistry.sol";
import {Verification} from "../src/Verification.sol";
import {IPlants} from "../src/interfaces/IPlants.sol";
import {IRunRegistry} from "../src/interfaces/IRunRegistry.sol";
import {AttestationRef, CommitmentData, DisputeSubject, LeafData} from "../src/interfaces/Types.sol";
import {Disputes} from "../src/Disputes.sol";
import {Planting} from "../src/libraries/Planting.sol";
import {Fixture} from "./utils/Fixture.sol";

/// @notice Planted faults (issue 17, docs/planted-faults.md): a lazy pass on a planted commitment loses its bond and
///         the penalty with no whistleblower, a fail on it earns the jackpot, the planting solver is paid and not
///         slashed; nothing about a plant can be learnt, withheld or dodged for profit.
contract PlantsTest is Fixture {
    uint16 internal constant RATE = 2000;
    uint96 internal constant JACKPOT = 1 ether;
    uint96 internal constant PENALTY = 2 ether;
    uint256 internal constant POOL = 10 ether;
    uint64 internal constant PLANT_ROUND = 2;

    uint256 internal runId;
    bytes32[] internal chain; // chain[i] = s_i, i = 0 .. maxRounds
    bytes32[] internal chain1; // solver 1's chain, when a test gives it an anchor (_anchorSolver1)
    bool internal withSolver1; // _toPlantRound also anchors solver 1, with a chain that does not plant round 2

    function setUp() public override {
        super.setUp();
        registerJurors(8);
        runId = createRun(defaultConfig());
        joinSolvers(runId, 2);
        registerVerifiers(runId, 4);
    }

    // ------------------------------------------------------------------ helpers

    function _setTerms() internal {
        vm.prank(creator);
        plants.setTerms{value: POOL}(runId, RATE, JACKPOT, PENALTY);
    }

    /// @dev s_0 .. s_N from `s0` (N = maxRounds); the anchor is s_N, round r's secret s_(N-1-r).
    function _buildChain(bytes32 s0) internal {
        delete chain;
        chain.push(s0);
        uint256 n = defaultConfig().maxRounds;
        for (uint256 i; i < n; ++i) {
            chain.push(Planting.next(chain[i]));
        }
    }

    function _secret(uint64 round) internal view returns (bytes32) {
        return chain[chain.length - 2 - round];
    }

    /// @dev Commit, draw the seed and settle the current round with no attestation.
    function _emptyRound() internal {
        commitAs(runId, solvers[0]);
        commitAs(runId, solvers[1]);
        warpToAttest(runId);
        drawSeed(runId);
        warpToClaim(runId);
        claimAndSettle(runId, keccak256(abi.encode("theta", reg.roundTimes(runId).round)));
    }

    /// @dev Terms set and solver 0's anchor registered in round 0, then rounds 0 and 1 played, so round 2 is the first
    ///      it can be planted in. The chain is chosen so that round 2 is planted iff `planted`: the draw's input (round
    ///      1's seed base) is learnt from a rehearsal that is then rolled back (every block hash and time repeats).
    function _toPlantRound(bool planted) internal {
        _setTerms();
        uint256 rehearsal = vm.snapshotState();
        _buildChain(keccak256("rehearsal"));
        vm.prank(solvers[0]);
        plants.setAnchor(runId, chain[chain.length - 1]);
        _emptyRound();
        _emptyRound();
        bytes32 previousBase = seedBaseOf(runId, PLANT_ROUND - 1);
        vm.revertToState(rehearsal);
        for (uint256 attempt;; ++attempt) {
            _buildChain(keccak256(abi.encode("s0", attempt)));
            bool hit = Planting.draw(_secret(PLANT_ROUND), runId, PLANT_ROUND, solvers[0], previousBase) < RATE;
            if (hit == planted) break;
        }
        vm.prank(solvers[0]);
        plants.setAnchor(runId, chain[chain.length - 1]);
        if (withSolver1) {
            for (uint256 attempt;; ++attempt) {
                _buildChain1(attempt);
                bytes32 secret1 = chain1[chain1.length - 2 - PLANT_ROUND];
                if (Planting.draw(secret1, runId, PLANT_ROUND, solvers[1], previousBase) >= RATE) break;
            }
            vm.prank(solvers[1]);
            plants.setAnchor(runId, chain1[chain1.length - 1]);
        }
        _emptyRound();
        _emptyRound();
        assertEq(seedBaseOf(runId, PLANT_ROUND - 1), previousBase, "the rehearsal saw the same seed base");
    }

    /// @dev Solver 1 registers an anchor in round 0 too (in _toPlantRound), so its round-2 commitment is paid once it
    ///      reveals (_revealSolver1); its chain is chosen, like solver 0's, so that its round 2 is not planted.
    function _anchorSolver1() internal {
        withSolver1 = true;
    }

    /// @dev Solver 1's chain from attempt `attempt`'s seed.
    function _buildChain1(uint256 attempt) internal {
        delete chain1;
        chain1.push(keccak256(abi.encode("solver 1", attempt)));
        for (uint256 i; i < defaultConfig().maxRounds; ++i) {
            chain1.push(Planting.next(chain1[i]));
        }
    }

    function _revealSolver1() internal {
        _revealAs(solvers[1], PLANT_ROUND, chain1[chain1.length - 2 - PLANT_ROUND]);
        (,, bool planted,) = plants.plantOf(runId, PLANT_ROUND, solvers[1]);
        assertFalse(planted, "solver 1's chosen chain does not plant round 2");
    }

    function _ref(uint8 slot) internal view returns (AttestationRef memory) {
        return AttestationRef({runId: runId, round: PLANT_ROUND, solver: solvers[0], slot: slot});
    }

    /// @dev Round 2: both solvers commit, the seed is drawn; returns solver 0's commitment.
    function _commitPlantRound() internal returns (CommitmentData memory c) {
        c = commitAs(runId, solvers[0]);
        commitAs(runId, solvers[1]);
        warpToAttest(runId);
        drawSeed(runId);
    }

    function _warpToReveal() internal {
        vm.warp(reg.roundTimes(runId).attestEnd);
        vm.roll(block.number + 1);
    }

    function _revealAs(address solver, uint64 round, bytes32 secret) internal {
        vm.prank(solver);
        plants.reveal(runId, round, secret);
    }

    /// @dev Expect `outsider`'s challenge of seat `slot` (sample 0) to revert with PlantPending.
    function _expectChallengeBlocked(uint8 slot, CommitmentData memory c) internal {
        AttestationRef memory ref = _ref(slot);
        (LeafData memory leaf, bytes32[] memory proof) = leafAt(runId, PLANT_ROUND, solvers[0], sampleSegment(ref, 0));
        uint256 bond = reg.runEconomics(runId).challengeBond;
        vm.deal(outsider, outsider.balance + bond);
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(Verification.PlantPending.selector, runId, PLANT_ROUND, solvers[0]));
        dis.challengeAttestation{value: bond}(ref, c, 0, leaf, proof);
    }

    function _bonded(address who, uint8 role) internal view returns (uint256 bonded) {
        (bonded,,,) = sm.stakeOf(who, role);
    }

    // ------------------------------------------------------------------ terms

    function test_setTerms_byCreatorInRoundZero_succeeds() public {
        vm.expectEmit(address(plants));
        emit Plants.PlantTermsSet(runId, RATE, JACKPOT, PENALTY, POOL, POOL, 0);
        _setTerms();
        (uint256 rate, uint256 jackpot, uint256 penalty) = plants.termsOf(runId);
        assertEq(rate, RATE);
        assertEq(jackpot, JACKPOT);
        assertEq(penalty, PENALTY);
        assertEq(plants.pool(runId), POOL);
        assertEq(address(plants).balance, POOL, "the pool is held");
    }

    function test_setTerms_notCreator_reverts() public {
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(Plants.NotCreator.selector, outsider));
        plants.setTerms(runId, RATE, JACKPOT, PENALTY);
    }

    function test_setTerms_twice_reverts() public {
        _setTerms();
        vm.prank(creator);
        vm.expectRevert(abi.encodeWithSelector(Plants.TermsAlreadySet.selector, runId));
        plants.setTerms(runId, 0, 0, 0);
    }

    function test_setTerms_afterRoundZero_reverts() public {
        _emptyRound();
        vm.prank(creator);
        vm.expectRevert(abi.encodeWithSelector(Plants.TermsOnlyInRoundZero.selector, uint64(1)));
        plants.setTerms(runId, RATE, JACKPOT, PENALTY);
    }

    function test_setTerms_rateAboveMax_reverts() public {
        uint16 rate = uint16(Constants.MAX_PLANT_RATE_BPS + 1);
        vm.prank(creator);
        vm.expectRevert(abi.encodeWithSelector(Plants.RateTooHigh.selector, rate, Constants.MAX_PLANT_RATE_BPS));
        plants.setTerms(runId, rate, JACKPOT, PENALTY);
    }

    function test_setTerms_penaltyAboveStake_reverts() public {
        vm.prank(creator);
        vm.expectRevert(abi.encodeWithSelector(Plants.PenaltyAboveStake.selector, 6 ether, 5 ether));
        plants.setTerms(runId, RATE, JACKPOT, 6 ether);
    }

    function test_setAnchor_notJoined_reverts() public {
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(Plants.NotJoined.selector, runId, outsider));
        plants.setAnchor(runId, keccak256("anchor"));
    }

    function test_setAnchor_twice_reverts() public {
        vm.prank(solvers[0]);
        plants.setAnchor(runId, keccak256("anchor"));
        vm.prank(solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(Plants.AnchorAlreadySet.selector, runId, solvers[0]));
        plants.setAnchor(runId, keccak256("another"));
    }

    // ------------------------------------------------------------------ reveal

    function test_reveal_beforeAttestEnd_reverts() public {
        _toPlantRound(true);
        _commitPlantRound();
        bytes32 secret = _secret(PLANT_ROUND);
        vm.prank(solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(Plants.TooEarly.selector, PLANT_ROUND));
        plants.reveal(runId, PLANT_ROUND, secret);
    }

    function test_reveal_futureRound_reverts() public {
        _toPlantRound(true);
        _commitPlantRound();
        _warpToReveal();
        bytes32 secret = _secret(PLANT_ROUND + 1);
        vm.prank(solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(Plants.TooEarly.selector, PLANT_ROUND + 1));
        plants.reveal(runId, PLANT_ROUND + 1, secret);
    }

    function test_reveal_wrongSecret_reverts() public {
        _toPlantRound(true);
        _commitPlantRound();
        _warpToReveal();
        bytes32 secret = _secret(PLANT_ROUND + 1); // a later link: hashes to the anchor in the wrong number of steps
        vm.prank(solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(Plants.WrongSecret.selector, PLANT_ROUND));
        plants.reveal(runId, PLANT_ROUND, secret);
    }

    function test_reveal_afterRevealWindow_reverts() public {
        _toPlantRound(true);
        _commitPlantRound();
        IRunRegistry.RoundTimes memory t = _times();
        uint256 revealEnd = t.attestEnd + (t.challengeEnd - t.attestEnd) / 2;
        vm.warp(revealEnd);
        bytes32 secret = _secret(PLANT_ROUND);
        vm.prank(solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(Plants.OutsideRevealWindow.selector, t.attestEnd, revealEnd));
        plants.reveal(runId, PLANT_ROUND, secret);
    }

    // ------------------------------------------------------------------ the outcomes of a plant

    /// @dev The verifier's dilemma, before planted faults: a pass without replay on work nobody re-checks cost
    ///      nothing. Now the reveal alone overturns it: no whistleblower, no dispute.
    function test_reveal_plantedLazyPass_losesBondAndPenalty_succeeds() public {
        _toPlantRound(true);
        CommitmentData memory c = _commitPlantRound();
        address lazy = attestPassAs(_ref(0), c);
        address honest = attestFailAs(_ref(1), c, 0);
        uint256 lazyStake = _bonded(lazy, Constants.ROLE_VERIFIER);
        uint256 solverStake = _bonded(solvers[0], Constants.ROLE_SOLVER);
        uint256 listBefore = vreg.size(runId);
        _warpToReveal();

        vm.expectEmit(address(ver));
        emit Verification.PlantApplied(runId, PLANT_ROUND, solvers[0], 1, 1 ether);
        _revealAs(solvers[0], PLANT_ROUND, _secret(PLANT_ROUND));

        (bool eligible, bool revealed, bool planted,) = plants.plantOf(runId, PLANT_ROUND, solvers[0]);
        assertTrue(eligible && revealed && planted, "revealed planted");
        (Verification.AttestationState passState,,,) = ver.attestationOf(_ref(0));
        assertEq(uint8(passState), uint8(Verification.AttestationState.Overturned), "the lazy pass is overturned");
        assertEq(_bonded(lazy, Constants.ROLE_VERIFIER), lazyStake - PENALTY, "penalty slashed");
        assertEq(vreg.size(runId), listBefore - 1, "the lazy verifier left the run's list");
        assertEq(plants.pool(runId), POOL - JACKPOT, "jackpot out; the bond + penalty held until settlement");
        assertEq(plants.forfeitOf(_ref(0)).amount, 1 ether + PENALTY, "held for the seat");
        assertEq(plants.credits(honest), JACKPOT, "the fail earned the jackpot");

        warpToClaim(runId);
        ver.finalize(_ref(1));
        assertEq(ver.credits(honest), 1 ether, "the fail's bond is returned");
        assertEq(_bonded(solvers[0], Constants.ROLE_SOLVER), solverStake, "the planting solver is not slashed");
        vm.expectRevert(abi.encodeWithSelector(Verification.WrongState.selector, passState));
        ver.finalize(_ref(0));

        claimAndSettle(runId, keccak256("theta3"));
        plants.releaseForfeit(_ref(0));
        assertEq(plants.pool(runId), POOL + 1 ether + PENALTY - JACKPOT, "the plant stood: bond + penalty to the pool");
        assertEq(uint8(plants.payOf(runId, PLANT_ROUND, solvers[0])), uint8(IPlants.Pay.Planted));
        ver.claimSolverShares(runId, PLANT_ROUND, solvers[0]);
        assertGt(tokenOf(runId).balanceOf(solvers[0]), 0, "the planting solver is paid");
        ver.claimVerifierShares(_ref(1));
        assertEq(ver.commitmentStatusOf(runId, PLANT_ROUND, solvers[0]).passes, 0, "its delta is not accepted");
        _assertHeld();
        vm.prank(honest);
        plants.withdraw();
        assertEq(honest.balance, JACKPOT, "the jackpot is withdrawn");
    }

    function test_challengeAttestation_plantPending_reverts() public {
        _toPlantRound(true);
        CommitmentData memory c = _commitPlantRound();
        attestPassAs(_ref(0), c);
        // a whistleblower cannot dispute a seat of a commitment that may be planted before the reveal says
        _expectChallengeBlocked(0, c);
    }

    function test_challengeAttestation_revealedPlanted_reverts() public {
        _toPlantRound(true);
        CommitmentData memory c = _commitPlantRound();
        attestFailAs(_ref(1), c, 0);
        _warpToReveal();
        _revealAs(solvers[0], PLANT_ROUND, _secret(PLANT_ROUND));
        _expectChallengeBlocked(1, c);
    }

    function test_reveal_notPlanted_usualRules_succeeds() public {
        _toPlantRound(false);
        CommitmentData memory c = _commitPlantRound();
        address passer = attestPassAs(_ref(0), c);
        address second = attestPassAs(_ref(1), c); // a majority of the 3 seats accepts (issue 37)
        _warpToReveal();
        _revealAs(solvers[0], PLANT_ROUND, _secret(PLANT_ROUND));
        (, bool revealed, bool planted,) = plants.plantOf(runId, PLANT_ROUND, solvers[0]);
        assertTrue(revealed && !planted, "revealed, not planted");
        assertFalse(plants.isChallengeBlocked(runId, PLANT_ROUND, solvers[0]), "challengeable again");
        warpToClaim(runId);
        ver.finalize(_ref(0));
        ver.finalize(_ref(1));
        assertEq(ver.credits(passer), second == passer ? 2 ether : 1 ether);
        claimAndSettle(runId, keccak256("theta3"));
        assertEq(uint8(plants.payOf(runId, PLANT_ROUND, solvers[0])), uint8(IPlants.Pay.Normal));
        ver.claimSolverShares(runId, PLANT_ROUND, solvers[0]);
        assertEq(plants.pool(runId), POOL, "no jackpot, no forfeit");
    }

    // ------------------------------------------------------------------ plant disputes (KIND_PLANT)

    /// @dev The plant dispute over `segment` (one per segment of the commitment).
    function _plantSubject(uint32 segment) internal view returns (DisputeSubject memory) {
        return DisputeSubject(dis.KIND_PLANT(), runId, PLANT_ROUND, solvers[0], 0, uint16(segment));
    }

    /// @dev `outsider` challenges solver 0's planted commitment over segment `segment` (its leaf and proof).
    function _challengePlant(CommitmentData memory c, uint32 segment) internal {
        _challengePlantAs(outsider, c, segment);
    }

    function _challengePlantAs(address challenger, CommitmentData memory c, uint32 segment) internal {
        (LeafData memory leaf, bytes32[] memory proof) = leafAt(runId, PLANT_ROUND, solvers[0], segment);
        uint256 bond = reg.runEconomics(runId).challengeBond;
        vm.deal(challenger, challenger.balance + bond);
        vm.prank(challenger);
        dis.challengePlant{value: bond}(runId, PLANT_ROUND, solvers[0], c, segment, leaf, proof);
    }

    /// @dev A revealed plant, a lazy pass overturned by it: the round waits for the plant dispute.
    /// @dev A planted commitment whose only seat passed (the reveal overturned it: passes 0, no fail) is paid as
    ///      planted. Before issue 37, `_hasPending` looked for `passes > 0`, so when the solver's next-round status
    ///      opened before it claimed, the planted round was not archived and its shares could never be minted.
    function test_claimSolverShares_plantedPassesOverturned_claimAfterNextRoundOpens_succeeds() public {
        _toPlantRound(true);
        CommitmentData memory c = _commitPlantRound();
        attestPassAs(_ref(0), c);
        _warpToReveal();
        _revealAs(solvers[0], PLANT_ROUND, _secret(PLANT_ROUND));
        assertEq(ver.commitmentStatusOf(runId, PLANT_ROUND, solvers[0]).passes, 0, "the reveal overturned the pass");
        warpToClaim(runId);
        claimAndSettle(runId, keccak256("theta3"));

        CommitmentData memory next = commitAs(runId, solvers[0]);
        warpToAttest(runId);
        drawSeed(runId);
        vm.expectEmit(address(ver));
        emit Verification.StatusArchived(runId, PLANT_ROUND, solvers[0]);
        attestPassAs(AttestationRef({runId: runId, round: PLANT_ROUND + 1, solver: solvers[0], slot: 0}), next);

        ver.claimSolverShares(runId, PLANT_ROUND, solvers[0]);
        assertGt(tokenOf(runId).balanceOf(solvers[0]), 0, "the planting solver is paid after its next round opened");
    }

    function _revealedPlant() internal returns (CommitmentData memory c) {
        _toPlantRound(true);
        c = _commitPlantRound();
        attestPassAs(_ref(0), c);
        _warpToReveal();
        _revealAs(solvers[0], PLANT_ROUND, _secret(PLANT_ROUND));
    }

    /// @dev The attack: a solver drawn to plant commits checkpoints it never trained (or trains honestly, to have
    ///      honest passes overturned) and is still paid as planted. A jury that replays a segment with the revealed
    ///      secret finds the plant false: the solver is slashed and not paid.
    function test_challengePlant_falsePlant_slashesAndUnpays_succeeds() public {
        CommitmentData memory c = _revealedPlant();
        uint256 stake = _bonded(solvers[0], Constants.ROLE_SOLVER);
        _challengePlant(c, 3);
        DisputeSubject memory subject = _plantSubject(3);
        drawJury(subject);
        decide(subject, true, 0);
        dis.execute(subject);
        assertEq(_bonded(solvers[0], Constants.ROLE_SOLVER), stake - 10 ether, "the false planter is slashed");
        assertEq(dis.credits(outsider), 2 ether + 5 ether, "bond back + WINNER_REWARD_BPS of the slash");
        assertEq(uint8(plants.payOf(runId, PLANT_ROUND, solvers[0])), uint8(IPlants.Pay.Unpaid));
        assertFalse(plants.isPlantChallengeable(runId, PLANT_ROUND, solvers[0]), "decided once");
        warpToClaim(runId);
        claimAndSettle(runId, keccak256("theta3"));
        vm.expectRevert(abi.encodeWithSelector(Verification.NotAccepted.selector, runId, PLANT_ROUND, solvers[0]));
        ver.claimSolverShares(runId, PLANT_ROUND, solvers[0]);
    }

    function test_challengePlant_truePlant_challengerLosesBond_succeeds() public {
        CommitmentData memory c = _revealedPlant();
        _challengePlant(c, 0);
        DisputeSubject memory subject = _plantSubject(0);
        (LeafData memory leaf, bytes32[] memory proof) = leafAt(runId, PLANT_ROUND, solvers[0], 0);
        bytes32 id = dis.disputeIdOf(subject);
        vm.deal(outsider, 2 ether);
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(Disputes.DisputeExists.selector, id));
        dis.challengePlant{value: 2 ether}(runId, PLANT_ROUND, solvers[0], c, 0, leaf, proof); // once per segment
        drawJury(subject);
        decide(subject, false, 0);
        dis.execute(subject);
        assertEq(dis.credits(solvers[0]), 1 ether, "the planter wins WINNER_REWARD_BPS of the bond");
        assertEq(dis.credits(outsider), 0);
        assertEq(uint8(plants.payOf(runId, PLANT_ROUND, solvers[0])), uint8(IPlants.Pay.Planted));
        warpToClaim(runId);
        claimAndSettle(runId, keccak256("theta3"));
        ver.claimSolverShares(runId, PLANT_ROUND, solvers[0]);
    }

    // ------------------------------------------------------------------ issue 36: the second audit's plant attacks

    /// Issue 36, finding 2: a solver drawn to plant trains one segment as planted and the rest honestly, reveals, and
    /// in the reveal's block disputes its own plant over the planted segment. Before, a commitment had ONE plant
    /// dispute (its id named no segment: it was segment 0's id of today), so the whistleblower's dispute over an honest
    /// segment reverted DisputeExists; for a net 1 ETH the three honest passes lost bond + penalty (9 ETH) and the
    /// planter kept its stake and was paid. Now every segment has its own dispute, and the passes' forfeits are held
    /// until settlement and returned when the plant is disproven.
    function test_challengePlant_planterDisputesItsOwnPlantFirst_whistleblowerStillDisproves_succeeds() public {
        _toPlantRound(true);
        CommitmentData memory c = _commitPlantRound();
        address[3] memory passers;
        for (uint8 slot; slot < 3; ++slot) {
            passers[slot] = attestPassAs(_ref(slot), c);
        }
        uint256 solverStake = _bonded(solvers[0], Constants.ROLE_SOLVER);
        _warpToReveal();
        _revealAs(solvers[0], PLANT_ROUND, _secret(PLANT_ROUND));
        _challengePlantAs(solvers[0], c, 0); // the planter pre-empts, over the segment it did train as planted
        bytes32 oldId = keccak256(abi.encode(DisputeSubject(dis.KIND_PLANT(), runId, PLANT_ROUND, solvers[0], 0, 0)));
        assertEq(dis.disputeIdOf(_plantSubject(0)), oldId, "old rule: the planter's dispute took the only id");
        _challengePlant(c, 5); // the whistleblower: segment 5 was trained honestly and does not replay as planted
        DisputeSubject memory own = _plantSubject(0);
        drawJury(own);
        decide(own, false, 0); // segment 0 does replay as planted: the planter "wins" its own bond back, less 1 ETH
        dis.execute(own);
        DisputeSubject memory caught = _plantSubject(5);
        drawJury(caught);
        decide(caught, true, 0);
        dis.execute(caught);
        assertEq(_bonded(solvers[0], Constants.ROLE_SOLVER), solverStake - 10 ether, "the false planter is slashed");
        assertEq(uint8(plants.payOf(runId, PLANT_ROUND, solvers[0])), uint8(IPlants.Pay.Unpaid), "and not paid");
        warpToClaim(runId);
        claimAndSettle(runId, keccak256("theta3"));
        for (uint8 slot; slot < 3; ++slot) {
            plants.releaseForfeit(_ref(slot));
            assertEq(plants.credits(passers[slot]), 1 ether + PENALTY, "the right pass gets bond + penalty back");
        }
        assertEq(plants.pool(runId), POOL, "none of the passes' forfeits stayed in the pool");
        vm.expectRevert(abi.encodeWithSelector(Verification.NotAccepted.selector, runId, PLANT_ROUND, solvers[0]));
        ver.claimSolverShares(runId, PLANT_ROUND, solvers[0]);
        _assertHeld();
    }

    function test_releaseForfeit_beforeSettlement_reverts() public {
        _revealedPlant();
        AttestationRef memory ref = _ref(0);
        vm.expectRevert(abi.encodeWithSelector(Plants.NotSettled.selector, runId, PLANT_ROUND));
        plants.releaseForfeit(ref);
    }

    function test_releaseForfeit_twice_reverts() public {
        _revealedPlant();
        AttestationRef memory ref = _ref(0);
        warpToClaim(runId);
        claimAndSettle(runId, keccak256("theta3"));
        plants.releaseForfeit(ref);
        vm.expectRevert(abi.encodeWithSelector(Plants.NothingHeld.selector, uint8(0)));
        plants.releaseForfeit(ref);
    }

    /// Issue 36, finding 3: a disproven plant stayed in the round's pay denominator (its tokens in totalTokens), so the
    /// honest solver got 300e18 of the 600e18 solver shares and nobody the rest. Now it leaves the paid commitments.
    function test_claimSolverShares_disprovenPlantLeavesThePaidCount_succeeds() public {
        _anchorSolver1();
        _toPlantRound(true);
        CommitmentData memory c = _commitPlantRound();
        attestMajorityAs(runId, solvers[0], c);
        attestMajorityAs(runId, solvers[1], _commitData[_key(runId, PLANT_ROUND, solvers[1])]);
        assertEq(ver.roundTally(runId, PLANT_ROUND).paidCommitments, 2);
        _warpToReveal();
        _revealSolver1();
        _revealAs(solvers[0], PLANT_ROUND, _secret(PLANT_ROUND));
        assertEq(ver.roundTally(runId, PLANT_ROUND).paidCommitments, 2, "a planted commitment is paid as accepted");
        _challengePlant(c, 3);
        DisputeSubject memory subject = _plantSubject(3);
        drawJury(subject);
        decide(subject, true, 0);
        dis.execute(subject);
        assertEq(ver.roundTally(runId, PLANT_ROUND).paidCommitments, 1, "old rule: the disproven plant stayed counted");
        warpToClaim(runId);
        claimAndSettle(runId, keccak256("theta3"));
        ver.claimSolverShares(runId, PLANT_ROUND, solvers[1]);
        assertEq(
            tokenOf(runId).balanceOf(solvers[1]), 600e18, "the honest solver gets the whole bucket (before: 300e18)"
        );
    }

    /// Finding 3, the other way a commitment ends unpaid: its reveal was missed and reported.
    function test_claimSolverShares_unrevealedLeavesThePaidCount_succeeds() public {
        _anchorSolver1();
        _toPlantRound(false);
        CommitmentData memory c = _commitPlantRound();
        attestMajorityAs(runId, solvers[0], c);
        attestMajorityAs(runId, solvers[1], _commitData[_key(runId, PLANT_ROUND, solvers[1])]);
        _warpToReveal();
        _revealSolver1();
        assertEq(ver.roundTally(runId, PLANT_ROUND).paidCommitments, 2);
        vm.warp(_revealEnd(_times()));
        plants.reportUnrevealed(runId, PLANT_ROUND, solvers[0]);
        assertEq(
            ver.roundTally(runId, PLANT_ROUND).paidCommitments, 1, "old rule: the unpaid commitment stayed counted"
        );
        warpToClaim(runId);
        claimAndSettle(runId, keccak256("theta3"));
        ver.claimSolverShares(runId, PLANT_ROUND, solvers[1]);
        assertEq(tokenOf(runId).balanceOf(solvers[1]), 600e18);
    }

    /// Issue 36, finding 6: an honest planter (it trained the planted batches) misses its reveal window; a verifier's
    /// fail on a planted segment stands and finalizes (a FAULT_SOLVER slash), and reportUnrevealed slashed it again
    /// under FAULT_UNREVEALED: 20 of its 20 ETH. Both now use the commitment's one fault key: slashed once.
    function test_reportUnrevealed_afterFinalizedFail_slashesOnce_succeeds() public {
        _toPlantRound(true);
        stakeAs(solvers[0], Constants.ROLE_SOLVER, 10 ether);
        CommitmentData memory c = _commitPlantRound();
        AttestationRef memory failRef = _ref(1);
        attestFailAs(failRef, c, 0);
        uint256 stake = _bonded(solvers[0], Constants.ROLE_SOLVER);
        assertEq(stake, 20 ether);
        warpToClaim(runId);
        ver.finalize(failRef);
        plants.reportUnrevealed(runId, PLANT_ROUND, solvers[0]);
        assertEq(_bonded(solvers[0], Constants.ROLE_SOLVER), stake - 10 ether, "slashed once (before: 20 of 20)");
        _assertHeld();
    }

    /// Issue 36, finding 9: PlantTermsSet carried the pool's running total, and the ledger folds it as what setTerms
    /// brought in: a 1-wei fundPool before setTerms made the events imply a wei more than Plants holds. The event now
    /// names what setTerms itself added (`funded`).
    function test_setTerms_afterFundPool_eventNamesOnlyItsOwnFunds_succeeds() public {
        vm.deal(outsider, 1);
        vm.prank(outsider);
        plants.fundPool{value: 1}(runId);
        vm.expectEmit(address(plants));
        emit Plants.PlantTermsSet(runId, RATE, JACKPOT, PENALTY, POOL, POOL + 1, 0);
        _setTerms();
        assertEq(address(plants).balance, 1 + POOL, "fundPool's 1 + setTerms' funded (the old fold: 1 + POOL + 1)");
    }

    function test_challengePlant_settleWaitsForTheDispute_reverts() public {
        CommitmentData memory c = _revealedPlant();
        _challengePlant(c, 0);
        warpToClaim(runId);
        uint256 bond = reg.runEconomics(runId).challengeBond;
        vm.prank(creator);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.DisputesOpen.selector, 1));
        reg.postClaim{value: bond}(runId, PLANT_ROUND, keccak256("theta3"));
    }

    function test_challengePlant_notRevealedPlanted_reverts() public {
        _toPlantRound(false);
        CommitmentData memory c = _commitPlantRound();
        _warpToReveal();
        _revealAs(solvers[0], PLANT_ROUND, _secret(PLANT_ROUND));
        (LeafData memory leaf, bytes32[] memory proof) = leafAt(runId, PLANT_ROUND, solvers[0], 0);
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(Disputes.NotPlantChallengeable.selector, runId, PLANT_ROUND, solvers[0]));
        dis.challengePlant(runId, PLANT_ROUND, solvers[0], c, 0, leaf, proof);
    }

    function test_challengePlant_afterChallengeWindow_reverts() public {
        CommitmentData memory c = _revealedPlant();
        vm.warp(reg.roundTimes(runId).challengeEnd);
        (LeafData memory leaf, bytes32[] memory proof) = leafAt(runId, PLANT_ROUND, solvers[0], 0);
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(Disputes.NotPlantChallengeable.selector, runId, PLANT_ROUND, solvers[0]));
        dis.challengePlant(runId, PLANT_ROUND, solvers[0], c, 0, leaf, proof);
    }

    function test_challengePlant_wrongLeaf_reverts() public {
        CommitmentData memory c = _revealedPlant();
        (LeafData memory leaf, bytes32[] memory proof) = leafAt(runId, PLANT_ROUND, solvers[0], 2);
        vm.prank(outsider);
        vm.expectRevert(Disputes.InvalidLeafProof.selector);
        dis.challengePlant(runId, PLANT_ROUND, solvers[0], c, 3, leaf, proof); // segment 2's leaf named as 3
    }

    function test_onFalsePlant_notDisputes_reverts() public {
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(Plants.NotDisputes.selector, outsider));
        plants.onFalsePlant(runId, PLANT_ROUND, solvers[0]);
    }

    // ------------------------------------------------------------------ withholding and skipping

    /// @dev A solver whose plant caught its accomplice's lazy pass withholds the reveal to spare it: the solver is
    ///      not paid and is slashed into the pool, so the accomplice's saved bond + penalty must buy a whole stake.
    function test_reportUnrevealed_afterRevealWindow_slashesIntoPool_succeeds() public {
        _toPlantRound(true);
        CommitmentData memory c = _commitPlantRound();
        attestPassAs(_ref(0), c);
        attestPassAs(_ref(1), c); // a majority of passes: only the missed reveal leaves it unpaid (issue 37)
        IRunRegistry.RoundTimes memory t = _times();
        vm.expectRevert(abi.encodeWithSelector(Plants.RevealWindowOpen.selector, _revealEnd(t)));
        plants.reportUnrevealed(runId, PLANT_ROUND, solvers[0]);
        vm.warp(_revealEnd(t));
        uint256 stake = _bonded(solvers[0], Constants.ROLE_SOLVER);
        vm.prank(outsider);
        plants.reportUnrevealed(runId, PLANT_ROUND, solvers[0]);
        assertEq(_bonded(solvers[0], Constants.ROLE_SOLVER), stake - 10 ether, "solverMinStake slashed");
        assertEq(plants.pool(runId), POOL + 10 ether, "into the plant pool");
        vm.expectRevert(abi.encodeWithSelector(Plants.NotOwed.selector, runId, PLANT_ROUND, solvers[0]));
        plants.reportUnrevealed(runId, PLANT_ROUND, solvers[0]); // once
        vm.expectRevert(abi.encodeWithSelector(Plants.WrongSecret.selector, PLANT_ROUND)); // the window is gone anyway
        _revealAs(solvers[0], PLANT_ROUND, bytes32(0));
        vm.expectRevert(abi.encodeWithSelector(Plants.NotOwed.selector, runId, PLANT_ROUND, solvers[1]));
        plants.reportUnrevealed(runId, PLANT_ROUND, solvers[1]); // no anchor: nothing to reveal
        warpToClaim(runId);
        ver.finalize(_ref(0));
        ver.finalize(_ref(1));
        claimAndSettle(runId, keccak256("theta3"));
        vm.expectRevert(abi.encodeWithSelector(Verification.NotAccepted.selector, runId, PLANT_ROUND, solvers[0]));
        ver.claimSolverShares(runId, PLANT_ROUND, solvers[0]);
        _assertHeld();
    }

    function test_reportUnrevealed_revealed_reverts() public {
        _toPlantRound(false);
        _commitPlantRound();
        _warpToReveal();
        _revealAs(solvers[0], PLANT_ROUND, _secret(PLANT_ROUND));
        vm.warp(_revealEnd(_times()));
        vm.expectRevert(abi.encodeWithSelector(Plants.NotOwed.selector, runId, PLANT_ROUND, solvers[0]));
        plants.reportUnrevealed(runId, PLANT_ROUND, solvers[0]);
    }

    /// @dev Skipping the anchor is no way out of planting: while planting is on, a commitment without one is not paid.
    function test_claimSolverShares_noAnchorWhilePlantingOn_reverts() public {
        _toPlantRound(false);
        _commitPlantRound();
        CommitmentData memory c1 = _commitData[_key(runId, PLANT_ROUND, solvers[1])];
        attestPassAs(AttestationRef(runId, PLANT_ROUND, solvers[1], 0), c1);
        attestPassAs(AttestationRef(runId, PLANT_ROUND, solvers[1], 1), c1); // accepted but for the missing anchor
        warpToClaim(runId);
        ver.finalize(AttestationRef(runId, PLANT_ROUND, solvers[1], 0));
        ver.finalize(AttestationRef(runId, PLANT_ROUND, solvers[1], 1));
        claimAndSettle(runId, keccak256("theta3"));
        assertEq(uint8(plants.payOf(runId, PLANT_ROUND, solvers[1])), uint8(IPlants.Pay.Unpaid));
        vm.expectRevert(abi.encodeWithSelector(Verification.NotAccepted.selector, runId, PLANT_ROUND, solvers[1]));
        ver.claimSolverShares(runId, PLANT_ROUND, solvers[1]);
    }

    // ------------------------------------------------------------------ the pool

    /// @dev A solver and an accomplice cannot farm jackpots beyond the pool: a jackpot is at most what is left.
    function test_onPlantedFail_poolShort_paysWhatIsLeft_succeeds() public {
        vm.prank(creator);
        plants.setTerms{value: 0.5 ether}(runId, RATE, JACKPOT, PENALTY);
        vm.prank(address(ver));
        uint256 paid = plants.onPlantedFail(runId, outsider);
        assertEq(paid, 0.5 ether);
        assertEq(plants.pool(runId), 0);
        vm.prank(address(ver));
        assertEq(plants.onPlantedFail(runId, outsider), 0, "an empty pool pays nothing");
        _assertHeld();
    }

    function test_onPlantedFail_notVerification_reverts() public {
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(Plants.NotVerification.selector, outsider));
        plants.onPlantedFail(runId, outsider);
    }

    function test_onPlantRevealed_notPlants_reverts() public {
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(Verification.NotPlants.selector, outsider));
        ver.onPlantRevealed(runId, 0, solvers[0]);
    }

    function test_fundPool_zero_reverts() public {
        vm.prank(outsider);
        vm.expectRevert(Plants.ZeroAmount.selector);
        plants.fundPool(runId);
    }

    function test_receive_notStakeManager_reverts() public {
        vm.prank(outsider);
        (bool ok,) = address(plants).call{value: 1}("");
        assertFalse(ok, "plain ETH only from the StakeManager");
    }

    // ------------------------------------------------------------------ internals

    function _times() internal view returns (IRunRegistry.RoundTimes memory) {
        return reg.roundTimes(runId);
    }

    function _revealEnd(IRunRegistry.RoundTimes memory t) internal pure returns (uint256) {
        return t.attestEnd + (t.challengeEnd - t.attestEnd) / 2;
    }

    /// @dev Plants holds exactly its pools, its credits and the forfeits it holds (this test funds one run).
    function _assertHeld() internal view {
        uint256 owed = plants.pool(runId);
        for (uint8 slot; slot < 3; ++slot) {
            owed += plants.forfeitOf(_ref(slot)).amount;
        }
        for (uint256 i; i < verifiers.length; ++i) {
            owed += plants.credits(verifiers[i]);
        }
        owed += plants.credits(outsider);
        assertEq(address(plants).balance, owed, "Plants holds pool + credits");
    }
}
