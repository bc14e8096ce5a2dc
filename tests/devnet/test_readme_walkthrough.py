"""The README's walk-throughs, run exactly as written: one process per command, block by block.

"Run it by hand" trains the built-in model; "Your own model and data" prepares a dataset with a tokenizer trained on
text in `my-text/` (the test puts a few standard-library modules there, as .txt), trains the tiny Llama-style model
of examples/ on it, and exports the settled model, which the test loads with transformers and generates from.

Each ```sh block of that README section is a terminal. Its commands run in order and must exit 0; a block's last
command, when it is a node or a server (`artifacts serve`, `solver run`, `verifier serve`, `whistleblower watch`),
keeps running in the background like a terminal left open. Nothing is wired by the test: no peers.txt, no ports,
no manifest path; the nodes find the chain through $GRADLEDGER_HOME and each other through the PeerDirectory
contract. The test only drives the devnet's clock (tests/clock.py) once the nodes are up, so windows close when
every node is idle rather than when this machine is slow, and then checks that the run settled, that the audit
the README ends with passed, and that every honest node holds shares.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from contextlib import ExitStack
from pathlib import Path

import pytest

from devnet.lifecycle import read_devnet_info
from protocol.adapters.chain import ChainClient
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.manifest import load_manifest
from tests.chain_fixtures import events_of, stop, wait_until
from tests.clock import DRIVEN_GENESIS, ClockDriver, make_driven
from tests.forked_nodes import run_gradledger, start_gradledger

pytestmark = pytest.mark.e2e

README = Path(__file__).resolve().parents[2] / "README.md"
LONG_RUNNING = ("artifacts serve", "solver run", "verifier serve", "whistleblower watch")
NODES = ("solver run", "verifier serve", "whistleblower watch")  # the ones whose /health the clock waits on


SECTIONS = ("## Run it by hand", "## Your own model and data")
MY_TEXT = ("textwrap.py", "string.py", "calendar.py", "shlex.py")


def get_walkthrough_blocks(text: str, heading: str = SECTIONS[0]) -> list[list[str]]:
    """The commands of each ```sh block of one README section (comments dropped)."""
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, flags=re.DOTALL)
    return [
        [line.strip() for line in b.splitlines() if line.strip() and not line.lstrip().startswith("#")] for b in blocks
    ]


def to_args(command: str) -> list[str]:
    """The words after `gradledger` of a README command line (run by tests/forked_nodes.py's launcher)."""
    words = shlex.split(command)
    if words[0] != "gradledger":
        raise AssertionError(f"the walk-through runs gradledger commands only, got {command!r}")
    return words[1:]


def read_serving_url(log: Path) -> str | None:
    """The URL a node or server printed when it started serving (its `{"event": "serving"}` line)."""
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("{") and '"serving"' in line:
            return json.loads(line)["url"]
    return None


def prepare_own_files(cwd: Path) -> None:
    """What the "own model and data" walk-through expects in its directory: my-text/ and examples/."""
    import shutil
    import sysconfig

    (cwd / "my-text").mkdir()
    for name in MY_TEXT:
        source = Path(sysconfig.get_paths()["stdlib"]) / name
        (cwd / "my-text" / name.replace(".py", ".txt")).write_bytes(source.read_bytes())
    shutil.copytree(README.parent / "examples", cwd / "examples")


def check_exported_model(model_dir: Path) -> None:
    """The exported directory loads with transformers, generates, and carries its model card."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model, tokenizer = AutoModelForCausalLM.from_pretrained(model_dir), AutoTokenizer.from_pretrained(model_dir)
    prompt = tokenizer("def ", return_tensors="pt")
    ids = model.generate(**prompt, max_new_tokens=8, do_sample=False)
    assert ids.shape[1] == prompt["input_ids"].shape[1] + 8
    assert isinstance(tokenizer.decode(ids[0]), str)
    assert "run 1" in (model_dir / "README.md").read_text().lower()


@pytest.mark.parametrize("heading", SECTIONS, ids=["built-in", "own-model"])
def test_readme_walkthrough_trains_settles_audits_and_pays_every_honest_node(tmp_path, heading):
    blocks = get_walkthrough_blocks(README.read_text(), heading)
    assert len(blocks) >= 5, "the README's walk-through lost its terminals"
    if heading == SECTIONS[1]:
        prepare_own_files(tmp_path)
    home = tmp_path / "home"
    env = {**os.environ, "GRADLEDGER_HOME": str(home)}
    background: list[tuple[str, subprocess.Popen, Path]] = []
    outputs: dict[str, str] = {}
    with ExitStack() as cleanup:
        cleanup.callback(run_gradledger, ["devnet", "down"], env=env, timeout=60)
        for number, commands in enumerate(blocks, start=1):
            if commands[0].startswith("gradledger audit"):  # the run goes on: move the clock until the nodes exit
                protocol = connect(home)
                nodes = [(get_port(log), p) for c, p, log in background if is_node(c)]
                cleanup.enter_context(
                    ClockDriver(protocol, 1, lambda nodes=nodes: [n for n in nodes if n[1].poll() is None])
                )
                wait_until(lambda nodes=nodes: all(p.poll() is not None for _, p in nodes), 900, "every node to exit")
            for index, command in enumerate(commands):
                if index == len(commands) - 1 and any(k in command for k in LONG_RUNNING):
                    log = tmp_path / f"terminal-{number}.log"
                    process = start_gradledger(to_args(command), log, env=env, cwd=tmp_path)
                    cleanup.callback(stop, process)
                    background.append((command, process, log))
                    wait_until(lambda log=log: read_serving_url(log), 180, f"{command!r} to serve")
                    continue
                done = run_gradledger(to_args(command), env=env, cwd=tmp_path, timeout=900)
                outputs[command] = done.stdout + done.stderr
                assert done.returncode == 0, f"{command!r} exited {done.returncode}:\n{outputs[command][-3000:]}"
                if command.startswith("gradledger devnet up"):
                    drive_devnet(home)

        logs = {c: log.read_text(errors="replace")[-2000:] for c, _, log in background}
        assert all(p.returncode == 0 for c, p, _ in background if is_node(c)), logs
        assert protocol.round_times(1).finished, logs
        audit = next(out for command, out in outputs.items() if command.startswith("gradledger audit"))
        assert re.search(r"all \d+ checks passed", audit), audit[-3000:]
        for account in (1, 2, 3):  # both solvers and the verifier
            assert protocol.shares_of(1, get_devnet_account(account).address) > 0, (account, logs)
        assert not events_of(protocol, "FailAttested", 1), "an honest node was failed"
        assert not (home / "peers.txt").exists(), "the walk-through must not need a hand-written peer list"
        if heading == SECTIONS[1]:
            assert json.loads((tmp_path / "my-dataset" / "dataset.json").read_text())["tokenizer"]
            check_exported_model(tmp_path / "my-model")


def connect(home: Path) -> ProtocolClient:
    info = read_devnet_info(home)
    assert info is not None, "the devnet is not running"
    return ProtocolClient(ChainClient(info.rpc_url, load_manifest(home / "manifest.json")))


def get_port(log: Path) -> int:
    url = read_serving_url(log)
    assert url is not None
    return int(url.rsplit(":", 1)[1])


def is_node(command: str) -> bool:
    return any(k in command for k in NODES)


def drive_devnet(home: Path) -> None:
    """Move the fresh devnet's clock far ahead of the wall clock and stamp blocks a second apart (tests/clock.py)."""
    info = read_devnet_info(home)
    assert info is not None, "the devnet is not running"
    chain = ChainClient(info.rpc_url)
    chain.mine_at(DRIVEN_GENESIS)
    make_driven(ProtocolClient(chain))
