// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";
import {Protocol, ProtocolDeployer} from "../../script/ProtocolDeployer.sol";
import {Constants} from "../../src/Constants.sol";
import {Disputes} from "../../src/Disputes.sol";
import {FaultRewards} from "../../src/FaultRewards.sol";
import {VerifierRegistry} from "../../src/VerifierRegistry.sol";
import {Plants} from "../../src/Plants.sol";
import {PeerDirectory} from "../../src/PeerDirectory.sol";
import {JurorRegistry} from "../../src/JurorRegistry.sol";
import {ModelShares} from "../../src/ModelShares.sol";
import {RunRegistry} from "../../src/RunRegistry.sol";
import {RunShares} from "../../src/RunShares.sol";
import {StakeManager} from "../../src/StakeManager.sol";
import {Verification} from "../../src/Verification.sol";
import {BlockRandomness} from "../../src/BlockRandomness.sol";
import {BLS} from "../../src/libraries/BLS.sol";
import {SegmentLeaf} from "../../src/libraries/SegmentLeaf.sol";
import {IRunRegistry} from "../../src/interfaces/IRunRegistry.sol";
import {
    AttestationRef,
    CommitmentData,
    DisputeSubject,
    LeafData,
    NonSigner,
    RunTerms
} from "../../src/interfaces/Types.sol";
import {TestBLS} from "./TestBLS.sol";
import {TestMerkle} from "./TestMerkle.sol";
import {TestHeaders} from "./TestHeaders.sol";

/// @notice Deployment, actors and protocol walk-throughs shared by the forge tests.
abstract contract Fixture is Test {
    uint256 internal constant UNBONDING_DELAY = 7 days;
    /// @dev The chain's block time the fixture deploys with (RunRegistry.blockSeconds): a 12-second-slot chain, as
    ///      Deploy.s.sol's default. Its hour-long windows need it: createRun refuses an attest window whose first half
    ///      outlasts the seed block's 256-block horizon, which one-second blocks would (RunRegistry._validateWindows;
    ///      Windows.t.sol deploys other block times).
    uint256 internal constant BLOCK_SECONDS = 12;
    uint256 internal constant REWARD_POOL = 100 ether;
    uint32 internal constant WINDOW = 1 hours;
    uint64 internal constant SEGMENT_TOKENS = 1000;

    StakeManager internal sm;
    RunRegistry internal reg;
    Verification internal ver;
    Disputes internal dis;
    ModelShares internal shares;
    JurorRegistry internal jurors;
    FaultRewards internal faults;
    VerifierRegistry internal vreg;
    Plants internal plants;
    PeerDirectory internal directory;
    BlockRandomness internal randomness;

    address internal creator = makeAddr("creator");
    address internal outsider = makeAddr("outsider");
    address[] internal solvers;
    address[] internal verifiers;
    address[] internal jurorAddrs;
    uint256[] internal jurorSks;
    bytes[] internal jurorPks;
    /// @dev Fixture index + 1 of each juror account (its key is jurorPks[index]).
    mapping(address juror => uint256) internal jurorIndexPlusOne;

    mapping(bytes32 key => LeafData[]) internal _leaves;
    /// @dev On (default): the drawSeed and attest helpers open every commitment made with commitAs, and
    ///      claimAndSettle reports the ones still unresolved. Tests of opening itself (and the invariant handler)
    ///      turn it off and open or report explicitly.
    bool internal autoOpen = true;
    /// @dev Solvers that committed with commitAs per (run, round), and their commitments by _key.
    mapping(uint256 runId => mapping(uint64 round => address[])) internal _committers;
    mapping(bytes32 key => CommitmentData) internal _commitData;

    function setUp() public virtual {
        vm.warp(1_700_000_000);
        vm.roll(1000);
        usePeers(ProtocolDeployer.deploy(address(this), UNBONDING_DELAY, BLOCK_SECONDS, true));
        for (uint256 i; i < 4; ++i) {
            solvers.push(makeAddr(string.concat("solver", vm.toString(i))));
        }
        for (uint256 i; i < 6; ++i) {
            verifiers.push(makeAddr(string.concat("verifier", vm.toString(i))));
        }
        vm.deal(creator, 1000 ether);
        vm.deal(outsider, 1000 ether);
    }

    /// @dev Point this fixture at a deployment (setUp's own, or the one an invariant handler is given).
    function usePeers(Protocol memory p) internal {
        sm = p.stakeManager;
        reg = p.runRegistry;
        ver = p.verification;
        dis = p.disputes;
        shares = p.modelShares;
        jurors = p.jurorRegistry;
        faults = p.faultRewards;
        vreg = p.verifierRegistry;
        plants = p.plants;
        directory = p.peerDirectory;
        randomness = p.blockRandomness;
    }

    // ------------------------------------------------------------------ configuration and actors

    function defaultConfig() internal pure returns (RunTerms memory c) {
        c.configHash = keccak256("config");
        c.datasetRoot = keccak256("dataset");
        c.theta0Hash = keccak256("theta0");
        c.innerSteps = 16;
        c.stepsPerSegment = 2;
        c.samplesPerCommitment = 2;
        c.verifiersPerCommitment = 3;
        c.jurySize = 5;
        c.commitWindow = WINDOW;
        c.attestWindow = WINDOW;
        c.challengeWindow = WINDOW;
        c.disputeTimeout = WINDOW;
        c.solverMinStake = 10 ether;
        c.verifierMinStake = 5 ether;
        c.attestationBond = 1 ether;
        c.challengeBond = 2 ether;
        c.solverShareBps = 6000;
        c.verifierShareBps = 3000;
        c.jurorShareBps = 1000;
        c.sharesPerRound = 1000e18;
        c.revenueReleasePeriod = 30 days;
        c.maxRounds = 10;
        c.startDelay = 0; // round 0 starts at creation (test/StartDelay.t.sol sets one)
    }

    function createRun(RunTerms memory c) internal returns (uint256 runId) {
        vm.prank(creator);
        runId = reg.createRun{value: REWARD_POOL}(c);
    }

    function stakeAs(address who, uint8 role, uint256 amount) internal {
        vm.deal(who, who.balance + amount);
        vm.prank(who);
        sm.deposit{value: amount}(role);
    }

    function joinSolvers(uint256 runId, uint256 n) internal {
        for (uint256 i; i < n; ++i) {
            stakeAs(solvers[i], Constants.ROLE_SOLVER, 10 ether);
            vm.prank(solvers[i]);
            reg.join(runId);
        }
    }

    function registerVerifiers(uint256 runId, uint256 n) internal {
        for (uint256 i; i < n; ++i) {
            (uint256 bonded,,, uint256 reserved) = sm.stakeOf(verifiers[i], Constants.ROLE_VERIFIER);
            if (bonded < reserved + 5 ether) stakeAs(verifiers[i], Constants.ROLE_VERIFIER, 5 ether); // per run
            vm.prank(verifiers[i]);
            vreg.register(runId);
        }
    }

    function registerJurors(uint256 n) internal {
        for (uint256 i; i < n; ++i) {
            address juror = makeAddr(string.concat("juror", vm.toString(jurorAddrs.length)));
            uint256 sk = uint256(keccak256(abi.encode("juror key", jurorAddrs.length))) % 2 ** 250 + 1;
            bytes memory pk = TestBLS.publicKey(sk);
            bytes memory pop = TestBLS.proofOfPossession(sk, juror);
            stakeAs(juror, Constants.ROLE_VERIFIER, Constants.JUROR_MIN_STAKE);
            vm.prank(juror);
            jurors.registerJuror(pk, pop);
            jurorAddrs.push(juror);
            jurorSks.push(sk);
            jurorPks.push(pk);
            jurorIndexPlusOne[juror] = jurorAddrs.length;
        }
    }

    // ------------------------------------------------------------------ commitments

    function _key(uint256 runId, uint64 round, address solver) internal pure returns (bytes32) {
        return keccak256(abi.encode(runId, round, solver));
    }

    /// @dev Build a solver's segment leaves for a round and return the commitment over them.
    function buildCommitment(uint256 runId, uint64 round, address solver, uint256 numSegments)
        internal
        returns (CommitmentData memory c)
    {
        bytes32 key = _key(runId, round, solver);
        delete _leaves[key];
        for (uint256 i; i < numSegments; ++i) {
            _leaves[key].push(
                LeafData({
                    startHash: keccak256(abi.encode("state", solver, round, i)),
                    endHash: keccak256(abi.encode("state", solver, round, i + 1)),
                    sketchHash: keccak256(abi.encode("sketch", solver, round, i)),
                    tokens: SEGMENT_TOKENS
                })
            );
        }
        c.root = TestMerkle.root(leafHashes(runId, round, solver));
        c.deltaHash = keccak256(abi.encode("delta", solver, round));
        c.tokens = uint64(SEGMENT_TOKENS * numSegments);
    }

    function leafHashes(uint256 runId, uint64 round, address solver) internal view returns (bytes32[] memory hashes) {
        LeafData[] storage leaves = _leaves[_key(runId, round, solver)];
        hashes = new bytes32[](leaves.length);
        for (uint256 i; i < leaves.length; ++i) {
            hashes[i] = SegmentLeaf.hash(
                SegmentLeaf.Leaf({
                    runId: runId,
                    round: round,
                    solver: solver,
                    index: uint32(i),
                    startHash: leaves[i].startHash,
                    endHash: leaves[i].endHash,
                    sketchHash: leaves[i].sketchHash,
                    tokens: leaves[i].tokens
                })
            );
        }
    }

    function leafAt(uint256 runId, uint64 round, address solver, uint256 index)
        internal
        view
        returns (LeafData memory leaf, bytes32[] memory proof)
    {
        leaf = _leaves[_key(runId, round, solver)][index];
        proof = TestMerkle.proof(leafHashes(runId, round, solver), index);
    }

    function commitAs(uint256 runId, address solver) internal returns (CommitmentData memory c) {
        uint64 round = reg.roundTimes(runId).round;
        c = buildCommitment(runId, round, solver, reg.runParams(runId).numSegments);
        vm.prank(solver);
        reg.commit(runId, round, c.root, c.deltaHash, c.tokens);
        _committers[runId][round].push(solver);
        _commitData[_key(runId, round, solver)] = c;
    }

    // ------------------------------------------------------------------ opening

    /// @dev The opening of a solver's tree (built by buildCommitment) for the round's drawn seed: for seats
    ///      q < min(verifiersPerCommitment, verifierCount) and draws j < samples, entry q * samples + j is the leaf
    ///      of segment ver.sampledSegment(run, round, solver, q, j) with its proof (seat-major, as `open` checks).
    function buildOpening(uint256 runId, uint64 round, address solver)
        internal
        view
        returns (LeafData[] memory leaves, bytes32[][] memory proofs)
    {
        return buildOpeningFrom(runId, round, solver, round, solver);
    }

    /// @dev buildOpening for (round, solver)'s sampled segments, taking leaves and proofs from the tree built for
    ///      (treeRound, treeSolver): another round's or another solver's tree, as a copying solver would.
    function buildOpeningFrom(uint256 runId, uint64 round, address solver, uint64 treeRound, address treeSolver)
        internal
        view
        returns (LeafData[] memory leaves, bytes32[][] memory proofs)
    {
        IRunRegistry.RunParams memory p = reg.runParams(runId);
        uint256 count = ver.roundSeed(runId, round).verifierCount;
        uint256 seats = p.verifiers < count ? p.verifiers : count;
        LeafData[] storage all = _leaves[_key(runId, treeRound, treeSolver)];
        bytes32[] memory hashes = leafHashes(runId, treeRound, treeSolver);
        leaves = new LeafData[](seats * p.samples);
        proofs = new bytes32[][](seats * p.samples);
        for (uint256 k; k < leaves.length; ++k) {
            uint256 segment = ver.sampledSegment(runId, round, solver, uint8(k / p.samples), k % p.samples);
            leaves[k] = all[segment];
            proofs[k] = TestMerkle.proof(hashes, segment);
        }
    }

    /// @dev `opener` opens `solver`'s commitment `c` of `round` with buildOpening.
    function openAs(address opener, uint256 runId, uint64 round, address solver, CommitmentData memory c) internal {
        (LeafData[] memory leaves, bytes32[][] memory proofs) = buildOpening(runId, round, solver);
        vm.prank(opener);
        reg.open(runId, round, solver, c, leaves, proofs);
    }

    /// @dev The solver opens its commitment of the current round.
    function openCommitment(uint256 runId, address solver, CommitmentData memory c) internal {
        openAs(solver, runId, reg.roundTimes(runId).round, solver, c);
    }

    /// @dev With autoOpen: open the commitment if it is of the current round, unresolved and still openable.
    function _autoOpen(uint256 runId, uint64 round, address solver, CommitmentData memory c) internal {
        if (!autoOpen) return;
        IRunRegistry.RoundTimes memory t = reg.roundTimes(runId);
        if (t.finished || round != t.round || block.timestamp >= t.openEnd) return;
        if (reg.openingOf(runId, round, solver) != IRunRegistry.Opening.None) return;
        (bool drawn,,) = ver.seedOf(runId, round);
        if (drawn) openAs(solver, runId, round, solver, c);
    }

    /// @dev Report every commitAs commitment of the current round still unresolved (after its deadline).
    function reportUnresolved(uint256 runId) internal {
        uint64 round = reg.roundTimes(runId).round;
        address[] storage committers = _committers[runId][round];
        for (uint256 i; i < committers.length; ++i) {
            if (reg.openingOf(runId, round, committers[i]) == IRunRegistry.Opening.None) {
                reg.reportUnopened(runId, round, committers[i]);
            }
        }
    }

    // ------------------------------------------------------------------ phases

    /// @dev To the end of the commit window, in time and in blocks: a block per BLOCK_SECONDS since the round
    ///      started reaches the seed block (mined, hash not yet readable by drawSeed).
    function warpToAttest(uint256 runId) internal {
        IRunRegistry.RoundTimes memory t = reg.roundTimes(runId);
        vm.warp(t.commitEnd);
        vm.roll(block.number < t.seedBlock ? t.seedBlock : block.number + 1);
    }

    /// @dev Draw the current round's seed in the next block, at least the one after the seed block; with autoOpen,
    ///      then open every commitAs commitment of the round.
    function drawSeed(uint256 runId) internal {
        IRunRegistry.RoundTimes memory t = reg.roundTimes(runId);
        uint256 randaoBlock = t.seedBlock + Constants.RANDAO_LAG_BLOCKS;
        vm.roll(block.number < randaoBlock ? randaoBlock + 1 : block.number + 1);
        ver.drawSeed(runId, t.round, seedHeader(runId));
        address[] storage committers = _committers[runId][t.round];
        for (uint256 i; i < committers.length; ++i) {
            _autoOpen(runId, t.round, committers[i], _commitData[_key(runId, t.round, committers[i])]);
        }
    }

    /// @dev The header drawSeed takes, of block seedBlock + RANDAO_LAG_BLOCKS (the RANDAO value revealed in the seed
    ///      block): RANDAO value TestHeaders.mixOf(seedBlock), so the seed base is bytes12 of it (the seeds the tests
    ///      had under a blockhash seed). Once that block is mined its hash is made the header's, so blockhash proves
    ///      it; call it before an expectRevert (it reads the RunRegistry).
    function seedHeader(uint256 runId) internal returns (bytes memory header) {
        uint256 seedBlock = reg.roundTimes(runId).seedBlock;
        uint256 randaoBlock = seedBlock + Constants.RANDAO_LAG_BLOCKS;
        header = TestHeaders.build(randaoBlock, TestHeaders.mixOf(seedBlock), "");
        if (randaoBlock <= block.number) vm.setBlockhash(randaoBlock, keccak256(header));
    }

    /// @dev The round's seed base (Verification.seedOf; zero until drawn).
    function seedBaseOf(uint256 runId, uint64 round) internal view returns (bytes32 base) {
        (, base,) = ver.seedOf(runId, round);
    }

    function warpToClaim(uint256 runId) internal {
        vm.warp(reg.roundTimes(runId).challengeEnd);
        vm.roll(block.number + 1);
    }

    function refOf(uint256 runId, address solver, uint8 slot) internal view returns (AttestationRef memory) {
        return AttestationRef({runId: runId, round: reg.roundTimes(runId).round, solver: solver, slot: slot});
    }

    function attestPassAs(AttestationRef memory ref, CommitmentData memory c) internal returns (address verifier) {
        (verifier,) = ver.assignedVerifier(ref);
        _autoOpen(ref.runId, ref.round, ref.solver, c);
        uint256 bond = reg.runParams(ref.runId).attestationBond;
        vm.deal(verifier, verifier.balance + bond);
        vm.prank(verifier);
        ver.attestPass{value: bond}(ref, c);
    }

    /// @dev The standing passes + cleared fails that accept a commitment of `round` (Verification._needed, issue 37):
    ///      a strict majority of the round's seats, min(verifiersPerCommitment, verifierCount) / 2 + 1; 0 before the
    ///      seed is drawn.
    function neededOf(uint256 runId, uint64 round) internal view returns (uint256) {
        Verification.RoundSeed memory rs = ver.roundSeed(runId, round);
        if (rs.attestEnd == 0) return 0;
        uint256 seats = rs.verifiers < rs.verifierCount ? rs.verifiers : rs.verifierCount;
        return seats / 2 + 1;
    }

    /// @dev Top `solver`'s commitment `c` of the current round up to acceptance: pass attestations, lowest seat first,
    ///      by the assigned verifiers of seats nobody attested yet (a seat held by the solver itself is skipped), until
    ///      its standing passes + cleared fails reach neededOf. Returns the seats it attested.
    function attestMajorityAs(uint256 runId, address solver, CommitmentData memory c)
        internal
        returns (uint256 attested)
    {
        uint64 round = reg.roundTimes(runId).round;
        uint256 needed = neededOf(runId, round);
        Verification.RoundSeed memory rs = ver.roundSeed(runId, round);
        uint256 seats = rs.verifiers < rs.verifierCount ? rs.verifiers : rs.verifierCount;
        for (uint8 slot; slot < seats; ++slot) {
            Verification.CommitmentStatus memory st = ver.commitmentStatusOf(runId, round, solver);
            if (st.roundPlusOne == round + 1 && st.passes >= needed) return attested;
            AttestationRef memory ref = AttestationRef(runId, round, solver, slot);
            (Verification.AttestationState state,,,) = ver.attestationOf(ref);
            if (state != Verification.AttestationState.None) continue;
            (, bool eligible) = ver.assignedVerifier(ref);
            if (!eligible) continue;
            attestPassAs(ref, c);
            ++attested;
        }
        Verification.CommitmentStatus memory last = ver.commitmentStatusOf(runId, round, solver);
        require(last.passes >= needed, "attestMajorityAs: not enough seats to accept");
    }

    /// @dev Segment of draw `sampleIndex` of the seat `ref` (each seat has its own samples).
    function sampleSegment(AttestationRef memory ref, uint16 sampleIndex) internal view returns (uint256) {
        return ver.sampledSegment(ref.runId, ref.round, ref.solver, ref.slot, sampleIndex);
    }

    function attestFailAs(AttestationRef memory ref, CommitmentData memory c, uint16 sampleIndex)
        internal
        returns (address verifier)
    {
        (verifier,) = ver.assignedVerifier(ref);
        _autoOpen(ref.runId, ref.round, ref.solver, c);
        (LeafData memory leaf, bytes32[] memory proof) =
            leafAt(ref.runId, ref.round, ref.solver, sampleSegment(ref, sampleIndex));
        uint256 bond = reg.runParams(ref.runId).attestationBond;
        vm.deal(verifier, verifier.balance + bond);
        vm.prank(verifier);
        ver.attestFail{value: bond}(ref, c, sampleIndex, leaf, proof);
    }

    /// @dev With autoOpen, first reports the round's commitAs commitments still unresolved (settle needs none).
    function claimAndSettle(uint256 runId, bytes32 theta) internal {
        if (autoOpen) reportUnresolved(runId);
        uint64 round = reg.roundTimes(runId).round;
        uint256 bond = reg.runEconomics(runId).challengeBond;
        vm.prank(creator);
        reg.postClaim{value: bond}(runId, round, theta);
        vm.warp(block.timestamp + reg.runParams(runId).challengeWindow);
        reg.settle(runId, round);
    }

    // ------------------------------------------------------------------ disputes

    function challengeAs(address challenger, AttestationRef memory ref, CommitmentData memory c, uint16 sampleIndex)
        internal
        returns (DisputeSubject memory subject)
    {
        (LeafData memory leaf, bytes32[] memory proof) =
            leafAt(ref.runId, ref.round, ref.solver, sampleSegment(ref, sampleIndex));
        uint256 bond = reg.runEconomics(ref.runId).challengeBond;
        vm.deal(challenger, challenger.balance + bond);
        vm.prank(challenger);
        dis.challengeAttestation{value: bond}(ref, c, sampleIndex, leaf, proof);
        subject = DisputeSubject(dis.KIND_ATTESTATION(), ref.runId, ref.round, ref.solver, ref.slot, 0);
    }

    /// @dev The pool keys drawJury takes: the key of each seat the registry draws for the dispute's seed.
    function poolOf(DisputeSubject memory subject) internal view returns (bytes[] memory pool) {
        bytes32 id = dis.disputeIdOf(subject);
        Disputes.Dispute memory d = dis.disputeOf(id);
        bytes32 seed = keccak256(abi.encode(blockhash(uint256(d.openedBlock) + 1), id));
        (address[] memory accounts,) = jurors.drawPool(seed, juryPoolSize(subject), d.openedBlock);
        pool = new bytes[](accounts.length);
        for (uint256 seat; seat < accounts.length; ++seat) {
            pool[seat] = jurorPks[jurorIndexPlusOne[accounts[seat]] - 1];
        }
    }

    /// @dev jurySize + JURY_PARTY_SLACK at the dispute's appeal level.
    function juryPoolSize(DisputeSubject memory subject) internal view returns (uint256 size) {
        size = reg.runParams(subject.runId).jurySize;
        uint256 appeals = dis.disputeOf(dis.disputeIdOf(subject)).appeals;
        for (uint256 i; i < appeals; ++i) {
            size = 2 * size + 1 < Constants.MAX_JURY_SIZE ? 2 * size + 1 : Constants.MAX_JURY_SIZE;
        }
        size += Constants.JURY_PARTY_SLACK;
    }

    function drawJury(DisputeSubject memory subject) internal {
        vm.roll(block.number + 2);
        dis.drawJury(subject, poolOf(subject));
    }

    struct VerdictInput {
        uint32 signers;
        bytes signature;
        bytes aggregate;
        NonSigner[] nonSigners;
    }

    /// @dev Sign `challengerWins` with the first `count` eligible seats (all eligible seats if count is 0).
    function buildVerdict(DisputeSubject memory subject, bool challengerWins, uint256 count)
        internal
        view
        returns (VerdictInput memory)
    {
        uint32 eligible = dis.disputeOf(dis.disputeIdOf(subject)).eligible;
        uint32 signing;
        uint256 signed;
        for (uint256 seat; seat < 32 && (count == 0 || signed < count); ++seat) {
            if (eligible >> seat & 1 == 0) continue;
            signing |= uint32(1) << seat;
            ++signed;
        }
        return buildVerdictOf(subject, challengerWins, signing);
    }

    /// @dev Sign `challengerWins` with the eligible seats in the `signing` bitmap; the other eligible seats are the
    ///      non-signers.
    function buildVerdictOf(DisputeSubject memory subject, bool challengerWins, uint32 signing)
        internal
        view
        returns (VerdictInput memory v)
    {
        bytes32 id = dis.disputeIdOf(subject);
        Disputes.Dispute memory d = dis.disputeOf(id);
        bytes memory message = dis.verdictMessage(id, challengerWins);
        NonSigner[] memory buffer = new NonSigner[](d.poolSize);
        uint256 nonSigned;
        for (uint256 seat; seat < d.poolSize; ++seat) {
            if (d.eligible >> seat & 1 == 0) continue;
            uint256 idx = jurorIndexAtSeat(subject, seat);
            v.aggregate = v.aggregate.length == 0 ? jurorPks[idx] : BLS.g1Add(v.aggregate, jurorPks[idx]);
            if (signing >> seat & 1 == 1) {
                v.signers |= uint32(1) << seat;
                v.signature = TestBLS.addG2(v.signature, TestBLS.sign(jurorSks[idx], message));
            } else {
                buffer[nonSigned++] = NonSigner({seat: uint8(seat), account: jurorAddrs[idx], publicKey: jurorPks[idx]});
            }
        }
        v.nonSigners = new NonSigner[](nonSigned);
        for (uint256 i; i < nonSigned; ++i) {
            v.nonSigners[i] = buffer[i];
        }
    }

    function decide(DisputeSubject memory subject, bool challengerWins, uint256 count) internal {
        VerdictInput memory v = buildVerdict(subject, challengerWins, count);
        dis.submitVerdict(subject, challengerWins, v.signers, v.signature, v.aggregate, v.nonSigners);
    }

    function jurorIndexAtSeat(DisputeSubject memory subject, uint256 seat) internal view returns (uint256) {
        Disputes.Dispute memory d = dis.disputeOf(dis.disputeIdOf(subject));
        (address juror,) = jurors.seatOf(d.jurySeed, seat, d.poolSize, d.openedBlock);
        return jurorIndexPlusOne[juror] - 1;
    }

    function tokenOf(uint256 runId) internal view returns (RunShares) {
        return shares.shareToken(runId);
    }
}
