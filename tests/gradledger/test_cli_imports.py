"""`gradledger --help` loads no heavy module (issue 38): torch, web3, eth_account, transformers and the role
packages are imported inside the commands that use them, never to declare a command or its options.

Each check runs in a fresh interpreter (the test process itself has long loaded torch) and reads `sys.modules`
there. Nothing is timed: what is asserted is which modules were loaded, not how long that took
(bench/cli_startup.py measures the CPU seconds).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

HEAVY = ("torch", "web3", "eth_account", "transformers", "solver", "verifier", "whistleblower", "auditor", "sim")
"""Top-level packages `--help` must not load: the ML and chain libraries, and the role packages that import them."""

PROBE = textwrap.dedent(
    """
    import json, sys

    import typer.main

    from gradledger.cli import app, main

    heavy, out = sys.argv[1].split(","), sys.argv[2]

    def loaded() -> list[str]:
        return sorted({name.split(".")[0] for name in sys.modules} & set(heavy))

    after_import = loaded()

    def command_paths(command, prefix=()):
        yield prefix
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            yield from command_paths(sub, (*prefix, name))

    exits = {}
    for path in command_paths(typer.main.get_command(app)):
        sys.argv = ["gradledger", *path, "--help"]
        try:
            main()
            exits[" ".join(path)] = 0
        except SystemExit as exc:
            exits[" ".join(path)] = exc.code
    with open(out, "w") as handle:
        json.dump({"after_import": after_import, "after_help": loaded(), "exits": exits}, handle)
    """
)


def run_probe(tmp_path: Path) -> dict:
    out = tmp_path / "probe.json"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, ",".join(HEAVY), str(out)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "Usage: gradledger" in proc.stdout, proc.stdout[-2000:]
    return json.loads(out.read_text())


def test_importing_the_cli_and_every_help_loads_no_heavy_module(tmp_path: Path) -> None:
    probe = run_probe(tmp_path)
    assert probe["after_import"] == [], f"`import gradledger.cli` loaded {probe['after_import']}"
    assert probe["after_help"] == [], f"a `gradledger ... --help` loaded {probe['after_help']}"
    # every command and group printed its help (exit 0): the probe walked the whole tree, not an empty one
    exits = probe["exits"]
    assert exits[""] == 0 and all(code == 0 for code in exits.values()), exits
    for command in ("run create", "solver run", "verifier serve", "whistleblower watch", "audit", "calibrate",
                    "model export", "data prepare", "profile check", "deploy", "simulate", "demo"):  # fmt: skip
        assert command in exits, sorted(exits)
