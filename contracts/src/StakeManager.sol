// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Constants} from "./Constants.sol";
import {IStakeManager} from "./interfaces/IStakeManager.sol";

/// @title StakeManager
/// @notice Native-ETH stake per (account, role). Stake is bonded, then unbonding for `unbondingDelay`
///         seconds, then withdrawable. Bonded and unbonding stake are both slashable; only the protocol's
///         own contracts can slash, at most once per fault key, capped at what the account still has.
///         Every obligation reserves the stake that backs it: a solver's membership of a run reserves the run's
///         `solverMinStake`, a verifier's registration in a run its `verifierMinStake`, a juror's registration
///         JUROR_MIN_STAKE. One wei of bonded stake backs one obligation: `reserve` needs free bonded stake
///         (bonded - reserved) for the whole amount, and unbonding cannot take reserved stake.
/// @dev How stake behind an open claim is kept in place (docs/contracts.md, "Stake reserved per obligation"):
///      - an obligation's stake is reserved from its start (join, register) to its release (leave, deregister,
///        releaseJuror), and RunRegistry only accepts runs whose commit + attest + 2 * (challenge + 3 dispute
///        timeouts) fit inside `unbondingDelay`; unbonding stake stays slashable until it is withdrawn.
///      - a slash takes stake, never a reservation: an account whose bonded stake fell below what it has reserved
///        is "not covered" (`isCovered`) and can take no new obligation and commit or attest nowhere until it
///        tops up; its reservations stay, so a slash in one run leaves every other run's obligation unbacked
///        rather than silently backed by nothing.
///      Every wei held is bonded or unbonding stake: ETH balance == sum(bonded + unbonding).
///      Storage: (bonded, reserved) in one slot, (unbonding clock, unbonding) in another, so the coverage check of
///      every commit and attest is one SLOAD.
contract StakeManager is IStakeManager {
    /// @notice Bonded and reserved stake of one (account, role): one storage slot.
    struct Stake {
        // PACKING: bonded and reserved share a slot because the coverage check (every commit and attest),
        //          reserve and release read both: in two slots (bonded with unbonding, as before issue 16's
        //          finding 6) the check cost +2,100 gas per commit and per attest.
        uint128 bonded;
        uint128 reserved;
    }

    /// @notice Unbonding stake and its clock of one (account, role): one slot (requestUnbond and withdraw read both).
    struct Meta {
        uint40 unbondingSince;
        uint128 unbonding;
    }

    /// @inheritdoc IStakeManager
    uint256 public immutable unbondingDelay;
    /// @notice The protocol contracts allowed to reserve, release and slash.
    address public immutable runRegistry;
    address public immutable verification;
    address public immutable disputes;
    address public immutable jurorRegistry;
    address public immutable verifierRegistry;
    address public immutable plants;

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
    /// @notice A protocol contract reserved `amount` of (account, role) stake for an obligation; `reserved` is the
    ///         new total.
    event StakeReserved(
        address indexed account, uint8 indexed role, address indexed by, uint256 amount, uint256 reserved
    );
    /// @notice A protocol contract released `amount` of a reservation; `reserved` is the new total.
    event StakeReleased(
        address indexed account, uint8 indexed role, address indexed by, uint256 amount, uint256 reserved
    );
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
    error InsufficientFreeStake(uint256 bonded, uint256 reserved, uint256 requested);
    error NotReserved(uint256 reserved, uint256 amount);
    error UnbondingNotReady(uint256 releaseTime, uint256 now_);
    error NothingToWithdraw();
    error NotProtocol(address caller);
    error TransferFailed(address to, uint256 amount);
    error InvalidDelay(uint256 delay);

    modifier onlyProtocol() {
        if (
            msg.sender != runRegistry && msg.sender != verification && msg.sender != disputes
                && msg.sender != jurorRegistry && msg.sender != verifierRegistry && msg.sender != plants
        ) {
            revert NotProtocol(msg.sender);
        }
        _;
    }

    modifier validRole(uint8 role) {
        if (role != Constants.ROLE_SOLVER && role != Constants.ROLE_VERIFIER) revert InvalidRole(role);
        _;
    }

    /// @param unbondingDelay_ Seconds from an unbonding request to the withdrawal (> 0).
    /// @param runRegistry_ The RunRegistry (may slash, reserve and release).
    /// @param verification_ The Verification contract (may slash, reserve and release).
    /// @param disputes_ The Disputes contract (may slash, reserve and release).
    /// @param jurorRegistry_ The JurorRegistry (may reserve and release; it never slashes).
    /// @param verifierRegistry_ The VerifierRegistry (may reserve and release; it never slashes).
    /// @param plants_ Plants (slashes a solver that withholds the reveal of a plant).
    constructor(
        uint256 unbondingDelay_,
        address runRegistry_,
        address verification_,
        address disputes_,
        address jurorRegistry_,
        address verifierRegistry_,
        address plants_
    ) {
        if (unbondingDelay_ == 0 || unbondingDelay_ > type(uint32).max) {
            revert InvalidDelay(unbondingDelay_);
        }
        unbondingDelay = unbondingDelay_;
        runRegistry = runRegistry_;
        verification = verification_;
        disputes = disputes_;
        jurorRegistry = jurorRegistry_;
        verifierRegistry = verifierRegistry_;
        plants = plants_;
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

    /// @notice Move `amount` of free bonded stake (not reserved by an obligation) to unbonding; withdrawable
    ///         `unbondingDelay` seconds later.
    /// @dev Restarts the clock for everything unbonding in this role.
    /// @param role The stake role.
    /// @param amount Wei to unbond (> 0, at most the bonded stake minus the reserved stake).
    function requestUnbond(uint8 role, uint256 amount) external validRole(role) {
        if (amount == 0) revert ZeroAmount();
        Meta storage m = _meta[msg.sender][role];
        Stake storage s = _stakes[msg.sender][role];
        if (s.bonded < amount) revert InsufficientBonded(s.bonded, amount);
        // INVARIANT: unbonding never takes reserved stake: bonded - amount >= reserved after the request.
        if (s.bonded - amount < s.reserved) revert InsufficientFreeStake(s.bonded, s.reserved, amount);
        s.bonded -= uint128(amount);
        m.unbonding += uint128(amount);
        // INVARIANT: each request restarts the one clock: no wei leaves < unbondingDelay after it started unbonding.
        m.unbondingSince = uint40(block.timestamp);
        emit UnbondingRequested(msg.sender, role, amount, m.unbonding, block.timestamp + unbondingDelay);
    }

    /// @notice Withdraw all unbonding stake of `role` once its delay has passed.
    /// @param role The stake role.
    function withdraw(uint8 role) external validRole(role) {
        Meta storage m = _meta[msg.sender][role];
        uint256 amount = m.unbonding;
        if (amount == 0) revert NothingToWithdraw();
        uint256 releaseTime = uint256(m.unbondingSince) + unbondingDelay;
        if (block.timestamp < releaseTime) revert UnbondingNotReady(releaseTime, block.timestamp);
        // INVARIANT: checks-effects-interactions: the stake is zeroed before the ETH leaves, so it is paid once.
        m.unbonding = 0;
        emit StakeWithdrawn(msg.sender, role, amount);
        (bool ok,) = msg.sender.call{value: amount}("");
        if (!ok) revert TransferFailed(msg.sender, amount);
    }

    /// @inheritdoc IStakeManager
    function reserve(address account, uint8 role, uint256 amount) external onlyProtocol validRole(role) {
        Stake storage s = _stakes[account][role];
        // INVARIANT: reserved <= bonded after every reserve: one wei of bonded stake backs one obligation.
        if (s.bonded < uint256(s.reserved) + amount) revert InsufficientFreeStake(s.bonded, s.reserved, amount);
        s.reserved += uint128(amount);
        emit StakeReserved(account, role, msg.sender, amount, s.reserved);
    }

    /// @inheritdoc IStakeManager
    function release(address account, uint8 role, uint256 amount) external onlyProtocol validRole(role) {
        Stake storage s = _stakes[account][role];
        // INVARIANT: only what was reserved is released (callers release exactly what they reserved, once).
        if (s.reserved < amount) revert NotReserved(s.reserved, amount);
        s.reserved -= uint128(amount);
        emit StakeReleased(account, role, msg.sender, amount, s.reserved);
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
        uint256 bondedAfter;
        uint256 unbondingAfter;
        (taken, bondedAfter, unbondingAfter) = _take(account, role, amount);
        slashedAmount[faultKey] = taken;
        emit StakeSlashed(account, role, faultKey, amount, taken, msg.sender, bondedAfter, unbondingAfter);
        // INVARIANT: checks-effects-interactions: stake and slashedAmount are written before the ETH is sent.
        if (taken > 0) {
            (bool ok,) = msg.sender.call{value: taken}("");
            if (!ok) revert TransferFailed(msg.sender, taken);
        }
    }

    /// @dev Take up to `amount` of (account, role) stake, bonded first, then unbonding; returns what was taken and
    ///      what is left of each.
    function _take(address account, uint8 role, uint256 amount)
        internal
        returns (uint256 taken, uint256 bondedAfter, uint256 unbondingAfter)
    {
        Stake storage s = _stakes[account][role];
        Meta storage m = _meta[account][role];
        uint256 fromBonded = amount < s.bonded ? amount : s.bonded;
        uint256 rest = amount - fromBonded;
        uint256 unbonding = m.unbonding;
        uint256 fromUnbonding = rest < unbonding ? rest : unbonding;
        // INVARIANT: taken <= bonded + unbonding (each part capped): a slash never takes more than is held.
        taken = fromBonded + fromUnbonding;
        s.bonded -= uint128(fromBonded);
        if (fromUnbonding > 0) m.unbonding = uint128(unbonding - fromUnbonding);
        return (taken, s.bonded, unbonding - fromUnbonding);
    }

    /// @inheritdoc IStakeManager
    function bondedOf(address account, uint8 role) external view returns (uint256) {
        return _stakes[account][role].bonded;
    }

    /// @inheritdoc IStakeManager
    function isCovered(address account, uint8 role) external view returns (bool) {
        Stake memory s = _stakes[account][role];
        return s.bonded >= s.reserved;
    }

    /// @notice Full stake record of (account, role).
    /// @param account The staker.
    /// @param role The role.
    /// @return bonded Bonded stake.
    /// @return unbonding Stake waiting out the unbonding delay (still slashable).
    /// @return releaseTime When the unbonding stake becomes withdrawable (0 if none).
    /// @return reserved Stake reserved by open obligations (cannot start unbonding).
    function stakeOf(address account, uint8 role)
        external
        view
        returns (uint256 bonded, uint256 unbonding, uint256 releaseTime, uint256 reserved)
    {
        Stake memory s = _stakes[account][role];
        Meta memory m = _meta[account][role];
        releaseTime = m.unbonding == 0 ? 0 : uint256(m.unbondingSince) + unbondingDelay;
        return (s.bonded, m.unbonding, releaseTime, s.reserved);
    }
}
