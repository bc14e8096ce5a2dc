"""`gradledger audit` replays accepted work, on a real anvil: a cheater that only a lazy verifier saw is found.

One round, two solvers (an honest coordinator and a cheater whose every segment of round 0 is an honest update scaled
by 0.9, `--adversary cheat --behaviour scaled-update`) and one verifier that passes without replaying
(`verifier serve --adversary lazy`), nobody watching: the cheater's commitment is accepted, enters θ_1 and is paid.
The nodes are the real node classes played in-process with devnet time travel (sim/scripted.py, the lazy worker in
place of the honest one); the audit runs as a real `python -m gradledger audit` process. Every rule of the run was
kept, so every other check passes: without the replay (`--replay none`) the audit is clean; with it, the check
"accepted work replays" fails, naming run, round, solver and segment, and the exit status is 1.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from adversary.verifier import LazyVerifierWorker
from auditor.checks import CHECK_ORDER, REPLAY
from devnet.anvil import AnvilProcess
from devnet.deploy import build_contracts, deploy_protocol
from protocol.adapters.chain import ChainClient
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.manifest import write_manifest
from protocol.config import build_run_config
from protocol.hashing import hash_to_hex
from protocol.run_presets import TINY
from sim.scripted import start_scripted_run
from tests.forked_nodes import run_gradledger
from verifier.metrics import VerifierMetrics

pytestmark = pytest.mark.e2e

HONEST, CHEATER, LAZY = 1, 2, 5
RULES = TINY.with_run(
    max_rounds=1,
    commit_window=600,
    attest_window=500,
    challenge_window=260,
    dispute_timeout=120,
)
"""Chain seconds on a 1-second-block devnet moved by time travel (as tests/auditor/test_audit_chain.py)."""


@dataclass
class LazyRun:
    home: Path
    rpc: str
    run_id: int
    honest: str
    cheater: str
    segments: int


@pytest.fixture(scope="module")
def lazy_run(corpus, tmp_path_factory) -> Iterator[LazyRun]:
    """The finished run on an anvil of its own (time travel must not reach the session chain)."""
    home = tmp_path_factory.mktemp("replay-chain") / "home"
    with AnvilProcess() as anvil:
        manifest = deploy_protocol(ChainClient(anvil.rpc_url), get_devnet_account(0), build_contracts())
        home.mkdir(parents=True)
        write_manifest(home / "manifest.json", manifest)
        protocol = ProtocolClient(ChainClient(anvil.rpc_url, manifest))
        config = build_run_config(preset="tiny", run_seed="0x" + "c3" * 32, dataset_root=hash_to_hex(corpus[0].root))
        run = start_scripted_run(
            protocol, manifest, home, config, corpus, [HONEST, CHEATER], [LAZY], RULES,
            cheats={(CHEATER, 0): "scaled-update"},
        )  # fmt: skip
        try:
            run.verifiers[LAZY].state.close()  # registered by the harness; the lazy worker takes its seats
            peers = tuple((home / "peers.txt").read_text().split())
            lazy = LazyVerifierWorker(
                run.run_id, home, get_devnet_account(LAZY), anvil.rpc_url, manifest, peers, VerifierMetrics(),
                allow_private_peers=True,
            )  # fmt: skip
            lazy.load()
            run.verifiers[LAZY] = lazy
            run.play()
        finally:
            run.close()
        honest, cheater = (get_devnet_account(a).address for a in (HONEST, CHEATER))
        assert protocol.round_times(run.run_id).finished
        assert protocol.is_accepted(run.run_id, 0, cheater), "the lazy pass accepted the cheater's faked work"
        assert protocol.shares_of(run.run_id, cheater) > 0
        yield LazyRun(home, anvil.rpc_url, run.run_id, honest, cheater, config.train.num_segments)


def _audit(run: LazyRun, out: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    args = ["audit", "--run", str(run.run_id), "--home", str(run.home), "--rpc-url", run.rpc]
    args += ["--json", str(out / "audit.json"), "--html", str(out / "audit.html"), *extra]
    out.mkdir(parents=True, exist_ok=True)
    proc = run_gradledger(args, timeout=600)
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, json.loads((out / "audit.json").read_text())


def _checks(data: dict) -> dict[str, dict]:
    return {c["name"]: c for c in data["checks"]}


def test_accepted_faked_work_fails_the_replay_check_naming_it(lazy_run, tmp_path):
    proc, data = _audit(lazy_run, tmp_path / "out")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    checks = _checks(data)
    assert [c["name"] for c in data["checks"]] == list(CHECK_ORDER)
    assert {name for name, c in checks.items() if not c["passed"]} == {REPLAY}, "every other rule was kept"
    replay = checks[REPLAY]["evidence"]
    labels = {p["address"]: p["label"] for p in data["participants"]}
    (failed,) = [r for r in replay["replays"] if r["status"] == "failed"]
    assert failed["solver"] == lazy_run.cheater and failed["round"] == 0
    where = f"run {lazy_run.run_id} round 0 {labels[lazy_run.cheater]} ({lazy_run.cheater}) segment {failed['segment']}"
    assert replay["problems"] == [f"{where}: replayed end state differs from the committed end hash"]
    assert where in checks[REPLAY]["detail"]
    (honest,) = [r for r in replay["replays"] if r["solver"] == lazy_run.honest]
    assert honest["status"] == "replayed" and replay["replay"] == "1" and replay["audit_seed"] == 0
    assert "1 of 10 checks failed" in proc.stdout and REPLAY in proc.stdout
    assert REPLAY in (tmp_path / "out" / "audit.html").read_text()


def test_replay_none_skips_and_the_run_audits_clean(lazy_run, tmp_path):
    """What the audit said before it replayed anything: a run that kept every rule, so every check passes."""
    proc, data = _audit(lazy_run, tmp_path / "out", "--replay", "none")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    replay = _checks(data)[REPLAY]
    assert replay["passed"] and replay["detail"] == "skipped (--replay 0): no accepted segment was replayed"
    assert "all 10 checks passed" in proc.stdout


def test_replay_all_names_every_faked_segment(lazy_run, tmp_path):
    proc, data = _audit(lazy_run, tmp_path / "out", "--replay", "all", "--replay-seed", "7")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    replay = _checks(data)[REPLAY]["evidence"]
    failed = sorted(r["segment"] for r in replay["replays"] if r["status"] == "failed")
    assert failed == list(range(lazy_run.segments)), "the cheater faked every segment of its round"
    assert replay["segments_replayed"] == lazy_run.segments, "the honest solver's every segment replays"
    assert replay["replay"] == "all" and replay["audit_seed"] == 7
