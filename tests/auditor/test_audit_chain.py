"""`gradledger audit` on real runs on a real anvil.

- a run of real node processes (2 solvers + 1 verifier, 2 rounds): every check passes and the
  numbers equal what `cast` reads independently (logs, calls, balances); the HTML report renders
  in headless Chromium with its plots;
- the same run with a tampered commitment document, with a missing Δ, and through an RPC proxy
  that drops the connection mid-read: a clear report (or error), a non-zero exit, nothing half written;
- a run with a cheating solver played by the in-process nodes (devnet time travel), audited
  mid-round (settled vs pending) and after it finished: the cheater is slashed, every check passes;
- a chain restarted from its saved state (`gradledger devnet up` after a run) audits the same.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from eth_account import Account

from auditor.audit import audit_run, open_sources
from auditor.chain_reads import read_chain
from auditor.checks import CHECK_ORDER
from auditor.plots import LOSS_COLOR
from auditor.sources import DOC_PREFIX, find_home_stores
from devnet.anvil import AnvilProcess
from devnet.deploy import build_contracts, deploy_protocol
from devnet.lifecycle import start_devnet, stop_devnet
from protocol.adapters.chain import ChainClient
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.event_index import EventIndex
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.manifest import DeploymentManifest, load_manifest, write_manifest
from protocol.commitment import decode_commitment_doc
from protocol.config import build_run_config
from protocol.hashing import hash_to_hex
from protocol.history.fold import fold_run_history
from protocol.run_presets import TINY
from sim.scripted import start_scripted_run
from solver.decide import Action
from tests.auditor.chain_probes import (
    DroppingProxy,
    HeadlessPage,
    cast,
    cast_logs,
    cast_uint,
    data_words,
    eth_text,
    next_change,
    run_chromium,
    topic_address,
    topic_int,
)
from tests.chain_fixtures import prepare_run, read_log, run_to_the_end, start_node
from tests.forked_nodes import run_gradledger

SOLVERS, VERIFIER = [1, 2], 5
SCRIPTED_RULES = TINY.with_run(
    max_rounds=3,
    commit_window=600,
    attest_window=500,
    challenge_window=260,
    dispute_timeout=120,
)
"""Chain seconds on a 1-second-block devnet: the attest window's first half (the draw window) ends within the seed
block's 256-block horizon (createRun refuses more: docs/contracts.md, "Windows and block time")."""
COMMITTED = "Committed(uint256 indexed,uint64 indexed,address indexed,bytes32,bytes32,uint32,uint64)"
SHARES_MINTED = "SharesMinted(uint256 indexed,uint64 indexed,address indexed,uint8,uint256,uint256)"
STAKE_SLASHED = "StakeSlashed(address indexed,uint8 indexed,bytes32 indexed,uint256,uint256,address,uint256,uint256)"


# -- helpers ---------------------------------------------------------------------------------------


def run_cli(home: Path, rpc: str, run_id: int, out: Path, *extra: str) -> subprocess.CompletedProcess:
    out.mkdir(parents=True, exist_ok=True)
    args = [
        "audit",
        "--run",
        str(run_id),
        "--home",
        str(home),
        "--rpc-url",
        rpc,
        "--json",
        str(out / "audit.json"),
        "--html",
        str(out / "audit.html"),
        *extra,
    ]
    return run_gradledger(args, timeout=600)


def checks_of(data: dict) -> dict[str, dict]:
    return {c["name"]: c for c in data["checks"]}


@dataclass
class RealRun:
    home: Path
    run_id: int
    rpc: str
    manifest_path: Path


@pytest.fixture(scope="module")
def real_run(deployment, corpus, tmp_path_factory) -> RealRun:
    """A 2-round run of real node processes, finished; the nodes are stopped afterwards."""
    home = tmp_path_factory.mktemp("audit-real") / "home"
    setup = prepare_run(deployment, corpus, home, SOLVERS, [VERIFIER])
    processes = [
        start_node(setup, "solver", SOLVERS[0], "--coordinator"),
        start_node(setup, "solver", SOLVERS[1]),
        start_node(setup, "verifier", VERIFIER, "--exit-when-done"),
    ]
    try:
        run_to_the_end(setup, list(zip([*SOLVERS, VERIFIER], processes, strict=True)))
    finally:
        setup.creator_server.stop()
    logs = [read_log(setup, role, account) for role, account in (("solver", 1), ("solver", 2), ("verifier", 5))]
    assert all(p.returncode == 0 for p in processes), logs
    return RealRun(home, setup.run_id, deployment.anvil.rpc_url, deployment.manifest_path)


@pytest.fixture(scope="module")
def audited(real_run, tmp_path_factory) -> tuple[subprocess.CompletedProcess, dict, Path]:
    out = tmp_path_factory.mktemp("audit-out")
    proc = run_cli(real_run.home, real_run.rpc, real_run.run_id, out)
    data = json.loads((out / "audit.json").read_text()) if (out / "audit.json").exists() else {}
    return proc, data, out / "audit.html"


# -- a real run -------------------------------------------------------------------------------------


@pytest.mark.e2e
def test_real_run_every_check_passes_and_numbers_match_cast(real_run, audited):
    proc, data, _ = audited
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all 10 checks passed" in proc.stdout
    assert [c["name"] for c in data["checks"]] == list(CHECK_ORDER)
    assert all(c["passed"] for c in data["checks"]), data["checks"]
    replay = checks_of(data)["accepted work replays"]["evidence"]  # one sampled segment per accepted commitment
    assert (replay["segments_replayed"], replay["segments_failed"], replay["segments_unavailable"]) == (4, 0, 0)
    assert data["run_id"] == real_run.run_id and data["passed"] and data["run"]["finished"]
    assert [r["status"] for r in data["rounds"]] == ["settled", "settled"]
    assert all(r["rederived"] and r["rederived_theta_hash"] == r["settled_theta_hash"] for r in data["rounds"])
    assert data["slashed"] == []
    assert len(data["loss"]) == 3  # θ0, θ1, θ2

    rpc, run_id = real_run.rpc, real_run.run_id
    manifest = load_manifest(real_run.manifest_path)
    contracts = {name: rec.address for name, rec in manifest.contracts.items() if name != "RunShares"}
    start = manifest.deployed_block

    # commitments: every Committed log of the run, read by cast
    logs = [
        g for g in cast_logs(rpc, contracts["RunRegistry"], COMMITTED, start) if topic_int(g["topics"][1]) == run_id
    ]
    from_cast = {(topic_int(g["topics"][2]), topic_address(g["topics"][3]), g["data"][2:66]) for g in logs}
    from_audit = {(r["round"], c["solver"].lower(), c["root"][2:]) for r in data["rounds"] for c in r["commitments"]}
    assert from_cast == from_audit and len(from_cast) == 4

    # shares: SharesMinted logs and each holder's balanceOf
    minted = [
        g for g in cast_logs(rpc, contracts["ModelShares"], SHARES_MINTED, start) if topic_int(g["topics"][1]) == run_id
    ]
    assert sum(data_words(g["data"])[1] for g in minted) == data["total_shares"] > 0
    token = cast(rpc, "call", contracts["ModelShares"], "shareToken(uint256)(address)", str(run_id))
    assert token.lower() == data["run"]["share_token"].lower()
    for holder, amount in data["shares"].items():
        assert cast_uint(rpc, token, "balanceOf(address)(uint256)", holder) == amount
    assert cast_uint(rpc, token, "totalSupply()(uint256)") == data["total_shares"]
    solvers = {get_devnet_account(i).address for i in SOLVERS}
    assert sum(v for k, v in data["shares"].items() if k in solvers) == 2 * 800 * 10**18

    # θ of every round
    for r in range(3):
        theta = cast(rpc, "call", contracts["RunRegistry"], "thetaOf(uint256,uint64)(bytes32)", str(run_id), str(r))
        expected = data["rounds"][r]["theta_hash"] if r < 2 else data["rounds"][1]["settled_theta_hash"]
        assert theta == expected

    # ETH: every protocol contract and every run's share token, by `cast balance`
    runs = cast_uint(rpc, contracts["RunRegistry"], "runCount()(uint256)")
    tokens = [
        cast(rpc, "call", contracts["ModelShares"], "shareToken(uint256)(address)", str(i)) for i in range(1, runs + 1)
    ]
    held = sum(int(cast(rpc, "balance", a)) for a in [*contracts.values(), *tokens])
    assert held == data["contract_balance_wei"] == data["implied_balance_wei"]

    # nobody of this run was slashed
    slashed = cast_logs(rpc, contracts["StakeManager"], STAKE_SLASHED, start)
    participants = {p["address"].lower() for p in data["participants"]}
    assert not [g for g in slashed if topic_address(g["topics"][1]) in participants]


@pytest.mark.e2e
def test_html_report_renders_in_headless_chromium_with_its_plots(audited, tmp_path):
    from matplotlib.image import imread

    _, data, html_path = audited
    text = html_path.read_text()
    assert "<script" not in text and "http://" not in text.replace(data["rpc_url"], "")
    assert text.count('src="data:image/svg+xml;base64,') == 3
    shot = tmp_path / "audit.png"
    result = run_chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", html_path.resolve().as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    assert shot.stat().st_size > 10_000
    pixels = imread(shot)[:, :, :3]
    assert pixels.shape[:2] == (2000, 1280)

    def count(color: str, tolerance: float = 0.06) -> int:
        rgb = [int(color[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        return int((abs(pixels - rgb).max(axis=2) < tolerance).sum())

    assert count(LOSS_COLOR) > 2000, "the loss line and the solvers' share bars are drawn"
    assert count("#2ca02c") > 1000, "the verifier's share bar is drawn"
    assert count("#ff7f0e") > 200, "the second participant's stake line is drawn"


def _copy_home(real_run: RealRun, tmp_path: Path) -> Path:
    home = tmp_path / "home"
    shutil.copytree(real_run.home, home, ignore=shutil.ignore_patterns("*.log", "index"))  # no event index yet
    return home


@pytest.mark.e2e
def test_tampered_commitment_document_fails_naming_it(real_run, tmp_path):
    home = _copy_home(real_run, tmp_path)
    solver = get_devnet_account(SOLVERS[1]).address
    store = home / "solvers" / solver.lower() / "artifacts"
    (doc_path,) = [
        p
        for p in store.rglob("*")
        if p.is_file() and p.read_bytes().startswith(DOC_PREFIX) and decode_commitment_doc(p.read_bytes()).round == 0
    ]
    doc_path.write_bytes(doc_path.read_bytes().replace(b'"tokens":', b'"tokens": ', 1))
    proc = run_cli(home, real_run.rpc, real_run.run_id, tmp_path / "out")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    data = json.loads((tmp_path / "out" / "audit.json").read_text())
    failed = {name for name, c in checks_of(data).items() if not c["passed"]}
    assert failed == {"commitment documents", "artifact integrity"}
    checks = checks_of(data)
    assert str(doc_path) in checks["artifact integrity"]["detail"]
    (label,) = [p["label"] for p in data["participants"] if p["address"] == solver]  # by joining order
    assert f"round 0 {label} ({solver}): commitment document missing" in checks["commitment documents"]["detail"]
    assert "checks failed" in proc.stdout and (tmp_path / "out" / "audit.html").stat().st_size > 0


@pytest.mark.e2e
def test_missing_delta_fails_the_rederivation_naming_it(real_run, audited, tmp_path):
    home = _copy_home(real_run, tmp_path)
    solver = get_devnet_account(SOLVERS[0]).address
    (delta,) = [c["delta_hash"] for c in audited[1]["rounds"][1]["commitments"] if c["solver"] == solver]
    removed = [p for store in find_home_stores(home) for p in store.rglob(delta[2:])]
    assert removed, "the Δ is in the solver's store (and the coordinator's)"
    for path in removed:
        path.unlink()
    proc = run_cli(home, real_run.rpc, real_run.run_id, tmp_path / "out")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    data = json.loads((tmp_path / "out" / "audit.json").read_text())
    failed = {name: c for name, c in checks_of(data).items() if not c["passed"]}
    assert set(failed) == {"θ re-derivation"}
    assert f"round 1: Δ of {solver} round 1 {delta} is missing" in failed["θ re-derivation"]["detail"]
    assert [r["rederived"] for r in data["rounds"]] == [True, False]


@pytest.mark.e2e
def test_rpc_dropping_mid_read_exits_nonzero_and_writes_nothing(real_run, tmp_path):
    counting = DroppingProxy(real_run.rpc, None)
    home = _copy_home(real_run, tmp_path / "first")
    try:
        full = run_cli(home, counting.url, real_run.run_id, tmp_path / "full")
    finally:
        counting.close()
    assert full.returncode == 0, full.stdout + full.stderr
    total = counting.count
    assert total > 20

    # the event index that audit left under home: read again, only new blocks' logs, and the same run
    manifest = load_manifest(real_run.manifest_path)
    chain = ChainClient(real_run.rpc, manifest)
    index = EventIndex(home / "index" / "events.sqlite", chain)
    logs = chain.provider.requests
    before = logs["eth_getLogs"]
    indexed = read_chain(chain, manifest, index)
    through_index, before = logs["eth_getLogs"] - before, logs["eth_getLogs"]
    direct = read_chain(chain, manifest)
    assert through_index < logs["eth_getLogs"] - before  # none, or one span of the blocks mined since
    run_id = real_run.run_id
    assert fold_run_history(indexed.events, run_id, indexed.timestamps) == fold_run_history(
        [e for e in direct.events if e.block_number <= indexed.block], run_id, direct.timestamps
    )
    dropping = DroppingProxy(real_run.rpc, total // 2)
    out = tmp_path / "dropped"
    try:  # a home without an index: the same reads as the first audit, cut half-way
        proc = run_cli(
            _copy_home(real_run, tmp_path / "second"), dropping.url, real_run.run_id, out, "--rpc-retries", "2"
        )
    finally:
        dropping.close()
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "audit incomplete" in proc.stderr and "cannot reach the chain RPC" in proc.stderr
    assert "nothing was written" in proc.stderr
    assert list(out.iterdir()) == [], "no report and no temp file"


# -- an adversarial run, in progress and finished ---------------------------------------------------


@pytest.fixture()
def travel_chain(deployment) -> tuple[AnvilProcess, DeploymentManifest]:
    """A fresh anvil of its own: time travel must never reach the session chain, whose real-time nodes
    would then wait on a block timestamp ahead of the wall clock (docs in sim/scripted.py)."""
    del deployment  # built the contracts once for the session
    with AnvilProcess() as anvil:
        yield anvil, deploy_protocol(ChainClient(anvil.rpc_url), get_devnet_account(0), build_contracts())


@pytest.mark.slow
def test_adversarial_run_audited_in_progress_and_finished(travel_chain, corpus, tmp_path):
    anvil, manifest = travel_chain
    home = tmp_path / "home"
    config = build_run_config(preset="tiny", run_seed="0x" + "a7" * 32, dataset_root=hash_to_hex(corpus[0].root))
    solvers, verifier, cheater = [8, 9, 10], 18, 10
    chain = ChainClient(anvil.rpc_url, manifest)
    run = start_scripted_run(
        ProtocolClient(chain),
        manifest,
        home,
        config,
        corpus,
        solvers,
        [verifier],
        SCRIPTED_RULES,
        cheats={(cheater, 1): "noise-10pct"},
    )
    try:
        run.play(rounds=2)
        for account in solvers[:2]:
            run.solvers[account].act(Action("train", 2))
            run.solvers[account].act(Action("commit", 2))
        report = audit_run(chain, manifest, run.run_id, open_sources(home, [], []))
        assert report.passed, [c for c in report.checks if not c.passed]
        h = report.history
        assert [r.settled for r in h.rounds] == [True, True, False] and not h.finished
        assert report.pending[0].startswith("round 2 not settled (commit window): 2 commitment(s)")
        cheater_address = get_devnet_account(cheater).address
        assert h.rounds[1].accepted == tuple(
            sorted((get_devnet_account(a).address for a in solvers[:2]), key=lambda a: bytes.fromhex(a[2:]))
        )
        assert [(x.account, x.fault, x.round, x.amount) for x in h.slashes] == [
            (cheater_address, "solver fault", 1, SCRIPTED_RULES.run.solver_min_stake)
        ]
        (fail,) = [a for a in h.rounds[1].attestations if a.is_fail]
        assert fail.solver == cheater_address and fail.state == "finalized"
        # the slash as cast reads it
        logs = cast_logs(
            anvil.rpc_url, manifest.contracts["StakeManager"].address, STAKE_SLASHED, manifest.deployed_block
        )
        mine = [g for g in logs if topic_address(g["topics"][1]) == cheater_address.lower()]
        assert [(g["topics"][3], data_words(g["data"])[1]) for g in mine] == [
            (h.slashes[0].fault_key, SCRIPTED_RULES.run.solver_min_stake)
        ]
        run.play()  # finish round 2
        final = audit_run(chain, manifest, run.run_id, open_sources(home, [], []))
        assert final.passed, [c for c in final.checks if not c.passed]
        assert final.history.finished and [d.problem for d in final.derivations] == [None, None, None]
        assert final.history.balances.get(cheater_address) == 800 * 10**18 // 3  # its honest round 0 only
    finally:
        run.close()


# -- a chain restarted from its saved state ---------------------------------------------------------


@pytest.mark.e2e
def test_audit_after_devnet_restart_matches(corpus, tmp_path):
    home = tmp_path / "home"
    info, _ = start_devnet(home, port=0)
    try:
        manifest = deploy_protocol(ChainClient(info.rpc_url), get_devnet_account(0), build_contracts())
        write_manifest(home / "manifest.json", manifest)
        protocol = ProtocolClient(ChainClient(info.rpc_url, manifest))
        config = build_run_config(preset="tiny", run_seed="0x" + "b8" * 32, dataset_root=hash_to_hex(corpus[0].root))
        rules = SCRIPTED_RULES.with_run(max_rounds=1)
        run = start_scripted_run(protocol, manifest, home, config, corpus, [1, 2], [5], rules)
        try:
            run.play()
        finally:
            run.close()
        before = run_cli(home, info.rpc_url, run.run_id, tmp_path / "before")
        assert before.returncode == 0, before.stdout + before.stderr
    finally:
        stop_devnet(home)
    restarted, started = start_devnet(home, port=0)
    try:
        assert started and restarted.rpc_url != info.rpc_url
        args = ["audit", "--run", str(run.run_id), "--home", str(home), "--json", str(tmp_path / "after.json")]
        after = run_gradledger(args, timeout=600)
    finally:
        stop_devnet(home)
    assert after.returncode == 0, after.stdout + after.stderr
    a = json.loads((tmp_path / "before" / "audit.json").read_text())
    b = json.loads((tmp_path / "after.json").read_text())
    for key in ("rounds", "shares", "slashed", "contract_balance_wei", "implied_balance_wei", "loss"):
        assert a[key] == b[key], key
    assert [(c["name"], c["passed"], c["detail"]) for c in a["checks"]] == [
        (c["name"], c["passed"], c["detail"]) for c in b["checks"]
    ]


def test_deployed_abis_carry_every_event_field_the_audit_reads(deployment):
    from auditor.chain_reads import list_abi_event_fields
    from protocol.history.events import find_missing_event_fields

    assert find_missing_event_fields(list_abi_event_fields(load_manifest(deployment.manifest_path))) == []


# -- the explorer on the same run -------------------------------------------------------------------


def show(browser: HeadlessPage, condition: str) -> str:
    """The page's HTML once `condition` holds; fails at once on the page's error line."""
    html = browser.wait_for(f"({condition}) || document.getElementById('error') !== null")
    assert 'id="error"' not in html, html[html.index('id="error"') :][:500]
    return html


@pytest.mark.e2e
def test_explorer_shows_what_the_contracts_hold_and_follows_new_blocks(real_run, audited, tmp_path):
    """`gradledger explorer`'s service on the finished run, against the chain read independently: the run page drawn
    in headless Chromium (the loss chart drawn with uPlot, every holder's shares as the token's balanceOf), the
    account page (stake and wallet as the contracts hold them), the audit's losses; then a deposit in a new block
    is announced on the event stream and shown."""
    from auditor.explorer.app import start_explorer

    _, audit, _ = audited
    home, run_id = _copy_home(real_run, tmp_path), real_run.run_id
    chain = ChainClient(real_run.rpc, load_manifest(real_run.manifest_path))
    client = ProtocolClient(chain)
    explorer = start_explorer(
        EventIndex(home / "index" / "events.sqlite", chain), open_sources(home, [], []), {}, poll_s=0.1
    )
    deadline, browser = time.monotonic() + 300, None
    try:
        with httpx.Client(base_url=explorer.url, timeout=60) as http, http.stream("GET", "/api/stream") as stream:
            lines = stream.iter_lines()
            view = http.get(f"/api/runs/{run_id}").json()  # asks for the losses, evaluated in the background
            while view["loss_note"] is not None:
                next_change(lines, deadline)
                view = http.get(f"/api/runs/{run_id}").json()
            assert view["run"]["finished"] and [r["phase"] for r in view["rounds"]] == ["settled", "settled"]
            for rnd in view["rounds"]:
                assert rnd["theta"] == hash_to_hex(chain.call("RunRegistry", "thetaOf", run_id, rnd["round"]))
                assert {c["status"] for c in rnd["commitments"]} == {"accepted"} and len(rnd["commitments"]) == 2
            assert {str(x["round"]): x["loss"] for x in view["losses"]} == pytest.approx(audit["loss"], rel=1e-6)
            holders = {a["address"]: int(a["shares"]) for a in view["accounts"] if int(a["shares"])}
            assert holders == {h: client.shares_of(run_id, h) for h in holders} and len(holders) == 3
            assert sum(holders.values()) == int(view["run"]["total_shares"]) == audit["total_shares"]

            browser = HeadlessPage(tmp_path, f"{explorer.url}/#/run/{run_id}")
            html = show(browser, "document.getElementById('loss-chart').dataset.drawn === '3'")
            assert "<canvas" in html and 'class="uplot' in html  # uPlot drew the 3 losses
            shares = r'data-account="(0x[0-9a-fA-F]{40})">.*?data-field="shares"[^>]*>([^<]*)<'
            shown = dict(re.findall(shares, html))
            assert {h: eth_text(v) for h, v in holders.items()} == {h: shown[h] for h in holders}

            solver = get_devnet_account(SOLVERS[0]).address
            answer = http.get(f"/api/accounts/{solver}")
            assert answer.status_code == 200, answer.text
            assert [int(r["shares"]) for r in answer.json()["contracts"]["runs"]] == [holders[solver]]
            browser.evaluate(f"location.hash = '#/account/{solver}'")
            html = show(browser, "document.getElementById('stake') !== null")
            bonded = re.search(r'data-role="solver">.*?data-field="bonded" data-wei="(\d+)">([^<]*)<', html)
            assert bonded and int(bonded[1]) == client.stake_state(solver, 1).bonded_wei > 0
            assert bonded[2] == eth_text(int(bonded[1]))
            assert f'id="wallet" data-wei="{chain.get_balance(solver)}"' in html

            newcomer = Account.create()  # a deposit in a new block: the open page shows it without a reload
            chain.devnet_call("anvil_setBalance", [newcomer.address, hex(5 * 10**18)])
            browser.evaluate(f"location.hash = '#/account/{newcomer.address}'")
            show(browser, f"document.getElementById('wallet').dataset.wei === '{5 * 10**18}'")
            client.deposit_stake(newcomer, 1, 2 * 10**18)
            html = show(
                browser,
                f"document.querySelector('[data-role=solver] [data-field=bonded]').dataset.wei === '{2 * 10**18}'",
            )
            assert client.stake_state(newcomer.address, 1).bonded_wei == 2 * 10**18
            assert f'data-block="{chain.block_number()}"' in html
    finally:
        if browser is not None:
            browser.close()
        explorer.stop()
