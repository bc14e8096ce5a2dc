"""The deployment manifest: which contracts live where on which chain, with their ABIs.

`gradledger deploy` writes it; every other command reads it. It carries the full ABIs, so a
fresh machine with only the RPC URL, the manifest and an artifact store can talk to (and
audit) a deployment. `abis_hash` (SHA-256 of the canonical ABI JSON) lets two machines check
they speak the same contract interface.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from protocol.errors import GradledgerError
from protocol.hashing import compute_content_hash, hash_to_hex


class ManifestError(GradledgerError):
    """The deployment manifest is missing, malformed or for another chain."""


class ContractRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    address: str
    abi: list[dict[str, Any]]


class DeploymentManifest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    version: int = 1
    chain_id: int
    rpc_url: str
    deployed_block: int
    deployer: str
    contracts: dict[str, ContractRecord]
    abis_hash: str
    deployed_block_hash: str | None = None
    """The hash of `deployed_block` on the chain deployed to: a client refuses an RPC whose block there differs (a
    second devnet with the same chain id and the same contract addresses, or one restarted from scratch), before any
    key is used. None in a manifest written before it was recorded: then only the chain id is checked."""
    block_seconds: int = 1
    """The chain's block time the deployment declared (RunRegistry.blockSeconds, `gradledger deploy --block-seconds`):
    every run's windows must fit it (protocol/windows.py). The chain holds the value that counts; a manifest written
    before it was recorded reads as 1, which is what those deployments used."""


def compute_abis_hash(contracts: dict[str, ContractRecord]) -> str:
    canonical = json.dumps(
        {name: rec.abi for name, rec in sorted(contracts.items())}, sort_keys=True, separators=(",", ":")
    )
    return hash_to_hex(compute_content_hash(canonical.encode()))


def load_manifest(path: Path) -> DeploymentManifest:
    """Read and validate a manifest; a clear ManifestError when it is missing or broken."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise ManifestError(
            f"no deployment manifest at {path}: run `gradledger deploy` first (or pass --manifest)"
        ) from None
    try:
        manifest = DeploymentManifest.model_validate_json(text)
    except ValidationError as exc:
        raise ManifestError(f"deployment manifest {path} is malformed: {exc.errors()[0]['msg']}") from None
    if compute_abis_hash(manifest.contracts) != manifest.abis_hash:
        raise ManifestError(f"deployment manifest {path}: ABIs do not match abis_hash (edited by hand?)")
    return manifest


def write_manifest(path: Path, manifest: DeploymentManifest) -> None:
    """Write atomically: a reader never sees half a manifest."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".manifest-")
    with os.fdopen(fd, "w") as handle:
        handle.write(manifest.model_dump_json(indent=1))
    os.replace(tmp, path)
