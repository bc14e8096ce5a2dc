"""Separate hosts on one machine: Linux network namespaces joined by a virtual bridge.

A run across machines is rehearsed here by giving every party -- the chain, the artifact store, each
solver, the verifier, the whistleblower -- its own network namespace with its own address on one
virtual LAN (a bridge in the root namespace, one veth pair per host). A process started in a host
(`VirtualHosts.argv(name, ...)`) has only that host's interfaces: it reaches the others only at the
addresses it is given, never through 127.0.0.1. The root namespace holds the bridge's address, so
the process that set the LAN up (a test, an operator's script) can watch the chain and the nodes.

Needs root (or CAP_NET_ADMIN) and the `ip` tool (iproute2). `VirtualHosts` removes every namespace,
link and bridge it made when it exits, also after an error; names carry the creating process id, so
two runs on one machine never collide. Nothing here is routed beyond the bridge: the addresses are a
private /24 that only these namespaces use.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType

from protocol.errors import GradledgerError


class HostsUnavailableError(GradledgerError):
    """Network namespaces cannot be made here (not root, no `ip`, or the kernel refuses)."""


@dataclass
class VirtualHosts:
    """Hosts `names` on a /24 LAN: the bridge is .1 (root namespace), host i is .(i + 2)."""

    names: Sequence[str]
    subnet: str = ""
    """The first three octets, e.g. "10.231.7"; default: derived from the process id (10.231-250.x)."""
    tag: str = field(default_factory=lambda: f"gl{os.getpid() % 100_000}")
    _made: list[list[str]] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        if not self.subnet:
            pid = os.getpid()
            self.subnet = f"10.{231 + pid % 20}.{(pid // 20) % 256}"
        if len(set(self.names)) != len(self.names) or not 1 <= len(self.names) <= 200:
            raise HostsUnavailableError(f"host names must be 1..200 distinct names, got {list(self.names)}")

    @property
    def bridge(self) -> str:
        return f"{self.tag}br"

    @property
    def gateway(self) -> str:
        """The root namespace's address on the LAN (where a test or script watches from)."""
        return f"{self.subnet}.1"

    def namespace(self, name: str) -> str:
        return f"{self.tag}-{name}"

    def address(self, name: str) -> str:
        return f"{self.subnet}.{list(self.names).index(name) + 2}"

    def argv(self, name: str, command: Sequence[str]) -> list[str]:
        """`command` run inside host `name`."""
        return ["ip", "netns", "exec", self.namespace(name), *command]

    def _ip(self, *args: str, undo: list[str] | None = None) -> None:
        done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            raise HostsUnavailableError(
                f"`ip {' '.join(args)}` failed: {done.stderr.strip() or done.stdout.strip()}; network namespaces "
                "need root (or CAP_NET_ADMIN) and a kernel that allows them"
            )
        if undo is not None:
            self._made.append(undo)

    def __enter__(self) -> VirtualHosts:
        if shutil.which("ip") is None:
            raise HostsUnavailableError("the `ip` tool (iproute2) is not installed: apt-get install iproute2")
        try:
            self._ip("link", "add", self.bridge, "type", "bridge", undo=["link", "del", self.bridge])
            self._ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
            self._ip("link", "set", self.bridge, "up")
            for index, name in enumerate(self.names):
                ns, outside, inside = self.namespace(name), f"{self.tag}h{index}", f"{self.tag}n{index}"
                self._ip("netns", "add", ns, undo=["netns", "del", ns])
                self._ip("link", "add", outside, "type", "veth", "peer", "name", inside, undo=["link", "del", outside])
                self._ip("link", "set", inside, "netns", ns)
                self._ip("link", "set", outside, "master", self.bridge)
                self._ip("link", "set", outside, "up")
                self._ip("netns", "exec", ns, "ip", "addr", "add", f"{self.address(name)}/24", "dev", inside)
                self._ip("netns", "exec", ns, "ip", "link", "set", inside, "up")
                self._ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Remove what was made, newest first; keep going past failures (best effort on the way out)."""
        while self._made:
            subprocess.run(["ip", *self._made.pop()], capture_output=True, timeout=30)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
