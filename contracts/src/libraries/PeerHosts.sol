// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @title PeerHosts
/// @notice Which URLs a public PeerDirectory accepts (issue 36, finding 10): http(s) URLs whose host is a DNS name
///         or a public IP literal. Refused: other schemes; "localhost" and "*.localhost"; IPv4 literals in 0/8,
///         10/8, 100.64/10 (shared, CGNAT), 127/8, 169.254/16, 172.16/12, 192.168/16 and 224/3 (multicast,
///         reserved, broadcast); IPv6 literals that are unspecified, loopback, link-local, site-local, unique-local
///         or multicast, and those embedding one of those IPv4 addresses (IPv4-compatible, IPv4-mapped
///         ::ffff:0:0/96, NAT64 64:ff9b::/96, 6to4 2002::/16); and authorities that URL parsers read differently
///         (userinfo before an at sign, percent-encoding, backslashes, spaces, control or non-ASCII bytes, a numeric
///         host that is not a canonical dotted-quad IPv4 address such as "127.1", "0x7f.0.0.1" or "012.0.0.1").
/// @dev Names are accepted as they are: a contract cannot resolve them. Nodes resolve every announced name before
///      they connect and refuse private answers (protocol/peer_hosts.py, protocol/adapters/peer_guard.py). Every
///      loop runs over the URL once at most, and the URL is at most PeerDirectory.MAX_URL_BYTES long.
library PeerHosts {
    /// @notice What `check` says of a URL.
    enum Verdict {
        Accepted,
        UnsupportedScheme,
        MalformedHost,
        PrivateHost
    }

    /// @dev The bytes that end an authority: "#", "/" and "?" (bit i set: byte i).
    uint256 private constant AUTHORITY_ENDS = (1 << 0x23) | (1 << 0x2f) | (1 << 0x3f);
    /// @dev The bytes refused in an authority, which URL parsers read differently: controls and space (0x00-0x20),
    ///      the percent sign (percent-encoding), the at sign (userinfo), the backslash (a path to some parsers) and
    ///      0x7f-0xff (DEL, non-ASCII).
    uint256 private constant AUTHORITY_REFUSED =
        ((1 << 0x21) - 1) | (1 << 0x25) | (1 << 0x40) | (1 << 0x5c) | (type(uint256).max << 0x7f);

    /// @notice Classify an announced URL.
    /// @param url The URL as announced.
    /// @return The verdict: Accepted, or why it is refused.
    function check(bytes calldata url) internal pure returns (Verdict) {
        uint256 start = _schemeLength(url);
        if (start == 0) return Verdict.UnsupportedScheme;
        (uint256 end, uint256 colon, bool clean) = _scanAuthority(url, start);
        if (!clean || end == start) return Verdict.MalformedHost;
        if (url[start] == "[") return _checkBracketed(url[start:end]);
        if (!_isPort(url[colon:end])) return Verdict.MalformedHost;
        return _checkName(url[start:colon]);
    }

    /// @notice Whether an IPv4 address is one no public node serves at (loopback, private, link-local, shared,
    ///         "this network", multicast, reserved or broadcast).
    /// @param a The address, big-endian.
    /// @return True when announcing it is refused.
    function isPrivateIpv4(uint32 a) internal pure returns (bool) {
        uint256 first = a >> 24;
        return first == 0 || first == 10 || first == 127 || first >= 224 || a >> 16 == 0xa9fe // 169.254/16
            || a >> 20 == 0xac1 // 172.16/12
            || a >> 16 == 0xc0a8 // 192.168/16
            || a >> 22 == 0x191; // 100.64/10
    }

    /// @notice Whether an IPv6 address is one no public node serves at, or embeds such an IPv4 address.
    /// @param a The address, big-endian.
    /// @return True when announcing it is refused.
    function isPrivateIpv6(uint128 a) internal pure returns (bool) {
        uint256 upper = a >> 32;
        // ::a.b.c.d (incl. :: and ::1), ::ffff:a.b.c.d and 64:ff9b::a.b.c.d carry an IPv4 address in their last 32 bits
        if (upper == 0 || upper == 0xffff || upper == 0x0064ff9b0000000000000000) return isPrivateIpv4(uint32(a));
        if (a >> 112 == 0x2002) return isPrivateIpv4(uint32(a >> 80)); // 6to4: the IPv4 address after 2002:
        return a >> 121 == 0x7e // fc00::/7 unique-local
            || a >> 118 == 0x3fa // fe80::/10 link-local
            || a >> 118 == 0x3fb // fec0::/10 site-local
            || a >> 120 == 0xff; // ff00::/8 multicast
    }

    /// @dev 7 for "http://", 8 for "https://" (any case), 0 for anything else.
    function _schemeLength(bytes calldata url) private pure returns (uint256) {
        if (url.length < 7 || !_equalsLower(url[:4], "http")) return 0;
        uint256 pos = 4;
        if (url[pos] | bytes1(0x20) == "s") ++pos;
        if (url.length < pos + 3 || url[pos] != ":" || url[pos + 1] != "/" || url[pos + 2] != "/") return 0;
        return pos + 3;
    }

    /// @dev One pass over the authority from `start`: where it ends, where its first ":" is (`end` if none), and
    ///      whether it holds no refused byte. Bounded: at most MAX_URL_BYTES iterations. An announcement is a rare,
    ///      one-account transaction, so plain checked Solidity (about 65k gas for the longest
    ///      URL, against about 200k for storing it) is kept over assembly.
    function _scanAuthority(bytes calldata url, uint256 start)
        private
        pure
        returns (uint256 end, uint256 colon, bool clean)
    {
        colon = type(uint256).max;
        clean = true;
        for (end = start; end < url.length; ++end) {
            uint8 c = uint8(url[end]);
            if ((AUTHORITY_ENDS >> c) & 1 == 1) break;
            if ((AUTHORITY_REFUSED >> c) & 1 == 1) {
                clean = false;
                break;
            }
            if (c == 0x3a && colon == type(uint256).max) colon = end;
        }
        if (colon == type(uint256).max) colon = end;
    }

    /// @dev A bracketed IPv6 literal, then nothing or a port.
    function _checkBracketed(bytes calldata authority) private pure returns (Verdict) {
        uint256 close = _indexOf(authority, "]");
        if (close == authority.length || !_isPort(authority[close + 1:])) return Verdict.MalformedHost;
        (bool ok, uint128 a) = _parseIpv6(authority[1:close]);
        if (!ok) return Verdict.MalformedHost;
        return isPrivateIpv6(a) ? Verdict.PrivateHost : Verdict.Accepted;
    }

    /// @dev A host that is not bracketed: a name, or an IPv4 literal when its last label is numeric.
    function _checkName(bytes calldata host) private pure returns (Verdict) {
        if (host.length != 0 && host[host.length - 1] == ".") host = host[:host.length - 1]; // a root-relative name
        if (host.length == 0) return Verdict.MalformedHost;
        bytes calldata last = host[_lastLabel(host):];
        if (last.length == 0) return Verdict.MalformedHost;
        // a last label of digits, or starting with 0x, makes URL parsers and resolvers read the host as IPv4 (in
        // decimal, octal or hex, with 1 to 4 parts): only the canonical dotted quad reads the same everywhere
        if (_isDigit(last[0]) || (last.length > 1 && last[0] == "0" && last[1] | bytes1(0x20) == "x")) {
            (bool ok, uint32 a) = _parseIpv4(host);
            if (!ok) return Verdict.MalformedHost;
            return isPrivateIpv4(a) ? Verdict.PrivateHost : Verdict.Accepted;
        }
        if (host.length >= 9 && _equalsLower(host[host.length - 9:], "localhost")) {
            if (host.length == 9 || host[host.length - 10] == ".") return Verdict.PrivateHost;
        }
        return Verdict.Accepted;
    }

    /// @dev A canonical dotted-quad IPv4 address: four decimal parts 0..255 without leading zeros.
    function _parseIpv4(bytes calldata s) private pure returns (bool ok, uint32 a) {
        uint256 value;
        uint256 part;
        uint256 digits;
        uint256 parts;
        for (uint256 i; i < s.length; ++i) {
            bytes1 c = s[i];
            if (c == ".") {
                if (digits == 0 || parts == 3) return (false, 0);
                value = (value << 8) | part;
                ++parts;
                part = 0;
                digits = 0;
            } else if (_isDigit(c)) {
                if (digits == 1 && part == 0) return (false, 0); // a leading zero: octal to inet_aton
                part = part * 10 + uint8(c) - 0x30;
                ++digits;
                if (part > 255) return (false, 0);
            } else {
                return (false, 0);
            }
        }
        if (digits == 0 || parts != 3) return (false, 0);
        return (true, uint32((value << 8) | part));
    }

    /// @dev An IPv6 address in RFC 4291 text form: eight groups of 1..4 hex digits, at most one "::", optionally a
    ///      dotted-quad IPv4 address as its last 32 bits. No zone ("%" is refused before).
    function _parseIpv6(bytes calldata s) private pure returns (bool, uint128) {
        uint256 len = s.length;
        if (len < 2) return (false, 0);
        uint256 groups; // every group read, 16 bits each, in order
        uint256 count; // how many
        uint256 split = 9; // how many groups came before "::" (9: no "::")
        uint256 i;
        if (s[0] == ":") {
            if (s[1] != ":") return (false, 0);
            split = 0;
            i = 2;
        }
        while (i < len) {
            (bool ok, uint256 value, uint256 read, uint256 next) = _ipv6Group(s, i);
            if (!ok || count + read > 8) return (false, 0);
            groups = (groups << (16 * read)) | value;
            count += read;
            i = next;
            if (i == len) break;
            if (s[i] != ":") return (false, 0);
            ++i;
            if (i == len) return (false, 0); // a trailing single ":"
            if (s[i] == ":") {
                if (split != 9) return (false, 0);
                split = count;
                ++i;
            }
        }
        if (split == 9) return (count == 8, uint128(groups));
        if (count > 7) return (false, 0);
        uint256 tailBits = 16 * (count - split); // the groups after "::" stay where they are, the others move up
        uint256 head = groups >> tailBits;
        return (true, uint128((head << (16 * (8 - split))) | (groups ^ (head << tailBits))));
    }

    /// @dev One group at `i`: 1..4 hex digits (one group), or a dotted-quad IPv4 address that ends `s` (two groups).
    function _ipv6Group(bytes calldata s, uint256 i)
        private
        pure
        returns (bool ok, uint256 value, uint256 read, uint256 next)
    {
        next = i;
        while (next < s.length && next - i < 5 && _hexValue(s[next]) < 16) {
            value = (value << 4) | _hexValue(s[next]);
            ++next;
        }
        if (next < s.length && s[next] == ".") {
            (bool isIpv4, uint32 v4) = _parseIpv4(s[i:]);
            return (isIpv4, v4, 2, s.length);
        }
        return (next > i && next - i <= 4, value, 1, next);
    }

    /// @dev Nothing, or ":" and at most 5 decimal digits.
    function _isPort(bytes calldata rest) private pure returns (bool) {
        if (rest.length == 0) return true;
        if (rest[0] != ":" || rest.length > 6) return false;
        for (uint256 i = 1; i < rest.length; ++i) {
            if (!_isDigit(rest[i])) return false;
        }
        return true;
    }

    /// @dev The index of the first `c` in `s`, or s.length.
    function _indexOf(bytes calldata s, bytes1 c) private pure returns (uint256 i) {
        while (i < s.length && s[i] != c) ++i;
    }

    /// @dev Where the last label of `host` starts: after its last ".", or 0.
    function _lastLabel(bytes calldata host) private pure returns (uint256 i) {
        i = host.length;
        while (i > 0 && host[i - 1] != ".") --i;
    }

    /// @dev Whether `s` equals the lower-case ASCII word `word`, ignoring the case of its letters.
    function _equalsLower(bytes calldata s, bytes memory word) private pure returns (bool) {
        if (s.length != word.length) return false;
        for (uint256 i; i < s.length; ++i) {
            bytes1 c = s[i];
            if (c >= "A" && c <= "Z") c |= bytes1(0x20);
            if (c != word[i]) return false;
        }
        return true;
    }

    function _isDigit(bytes1 c) private pure returns (bool) {
        return c >= "0" && c <= "9";
    }

    /// @dev 0..15 for a hex digit, 16 otherwise.
    function _hexValue(bytes1 c) private pure returns (uint256) {
        if (c >= "0" && c <= "9") return uint8(c) - 0x30;
        bytes1 lower = c | bytes1(0x20);
        if (lower >= "a" && lower <= "f") return uint8(lower) - 0x57;
        return 16;
    }
}
