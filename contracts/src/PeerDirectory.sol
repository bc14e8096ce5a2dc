// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {PeerHosts} from "./libraries/PeerHosts.sol";

/// @title PeerDirectory
/// @notice Where each account's node serves its artifacts: one URL per account, set by the account itself. Nodes
///         find each other here instead of from a hand-written peer list (docs/nodes.md, Finding peers).
/// @dev Holds no ETH and moves no stake. A URL is only a hint: nodes fetch content-addressed artifacts and check
///      every byte against its hash, ask the URL's /identity for the account it claims and only use the URLs of
///      a run's own participants (its creator, joined solvers, registered verifiers), whose stake makes a flood of
///      sybil entries costly. Bounded: one string of at most MAX_URL_BYTES per account, overwritten in place.
///      A public directory (allowPrivateHosts false) refuses URLs that would send every node of a run to an address
///      inside its own network: loopback, private, link-local and other non-public IP literals and "localhost"
///      names (libraries/PeerHosts.sol; issue 36, finding 10). Names that resolve to such addresses are refused by
///      the nodes, which resolve them (docs/nodes.md, Finding peers).
contract PeerDirectory {
    /// @notice Longest URL accepted, in bytes.
    uint256 public constant MAX_URL_BYTES = 256;

    /// @notice Whether announced URLs may name loopback, link-local, private or unspecified hosts (devnets and the
    ///         multi-host test on one machine); false on a public chain.
    bool public immutable allowPrivateHosts;

    /// @notice The URL each account announced ("" if none or withdrawn).
    mapping(address account => string url) public urlOf;

    /// @notice `account` serves its artifacts at `url` from now on ("" : it withdrew its URL).
    event PeerAnnounced(address indexed account, string url);

    error EmptyUrl();
    error UrlTooLong(uint256 length, uint256 max);
    error NothingToWithdraw();
    /// @notice A public directory accepts only http:// and https:// URLs.
    error UnsupportedScheme(string url);
    /// @notice The URL's authority is one URL parsers read differently (userinfo, percent-encoding, a numeric host
    ///         that is not a dotted-quad IPv4 address, a malformed IPv6 literal or port, ...).
    error MalformedHost(string url);
    /// @notice The URL's host is a loopback, private, link-local, shared, unspecified, multicast or reserved address,
    ///         or a "localhost" name: every node fetching from it would reach into its own network.
    error PrivateHost(string url);

    /// @param allowPrivateHosts_ Whether URLs naming loopback, link-local or private hosts are accepted.
    constructor(bool allowPrivateHosts_) {
        allowPrivateHosts = allowPrivateHosts_;
    }

    /// @notice Announce (or change) the URL where the caller's node serves its artifacts.
    /// @dev Unless allowPrivateHosts, the URL must be http(s) with a public host (PeerHosts.check).
    /// @param url The base URL, e.g. "http://203.0.113.7:8601"; 1 .. MAX_URL_BYTES bytes.
    function announce(string calldata url) external {
        uint256 length = bytes(url).length;
        if (length == 0) revert EmptyUrl();
        if (length > MAX_URL_BYTES) revert UrlTooLong(length, MAX_URL_BYTES);
        if (!allowPrivateHosts) {
            PeerHosts.Verdict verdict = PeerHosts.check(bytes(url));
            if (verdict == PeerHosts.Verdict.UnsupportedScheme) revert UnsupportedScheme(url);
            if (verdict == PeerHosts.Verdict.MalformedHost) revert MalformedHost(url);
            if (verdict == PeerHosts.Verdict.PrivateHost) revert PrivateHost(url);
        }
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
