"""No Python module over 500 lines, in the source packages, bench/ and tests/ (issue 38).

A module is meant to hold one thing a reader can name (docs/architecture.md); past a few hundred lines it holds
several, and the file name stops saying what is in it. The packages are read from pyproject.toml's
`[tool.setuptools.packages.find] include`, so a new package is covered the day it is packaged.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 500
EXTRA_DIRECTORIES = ("bench", "tests")
"""Not packaged, yet read and edited like the packages: the benchmark scripts and the tests themselves."""


def get_checked_directories() -> list[Path]:
    """The packaged top-level packages (pyproject's include patterns, "protocol*" -> protocol/) and the extras."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = sorted({pattern.rstrip("*").rstrip(".") for pattern in patterns})
    return [ROOT / name for name in (*packages, *EXTRA_DIRECTORIES)]


def get_line_counts(directories: list[Path]) -> dict[str, int]:
    """Relative path -> line count of every .py file under `directories` (virtualenvs and caches are not there)."""
    counts: dict[str, int] = {}
    for directory in directories:
        for path in sorted(directory.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            with path.open("rb") as handle:
                counts[str(path.relative_to(ROOT))] = sum(1 for _ in handle)
    return counts


def test_every_checked_directory_exists_and_holds_modules():
    """The shape check below cannot pass by reading nothing: every directory it reads is there, with modules."""
    directories = get_checked_directories()
    assert {"protocol", "node", "gradledger", "bench", "tests"} <= {d.name for d in directories}
    counts = get_line_counts(directories)
    for directory in directories:
        assert directory.is_dir(), f"{directory.name}/ is named in pyproject.toml but missing"
        assert any(name.startswith(f"{directory.name}/") for name in counts), f"{directory.name}/ has no .py file"
    assert "tests/test_module_shape.py" in counts


def test_no_module_is_over_500_lines():
    counts = get_line_counts(get_checked_directories())
    too_long = {name: lines for name, lines in counts.items() if lines > MAX_LINES}
    named = ", ".join(f"{name} ({lines} lines)" for name, lines in sorted(too_long.items(), key=lambda kv: -kv[1]))
    assert not too_long, f"{len(too_long)} module(s) over {MAX_LINES} lines; split each by what it holds: {named}"
