// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Constants} from "./Constants.sol";
import {IJurorRegistry} from "./interfaces/IJurorRegistry.sol";
import {IStakeManager} from "./interfaces/IStakeManager.sol";
import {BLS} from "./libraries/BLS.sol";
import {Checkpoints} from "./libraries/Checkpoints.sol";
import {Sampling} from "./libraries/Sampling.sol";

/// @title JurorRegistry
/// @notice The jurors: staked verifiers with a BLS key whose proof of possession signs their own address. The
///         list holds active jurors only (swap-and-pop, no cap, no dead entries) and remembers every past state,
///         so a dispute draws its jury from the registry as it was in the block the dispute opened, before the
///         jury seed (the next block's hash) existed: registering or leaving after the seed is public moves no
///         seat.
/// @dev History: each list index keeps checkpoints (block, juror) and the list size keeps checkpoints (block,
///      size) (libraries/Checkpoints.sol); a read "at block B" takes the last checkpoint written in a block <= B:
///      one SLOAD when the index did not change since B, else a binary search over that index's own history.
///      Seats: with n jurors at the snapshot and a pool of `count` seats, seat s is index s when n <= count (the
///      whole registry sits), else index Sampling.sample(seed, s, n) = uint256(keccak256(abi.encode(seed, s))) % n:
///      every seat an
///      independent draw, so the order in which sybils registered gives them nothing.
///      Stake: registering reserves JUROR_MIN_STAKE of free verifier stake (StakeManager.reserve: stake that backs
///      a run's verifier registration cannot back a juror too). Leaving: `deregisterJuror` removes the entry at
///      once (the last entry moves into its index) and starts the exit delay; the reservation is released by
///      `releaseJuror` once JUROR_EXIT_DELAY has passed, so a juror's stake outlives every jury it could have
///      been drawn into.
contract JurorRegistry is IJurorRegistry {
    using Checkpoints for Checkpoints.Trace;

    /// @notice A juror's record.
    struct Juror {
        // PACKING: one slot besides the key hash; apart they cost +20,000 gas per first registration.
        uint32 indexPlusOne; // list index + 1 while active, 0 otherwise
        uint40 exitAt; // when a left juror may release its stake reservation (0: no exit pending)
        bool reserved; // whether the juror holds its stake reservation (active or exiting)
    }

    IStakeManager public immutable stakeManager;

    /// @notice The registered key of each account: keccak256 of its 128-byte EIP-2537 encoding (fixed for life).
    mapping(address account => bytes32) public keyHashOf;
    /// @notice Whether a key (keccak256 of its encoding) belongs to some account: a key registers once.
    mapping(bytes32 keyHash => bool) public keyTaken;
    /// @notice Each account's juror record.
    mapping(address account => Juror) public jurors;
    /// @dev The juror at each list index (as uint160) and the list size, by block.
    mapping(uint256 index => Checkpoints.Trace) internal _indexHistory;
    Checkpoints.Trace internal _sizeHistory;

    /// @notice A juror joined (or returned) at list index `index` with `publicKey`.
    event JurorRegistered(address indexed juror, uint256 index, bytes publicKey);
    /// @notice A juror left index `index`; `moved` (the former last entry, or the zero address when the leaver was
    ///         last) now sits there. Its stake reservation is released by `releaseJuror` from `exitAt`.
    event JurorDeregistered(address indexed juror, uint256 index, address moved, uint256 exitAt);
    /// @notice A juror that left released its stake reservation.
    event JurorReleased(address indexed juror);

    error InvalidProofOfPossession();
    error KeyTaken(bytes32 keyHash);
    error KeyMismatch(address juror);
    error AlreadyRegistered(address juror);
    error NotRegistered(address juror);
    error NotExiting(address juror);
    error ExitNotReady(uint256 exitAt);

    /// @param stakeManager_ The StakeManager (reserves the jurors' verifier stake).
    constructor(IStakeManager stakeManager_) {
        stakeManager = stakeManager_;
    }

    /// @notice Join the registry. First time: `publicKey` (G1, 128-byte EIP-2537) with a proof of possession that
    ///         signs abi.encodePacked(msg.sender, compressed key) under the PoP tag, so a copied key cannot be
    ///         registered by another account; a key registers once. Later: the same key again (no proof). Reserves
    ///         JUROR_MIN_STAKE of free verifier stake (StakeManager.InsufficientFreeStake otherwise) until the juror
    ///         leaves and its exit delay passes.
    /// @param publicKey G1 public key, 128-byte EIP-2537 encoding (not infinity).
    /// @param proofOfPossession G2 signature (256 bytes) of the address-bound PoP message; ignored on a return.
    function registerJuror(bytes calldata publicKey, bytes calldata proofOfPossession) external {
        Juror memory j = jurors[msg.sender];
        if (j.indexPlusOne != 0) revert AlreadyRegistered(msg.sender);
        bytes32 keyHash = keccak256(publicKey);
        bytes32 known = keyHashOf[msg.sender];
        if (known == bytes32(0)) {
            if (keyTaken[keyHash]) revert KeyTaken(keyHash);
            if (!BLS.verifyProofOfPossession(publicKey, msg.sender, proofOfPossession, bytes(Constants.BLS_POP_DST))) {
                revert InvalidProofOfPossession();
            }
            keyHashOf[msg.sender] = keyHash;
            keyTaken[keyHash] = true;
        } else if (known != keyHash) {
            revert KeyMismatch(msg.sender);
        }
        uint256 index = size();
        bool reserveNeeded = !j.reserved;
        // INVARIANT: one reservation per juror from registration until releaseJuror: a return during the exit
        //            delay keeps the reservation it still holds.
        jurors[msg.sender] = Juror({indexPlusOne: uint32(index + 1), exitAt: 0, reserved: true});
        _indexHistory[index].push(uint160(msg.sender));
        _sizeHistory.push(index + 1);
        emit JurorRegistered(msg.sender, index, publicKey);
        if (reserveNeeded) stakeManager.reserve(msg.sender, Constants.ROLE_VERIFIER, Constants.JUROR_MIN_STAKE);
    }

    /// @notice Leave the registry now: later disputes cannot draw the caller (disputes already open still can,
    ///         from their snapshot). The stake reservation stays until `releaseJuror`, JUROR_EXIT_DELAY from now.
    function deregisterJuror() external {
        Juror memory j = jurors[msg.sender];
        if (j.indexPlusOne == 0) revert NotRegistered(msg.sender);
        uint256 index = j.indexPlusOne - 1;
        uint256 last = size() - 1;
        address moved;
        if (index != last) {
            moved = address(uint160(_indexHistory[last].latestValue()));
            jurors[moved].indexPlusOne = uint32(index + 1);
            _indexHistory[index].push(uint160(moved));
        }
        _sizeHistory.push(last);
        uint256 exitAt = block.timestamp + Constants.JUROR_EXIT_DELAY;
        jurors[msg.sender] = Juror({indexPlusOne: 0, exitAt: uint40(exitAt), reserved: true});
        emit JurorDeregistered(msg.sender, index, moved, exitAt);
    }

    /// @notice Release the stake reservation of a juror that left, once its exit delay has passed.
    function releaseJuror() external {
        Juror memory j = jurors[msg.sender];
        if (j.indexPlusOne != 0 || !j.reserved) revert NotExiting(msg.sender);
        if (block.timestamp < j.exitAt) revert ExitNotReady(j.exitAt);
        // INVARIANT: the flag is cleared before the release, so each registration's reservation is released once.
        jurors[msg.sender] = Juror({indexPlusOne: 0, exitAt: 0, reserved: false});
        emit JurorReleased(msg.sender);
        stakeManager.release(msg.sender, Constants.ROLE_VERIFIER, Constants.JUROR_MIN_STAKE);
    }

    // ------------------------------------------------------------------ views

    /// @notice Active jurors now.
    /// @return The list size.
    function size() public view returns (uint256) {
        return _sizeHistory.latestValue();
    }

    /// @inheritdoc IJurorRegistry
    function sizeAt(uint256 blockNumber) public view returns (uint256) {
        return _sizeHistory.valueAt(blockNumber);
    }

    /// @notice The juror at list index `index` in block `blockNumber` (zero address if none was written by then).
    /// @param index The list index.
    /// @param blockNumber The snapshot block.
    /// @return The juror.
    function jurorAt(uint256 index, uint256 blockNumber) public view returns (address) {
        return address(uint160(_indexHistory[index].valueAt(blockNumber)));
    }

    /// @inheritdoc IJurorRegistry
    function seatOf(bytes32 seed, uint256 seat, uint256 count, uint256 snapshotBlock)
        public
        view
        returns (address juror, bytes32 keyHash)
    {
        uint256 n = sizeAt(snapshotBlock);
        if (seat >= count || n == 0) return (address(0), bytes32(0));
        uint256 index = n <= count ? seat : Sampling.sample(seed, seat, n);
        if (index >= n) return (address(0), bytes32(0));
        juror = jurorAt(index, snapshotBlock);
        keyHash = keyHashOf[juror];
    }

    /// @inheritdoc IJurorRegistry
    function drawPool(bytes32 seed, uint256 count, uint256 snapshotBlock)
        external
        view
        returns (address[] memory accounts, bytes32[] memory keyHashes)
    {
        uint256 n = sizeAt(snapshotBlock);
        uint256 seats = n < count ? n : count;
        accounts = new address[](seats);
        keyHashes = new bytes32[](seats);
        // INVARIANT: bounded: count <= MAX_JURY_SIZE + JURY_PARTY_SLACK (Disputes passes at most that).
        for (uint256 s; s < seats; ++s) {
            (accounts[s], keyHashes[s]) = seatOf(seed, s, count, snapshotBlock);
        }
    }
}
