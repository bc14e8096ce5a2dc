// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Constants} from "./Constants.sol";
import {IStakeManager} from "./interfaces/IStakeManager.sol";

/// @title StakeManager
/// @notice Native-ETH stake per (account, role). Stake is bonded, then unbonding for `unbondingDelay`
///         seconds, then withdrawable. Bonded and unbonding stake are both slashable; only the protocol's
///         own contracts can slash, at most once per fault key, capped at what the account still has.
/// @dev How stake behind an open claim is kept in place (docs/contracts.md, "Locking"):
///      - solvers: a commitment needs `bondedOf >= solverMinStake` at commit time, and RunRegistry only
///        accepts runs whose commit + attest + 2 * (challenge + dispute timeout) windows fit inside
///        `unbondingDelay`; unbonding stake stays slashable until it is withdrawn, so stake that backed
///        a commitment is still here at every moment that commitment can be found faulty.
///      - verifiers and jurors: registering (in a run, or as a juror) locks the role; a locked role
///        cannot start unbonding, and deregistering unlocks it, after which the same delay applies.
///      Every wei held is bonded or unbonding stake: ETH balance == sum(bonded + unbonding).
contract StakeManager is IStakeManager {
    /// @notice Bonded and unbonding stake of one (account, role): one storage slot.
    struct Stake {
        // PACKING: one slot; apart they cost +21,309 gas on a first requestUnbond and +2,890 per slash, and save
        //          4,948 per withdraw (the refund for clearing a slot).
        uint128 bonded;
        uint128 unbonding;
    }

    /// @notice Unbonding clock and locks of one (account, role).
    struct Meta {
        // PACKING: one slot; apart they cost +2,053 gas per requestUnbond and save 277 per lock or unlock.
        uint40 unbondingSince;
        uint32 locks;
    }

    /// @inheritdoc IStakeManager
    uint256 public immutable unbondingDelay;
    /// @notice The protocol contracts allowed to lock, unlock and slash.
    address public immutable runRegistry;
    address public immutable verification;
    address public immutable disputes;

    mapping(address account => mapping(uint8 role => Stake)) internal _stakes;
    mapping(address account => mapping(uint8 role => Meta)) internal _meta;
    /// @notice Whether a fault key has been slashed (a slash happens at most once per key).
    mapping(bytes32 faultKey => bool) public faultSlashed;
    /// @notice What was taken for each slashed fault key.
    mapping(bytes32 faultKey => uint256) public slashedAmount;

    /// @notice Stake was added to the bonded stake of (account, role).
    event StakeDeposited(address indexed account, uint8 indexed role, uint256 amount, uint256 bonded);
    /// @notice Bonded stake started unbonding; all unbonding stake of (account, role) is released at `releaseTime`.
    event UnbondingRequested(
        address indexed account, uint8 indexed role, uint256 amount, uint256 unbonding, uint256 releaseTime
    );
    /// @notice Unbonded stake left the contract to its owner.
    event StakeWithdrawn(address indexed account, uint8 indexed role, uint256 amount);
    /// @notice A protocol contract locked (account, role) against unbonding; `locks` is the new count.
    event StakeLocked(address indexed account, uint8 indexed role, address indexed by, uint256 locks);
    /// @notice A protocol contract removed a lock; `locks` is the new count.
    event StakeUnlocked(address indexed account, uint8 indexed role, address indexed by, uint256 locks);
    /// @notice Stake was slashed for `faultKey` and sent to `recipient` (the protocol contract paying it out).
    event StakeSlashed(
        address indexed account,
        uint8 indexed role,
        bytes32 indexed faultKey,
        uint256 requested,
        uint256 taken,
        address recipient,
        uint256 bondedAfter,
        uint256 unbondingAfter
    );

    error InvalidRole(uint8 role);
    error ZeroAmount();
    error InsufficientBonded(uint256 bonded, uint256 requested);
    error RoleLocked(address account, uint8 role, uint256 locks);
    error NotLocked(address account, uint8 role);
    error UnbondingNotReady(uint256 releaseTime, uint256 now_);
    error NothingToWithdraw();
    error NotProtocol(address caller);
    error TransferFailed(address to, uint256 amount);
    error InvalidDelay(uint256 delay);

    modifier onlyProtocol() {
        if (msg.sender != runRegistry && msg.sender != verification && msg.sender != disputes) {
            revert NotProtocol(msg.sender);
        }
        _;
    }

    modifier validRole(uint8 role) {
        if (role != Constants.ROLE_SOLVER && role != Constants.ROLE_VERIFIER) revert InvalidRole(role);
        _;
    }

    /// @param unbondingDelay_ Seconds from an unbonding request to the withdrawal (> 0).
    /// @param runRegistry_ The RunRegistry (may slash, lock and unlock).
    /// @param verification_ The Verification contract (may slash, lock and unlock).
    /// @param disputes_ The Disputes contract (may slash, lock and unlock).
    constructor(uint256 unbondingDelay_, address runRegistry_, address verification_, address disputes_) {
        if (unbondingDelay_ == 0 || unbondingDelay_ > type(uint32).max) revert InvalidDelay(unbondingDelay_);
        unbondingDelay = unbondingDelay_;
        runRegistry = runRegistry_;
        verification = verification_;
        disputes = disputes_;
    }

    /// @notice Add `msg.value` to the caller's bonded stake in `role`.
    /// @param role Constants.ROLE_SOLVER or Constants.ROLE_VERIFIER.
    function deposit(uint8 role) external payable validRole(role) {
        if (msg.value == 0) revert ZeroAmount();
        Stake storage s = _stakes[msg.sender][role];
        // INVARIANT: all of msg.value becomes bonded stake, so the balance stays == sum(bonded + unbonding).
        s.bonded += uint128(msg.value);
        emit StakeDeposited(msg.sender, role, msg.value, s.bonded);
    }

    /// @notice Move `amount` of bonded stake to unbonding; withdrawable `unbondingDelay` seconds later.
    /// @dev Restarts the clock for everything unbonding in this role. Reverts while the role is locked.
    /// @param role The stake role.
    /// @param amount Wei to unbond (> 0, at most the bonded stake).
    function requestUnbond(uint8 role, uint256 amount) external validRole(role) {
        if (amount == 0) revert ZeroAmount();
        Meta storage m = _meta[msg.sender][role];
        // INVARIANT: a locked role (open registration) never starts unbonding, so its stake stays slashable.
        if (m.locks != 0) revert RoleLocked(msg.sender, role, m.locks);
        Stake storage s = _stakes[msg.sender][role];
        if (s.bonded < amount) revert InsufficientBonded(s.bonded, amount);
        s.bonded -= uint128(amount);
        s.unbonding += uint128(amount);
        // INVARIANT: each request restarts the one clock: no wei leaves < unbondingDelay after it started unbonding.
        m.unbondingSince = uint40(block.timestamp);
        emit UnbondingRequested(msg.sender, role, amount, s.unbonding, block.timestamp + unbondingDelay);
    }

    /// @notice Withdraw all unbonding stake of `role` once its delay has passed.
    /// @param role The stake role.
    function withdraw(uint8 role) external validRole(role) {
        Stake storage s = _stakes[msg.sender][role];
        uint256 amount = s.unbonding;
        if (amount == 0) revert NothingToWithdraw();
        uint256 releaseTime = uint256(_meta[msg.sender][role].unbondingSince) + unbondingDelay;
        if (block.timestamp < releaseTime) revert UnbondingNotReady(releaseTime, block.timestamp);
        // INVARIANT: checks-effects-interactions: the stake is zeroed before the ETH leaves, so it is paid once.
        s.unbonding = 0;
        emit StakeWithdrawn(msg.sender, role, amount);
        (bool ok,) = msg.sender.call{value: amount}("");
        if (!ok) revert TransferFailed(msg.sender, amount);
    }

    /// @inheritdoc IStakeManager
    function lock(address account, uint8 role) external onlyProtocol validRole(role) {
        Meta storage m = _meta[account][role];
        m.locks += 1;
        emit StakeLocked(account, role, msg.sender, m.locks);
    }

    /// @inheritdoc IStakeManager
    function unlock(address account, uint8 role) external onlyProtocol validRole(role) {
        Meta storage m = _meta[account][role];
        if (m.locks == 0) revert NotLocked(account, role);
        m.locks -= 1;
        emit StakeUnlocked(account, role, msg.sender, m.locks);
    }

    /// @inheritdoc IStakeManager
    /// @dev Takes from bonded stake first, then from unbonding stake. A key already slashed takes 0
    ///      (no revert, so a dispute resolution that meets an earlier slash of the same fault completes).
    function slash(address account, uint8 role, uint256 amount, bytes32 faultKey)
        external
        onlyProtocol
        validRole(role)
        returns (uint256 taken)
    {
        // INVARIANT: one slash per fault key: the key is marked before anything is taken, so a repeat takes 0.
        if (faultSlashed[faultKey]) return 0;
        faultSlashed[faultKey] = true;
        Stake storage s = _stakes[account][role];
        uint256 fromBonded = amount < s.bonded ? amount : s.bonded;
        uint256 rest = amount - fromBonded;
        uint256 fromUnbonding = rest < s.unbonding ? rest : s.unbonding;
        // INVARIANT: taken <= bonded + unbonding (each part capped): a slash never takes more than is held.
        taken = fromBonded + fromUnbonding;
        s.bonded -= uint128(fromBonded);
        s.unbonding -= uint128(fromUnbonding);
        slashedAmount[faultKey] = taken;
        emit StakeSlashed(account, role, faultKey, amount, taken, msg.sender, s.bonded, s.unbonding);
        // INVARIANT: checks-effects-interactions: stake and slashedAmount are written before the ETH is sent.
        if (taken > 0) {
            (bool ok,) = msg.sender.call{value: taken}("");
            if (!ok) revert TransferFailed(msg.sender, taken);
        }
    }

    /// @inheritdoc IStakeManager
    function bondedOf(address account, uint8 role) external view returns (uint256) {
        return _stakes[account][role].bonded;
    }

    /// @notice Full stake record of (account, role).
    /// @param account The staker.
    /// @param role The role.
    /// @return bonded Bonded stake.
    /// @return unbonding Stake waiting out the unbonding delay (still slashable).
    /// @return releaseTime When the unbonding stake becomes withdrawable (0 if none).
    /// @return locks Open registrations that forbid unbonding.
    function stakeOf(address account, uint8 role)
        external
        view
        returns (uint256 bonded, uint256 unbonding, uint256 releaseTime, uint256 locks)
    {
        Stake memory s = _stakes[account][role];
        Meta memory m = _meta[account][role];
        releaseTime = s.unbonding == 0 ? 0 : uint256(m.unbondingSince) + unbondingDelay;
        return (s.bonded, s.unbonding, releaseTime, m.locks);
    }
}
