// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Address} from "@openzeppelin/contracts/utils/Address.sol";

/// @notice An account that refuses ETH: proves that failed transfers revert with TransferFailed.
contract Rejector {
    function call(address target, bytes calldata data) external payable returns (bytes memory) {
        return Address.functionCallWithValue(target, data, msg.value);
    }
}
