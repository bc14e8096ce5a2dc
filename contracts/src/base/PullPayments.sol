// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @title PullPayments
/// @notice What the protocol owes an account is credited here and pulled by the account itself with `withdraw`:
///         no payout ever pushes ETH to an address that could revert or re-enter in the middle of a state change.
/// @dev Shared by Verification (returned bonds), Disputes (bonds, winner and juror rewards) and FaultRewards (fault
///      rewards). Each contract's ETH balance covers its credits plus what it still holds (its own invariant).
abstract contract PullPayments {
    /// @notice ETH owed to each account (pull with `withdraw`).
    mapping(address account => uint256) public credits;

    /// @notice Credits left the contract.
    event Withdrawn(address indexed account, uint256 amount);

    error NothingToWithdraw();
    error TransferFailed(address to, uint256 amount);

    /// @notice Withdraw the caller's credits.
    function withdraw() external {
        uint256 amount = credits[msg.sender];
        if (amount == 0) revert NothingToWithdraw();
        // INVARIANT: checks-effects-interactions: the credit is zeroed before the ETH leaves, so it is paid once.
        credits[msg.sender] = 0;
        emit Withdrawn(msg.sender, amount);
        (bool ok,) = msg.sender.call{value: amount}("");
        if (!ok) revert TransferFailed(msg.sender, amount);
    }
}
