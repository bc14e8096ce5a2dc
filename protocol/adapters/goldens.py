"""The committed golden hashes (protocol/goldens.json) and the per-machine cache of self-check results.

`load_goldens` reads the file the repository ships, or the one named by GRADLEDGER_GOLDENS (an operator's own
reference, and how tests force a mismatch). A self-check trains four small segments (a few seconds, most of it
importing transformers); its result is a pure function of the goldens, the environment read back after the pins and
the thread count, so it is cached under that key (`$XDG_CACHE_HOME/gradledger/profile-check/`): the nodes a machine
starts after the first reuse it. Cache files are written whole (temporary file, then rename).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from protocol.errors import ConfigError
from protocol.goldens import ProfileGoldens
from protocol.hashing import compute_content_hash

GOLDENS_PATH = Path(__file__).resolve().parent.parent / "goldens.json"
GOLDENS_ENV = "GRADLEDGER_GOLDENS"


def get_goldens_path(path: Path | None = None) -> Path:
    """`path`, else GRADLEDGER_GOLDENS, else the committed protocol/goldens.json."""
    if path is not None:
        return path
    named = os.environ.get(GOLDENS_ENV)
    return Path(named) if named else GOLDENS_PATH


def load_goldens_file(path: Path | None = None) -> dict[str, Any]:
    where = get_goldens_path(path)
    try:
        data = json.loads(where.read_text())
    except FileNotFoundError:
        raise ConfigError(f"golden hashes file {where} does not exist; regenerate it with `make goldens`") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"golden hashes file {where} cannot be read as JSON ({exc}); restore it from git") from None
    if not isinstance(data, dict) or not isinstance(data.get("profiles"), dict):
        raise ConfigError(f"golden hashes file {where} has no 'profiles' object; restore it from git")
    return data


def load_goldens(profile: str, path: Path | None = None) -> ProfileGoldens | None:
    """The goldens of `profile`, or None when the file has none for it (a profile that predates the pins)."""
    entry = load_goldens_file(path)["profiles"].get(profile)
    if entry is None:
        return None
    segments = entry.get("segments")
    if not isinstance(segments, dict) or not all(isinstance(v, str) for v in segments.values()):
        raise ConfigError(f"golden hashes of profile {profile!r} in {get_goldens_path(path)} are malformed")
    return ProfileGoldens(profile, dict(segments), dict(entry.get("measured_on", {})))


def write_goldens(
    profile: str, segments: dict[str, str], measured_on: dict[str, Any], path: Path | None = None
) -> Path:
    """Replace `profile`'s entry (other profiles kept), written whole: `make goldens`."""
    where = get_goldens_path(path)
    data = load_goldens_file(where) if where.exists() else {"profiles": {}}
    data["about"] = (
        "Golden hashes per execution profile: the state hash after each golden segment (protocol/goldens.py). "
        "Regenerate with `make goldens` on the reference machine; check a machine with `gradledger profile check`."
    )
    data["profiles"][profile] = {"segments": dict(sorted(segments.items())), "measured_on": measured_on}
    _write_json_atomically(where, data)
    return where


def _write_json_atomically(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", delete=False) as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")
        name = f.name
    os.replace(name, path)


def get_installed_version(package: str) -> str | None:
    """A package's installed release, read from its metadata (importing transformers would cost seconds)."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def compute_code_fingerprint() -> str:
    """SHA-256 over the spec's sources (protocol/*.py): a cached self-check is only reused by the same training code,
    so a change that alters the bits without regenerating the goldens is never hidden by an old cached answer."""
    root = GOLDENS_PATH.parent
    digest = b"".join(compute_content_hash(p.read_bytes()) for p in sorted(root.glob("*.py")))
    return compute_content_hash(digest).hex()


def get_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gradledger" / "profile-check"


def compute_cache_key(key: dict[str, Any]) -> str:
    return compute_content_hash(json.dumps(key, sort_keys=True, default=str).encode()).hex()


def read_cached_check(key: str) -> dict[str, Any] | None:
    try:
        data = json.loads((get_cache_dir() / f"{key}.json").read_text())
    except (OSError, json.JSONDecodeError):
        return None  # absent or unreadable: check again
    return data if isinstance(data, dict) else None


def write_cached_check(key: str, result: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # a read-only home: the next node checks again, nothing is lost
        _write_json_atomically(get_cache_dir() / f"{key}.json", result)
