// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @notice Everything a run is created with. Hashes and H/k describe the training (the full config
///         lives off-chain under `configHash`); the rest are the on-chain rules of the run.
struct RunTerms {
    bytes32 configHash; // SHA-256 of the canonical run config (protocol.config.compute_config_hash)
    bytes32 datasetRoot; // content root of the dataset
    bytes32 theta0Hash; // state hash of the initial model theta_0
    uint32 innerSteps; // H: inner steps per round
    uint32 stepsPerSegment; // k: steps per segment; segments per commitment = H / k
    uint16 samplesPerCommitment; // s: segments replayed per commitment (with replacement)
    uint8 verifiersPerCommitment; // v: verifier seats per commitment
    uint8 jurySize; // J: jurors per dispute; quorum = ceil(2J/3)
    uint32 commitWindow; // seconds from round start during which solvers commit
    uint32 attestWindow; // seconds after the commit window during which verifiers attest
    uint32 challengeWindow; // seconds after the attest window (and after a theta claim) for challenges
    uint32 disputeTimeout; // seconds after a challenge after which it expires without verdict
    uint96 solverMinStake; // solver stake needed to commit; slashed (capped) on a proven fault
    uint96 verifierMinStake; // verifier stake needed to register; slashed (capped) on a wrong attestation
    uint96 attestationBond; // wei posted with each attestation
    uint96 challengeBond; // wei posted with each challenge and each theta claim
    uint16 solverShareBps; // share of each round's shares for solvers (by verified tokens)
    uint16 verifierShareBps; // ... for verifiers (by standing attestations)
    uint16 jurorShareBps; // ... for jurors (by signed verdicts)
    uint128 sharesPerRound; // share units (18 decimals) minted at most per settled round
    uint32 revenueReleasePeriod; // seconds over which each revenue payment is released
    uint32 maxRounds; // rounds of the run; the reward pool is paid out across them
    uint32 startDelay; // seconds from creation to round 0's start (<= MAX_START_DELAY): nodes start and solvers anchor
}

/// @notice A solver's commitment for one round, passed back by later calls and checked against the
///         stored hash (the chain stores keccak256(abi.encode(root, deltaHash, tokens)) only).
struct CommitmentData {
    bytes32 root; // Merkle root of the segment leaves
    bytes32 deltaHash; // state hash of the pseudo-gradient
    uint64 tokens; // tokens trained on in the round (the sum over the leaves)
}

/// @notice The fields of a segment leaf that a commitment reference does not already fix.
struct LeafData {
    bytes32 startHash;
    bytes32 endHash;
    bytes32 sketchHash;
    uint64 tokens;
}

/// @notice One verifier seat of one commitment.
struct AttestationRef {
    uint256 runId;
    uint64 round;
    address solver;
    uint8 slot;
}

/// @notice What a dispute is about. kind 1: an attestation (runId, round, solver, slot);
///         kind 2: a theta claim (runId, round, claimNonce). disputeId = keccak256(abi.encode(subject)).
struct DisputeSubject {
    uint8 kind;
    uint256 runId;
    uint64 round;
    address solver;
    uint8 slot;
    uint16 claimNonce;
}

/// @notice A registered juror's key, passed in calldata and checked against the registry's hash.
struct JurorKey {
    address account;
    bytes publicKey; // G1, 128-byte EIP-2537 encoding
}

/// @notice A jury seat that did not sign a verdict, with its key (subtracted from the pool aggregate).
struct NonSigner {
    uint8 seat;
    address account;
    bytes publicKey;
}
