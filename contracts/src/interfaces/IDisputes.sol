// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {AttestationRef} from "./Types.sol";

/// @notice What the protocol contracts use of Disputes.
interface IDisputes {
    /// @notice Whether the attestation of a seat has a dispute that is open, has a jury or has a verdict not
    ///         yet executed (Verification's finalize waits for it).
    /// @param ref The seat.
    /// @return True while the dispute is unresolved.
    function isAttestationDisputed(AttestationRef calldata ref) external view returns (bool);

    /// @notice Who challenged the attestation of a seat (zero if nobody did): the prover of the fault an
    ///         overturned pass proves (Verification.claimFaultReward credits it).
    /// @param ref The seat.
    /// @return The challenger.
    function challengerOf(AttestationRef calldata ref) external view returns (address);
}
