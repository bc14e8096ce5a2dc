"""Where the Ethereum tools and the contracts live on this machine.

anvil, forge and cast come from the npm registry (pinned in contracts/package-lock.json);
their platform binaries sit inside `contracts/node_modules/@foundry-rs/<tool>-<platform>/`.
Calling the binary directly (not the node wrapper in node_modules/.bin) keeps signals and
exit codes exact. `GRADLEDGER_CONTRACTS_DIR` overrides where the Foundry project is.
"""

from __future__ import annotations

import os
import platform
import shutil
from pathlib import Path

from protocol.errors import GradledgerError


class ToolchainError(GradledgerError):
    """A required tool (anvil, forge, cast) or the contracts directory is missing."""


_PLATFORMS = {
    ("Linux", "x86_64"): "linux-amd64",
    ("Linux", "aarch64"): "linux-arm64",
    ("Darwin", "x86_64"): "darwin-amd64",
    ("Darwin", "arm64"): "darwin-arm64",
}


def get_contracts_dir() -> Path:
    """The Foundry project directory (contracts/ next to the Python packages by default)."""
    override = os.environ.get("GRADLEDGER_CONTRACTS_DIR")
    path = Path(override) if override else Path(__file__).resolve().parents[1] / "contracts"
    if not (path / "foundry.toml").is_file():
        raise ToolchainError(
            f"no Foundry project at {path} (foundry.toml missing); run from a gradledger checkout "
            "or set GRADLEDGER_CONTRACTS_DIR"
        )
    return path


def find_tool(name: str) -> Path:
    """Path of anvil, forge or cast: the npm-pinned binary first, then PATH."""
    if name not in ("anvil", "forge", "cast"):
        raise ToolchainError(f"unknown tool {name!r}; expected anvil, forge or cast")
    suffix = _PLATFORMS.get((platform.system(), platform.machine()))
    if suffix is not None:
        try:
            candidate = get_contracts_dir() / "node_modules" / "@foundry-rs" / f"{name}-{suffix}" / "bin" / name
        except ToolchainError:
            candidate = None
        if candidate is not None and candidate.is_file():
            return candidate
    found = shutil.which(name)
    if found:
        return Path(found)
    raise ToolchainError(
        f"{name} not found: run `make setup` (installs the pinned Foundry tools from npm into "
        "contracts/node_modules) or put it on PATH"
    )
