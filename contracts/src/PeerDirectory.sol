// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @title PeerDirectory
/// @notice Where each account's node serves its artifacts: one URL per account, set by the account itself. Nodes
///         find each other here instead of from a hand-written peer list (docs/nodes.md, Finding peers).
/// @dev Holds no ETH and moves no stake. A URL is only a hint: nodes fetch content-addressed artifacts and check
///      every byte against its hash, ask the URL's /identity for the account it claims and only use the URLs of
///      a run's own participants (its creator, joined solvers, registered verifiers), whose stake makes a flood of
///      sybil entries costly. Bounded: one string of at most MAX_URL_BYTES per account, overwritten in place.
contract PeerDirectory {
    /// @notice Longest URL accepted, in bytes.
    uint256 public constant MAX_URL_BYTES = 256;

    /// @notice The URL each account announced ("" if none or withdrawn).
    mapping(address account => string url) public urlOf;

    /// @notice `account` serves its artifacts at `url` from now on ("" : it withdrew its URL).
    event PeerAnnounced(address indexed account, string url);

    error EmptyUrl();
    error UrlTooLong(uint256 length, uint256 max);
    error NothingToWithdraw();

    /// @notice Announce (or change) the URL where the caller's node serves its artifacts.
    /// @param url The base URL, e.g. "http://203.0.113.7:8601"; 1 .. MAX_URL_BYTES bytes.
    function announce(string calldata url) external {
        uint256 length = bytes(url).length;
        if (length == 0) revert EmptyUrl();
        if (length > MAX_URL_BYTES) revert UrlTooLong(length, MAX_URL_BYTES);
        urlOf[msg.sender] = url;
        emit PeerAnnounced(msg.sender, url);
    }

    /// @notice Withdraw the caller's URL (its node no longer serves).
    function withdraw() external {
        if (bytes(urlOf[msg.sender]).length == 0) revert NothingToWithdraw();
        delete urlOf[msg.sender];
        emit PeerAnnounced(msg.sender, "");
    }
}
