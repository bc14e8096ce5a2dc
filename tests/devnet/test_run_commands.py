"""`gradledger run create` refuses an untrainable corpus and windows that do not fit the chain's block time before
any transaction; `gradledger run reclaim` sends a run's unowned revenue back to its creator, and says why and from
when when it cannot (real anvil). The commands run in the test's process (tests/cli_in_process.py: no interpreter
start-up per refusal, issue 38); only `artifacts serve`, a server, is a process of its own."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from devnet.runs import ETH, build_run_terms, create_run
from devnet.toolchain import get_contracts_dir
from node.opening import draw_round_seed
from protocol.adapters.artifacts import LocalArtifactStore
from protocol.adapters.chain import ChainClient, ContractRevertError
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.manifest import ManifestError
from protocol.config import build_run_config
from protocol.constants import UNOWNED_REVENUE_GRACE
from protocol.data import SHARD_BYTES
from protocol.hashing import hash_to_hex
from protocol.run_presets import PRODUCTION, TINY
from protocol.windows import (
    CHALLENGE_TOO_SHORT,
    COMMIT_TOO_SHORT,
    DRAW_BEFORE_SEED,
    DRAW_BEYOND_HORIZON,
    WindowsUnfitForChainError,
)
from tests.chain_fixtures import Deployment, driven_deployment
from tests.cli_in_process import run_cli

SENDER = 5
"""Sends the reclaims, so the creator's (account 0) balance moves by the reclaimed amount only."""


def _home(deployment: Deployment, tmp_path) -> list[str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "manifest.json").write_text(deployment.manifest_path.read_text())
    return ["--home", str(tmp_path), "--rpc-url", deployment.protocol.chain.rpc_url]


def test_run_create_refuses_a_twelve_byte_corpus_before_any_transaction(deployment, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "tiny.txt").write_text("hello world")  # 11 bytes + the newline read_corpus adds: 12
    protocol = deployment.protocol
    creator = get_devnet_account(0).address
    runs, nonce = protocol.chain.call("RunRegistry", "runCount"), protocol.chain.w3.eth.get_transaction_count(creator)
    result = run_cli("run", "create", "--data", str(corpus), "--preset", "tiny", *_home(deployment, tmp_path / "home"))
    assert result.returncode == 1, result
    message = " ".join(result.stderr.split())
    assert "Traceback" not in result.stderr, result.stderr
    assert f"{corpus} holds 12 bytes: 1 shard(s) of up to {SHARD_BYTES:,} bytes" in message, message
    assert "holds out the last 1 for evaluation (data.eval_shards) and needs at least 1 more to train" in message
    assert f"bytes of text to {corpus}" in message
    assert protocol.chain.call("RunRegistry", "runCount") == runs, "no run was created"
    assert protocol.chain.w3.eth.get_transaction_count(creator) == nonce, "the creator sent no transaction"
    assert not (tmp_path / "home" / "creator" / "artifacts").exists(), "nothing was published"


def test_run_create_refuses_windows_the_machine_cannot_keep_before_any_transaction(deployment, tmp_path):
    """Windows of 2 s and 6 s (the shortest a 1-second chain holds: protocol/windows.py): every round would be
    missed, the pool released to nobody. The refusal names the window
    each needs (measured here) and the flag; --force creates the run anyway and reports what it needed."""
    protocol = deployment.protocol
    creator = get_devnet_account(0).address
    runs, nonce = protocol.chain.call("RunRegistry", "runCount"), protocol.chain.w3.eth.get_transaction_count(creator)
    home = _home(deployment, tmp_path / "home")
    too_short = ("run", "create", "--preset", "tiny", "--commit-window", "2", "--attest-window", "6", "--json")
    result = run_cli(*too_short, *home)
    message = " ".join(result.stderr.split())
    assert result.returncode == 1 and "Traceback" not in result.stderr, result
    assert "the commit window of 2 s is shorter than the" in message and "pass --commit-window" in message, message
    assert "the attest window of 6 s is shorter than the" in message and "pass --attest-window" in message, message
    assert "--force" in message
    assert protocol.chain.call("RunRegistry", "runCount") == runs, "no run was created"
    assert protocol.chain.w3.eth.get_transaction_count(creator) == nonce, "the creator sent no transaction"

    forced = run_cli(*too_short, "--force", *home)
    assert forced.returncode == 0, forced
    out = json.loads(forced.stdout.strip().splitlines()[-1])
    assert out["run_id"] == runs + 1
    assert out["windows_needed_s"]["commit"] > 2 and out["windows_needed_s"]["attest"] > 6, out


def test_run_create_refuses_windows_the_chain_block_time_cannot_hold_before_any_transaction(deployment, tmp_path):
    """The production preset's windows (1 h commit, 30 min attest) on this 1-second-block devnet: the seed block's
    hash leaves the EVM's 256-block reach long before the draw window ends, so createRun would refuse them; the CLI
    refuses first with the contract's reason and the bound to ask for, before measuring or sending anything."""
    protocol = deployment.protocol
    creator = get_devnet_account(0).address
    runs, nonce = protocol.chain.call("RunRegistry", "runCount"), protocol.chain.w3.eth.get_transaction_count(creator)
    home = _home(deployment, tmp_path / "home")
    result = run_cli("run", "create", "--preset", "tiny", "--commit-window", "3600", "--attest-window", "1800", *home)
    message = " ".join(result.stderr.split())
    assert result.returncode == 1 and "Traceback" not in result.stderr, result
    assert f'InvalidConfig("{DRAW_BEYOND_HORIZON}")' in message, message
    assert "1-second blocks" in message and "pass --attest-window 515 or less" in message, message
    assert protocol.chain.call("RunRegistry", "runCount") == runs, "no run was created"
    assert protocol.chain.w3.eth.get_transaction_count(creator) == nonce, "the creator sent no transaction"
    assert not (tmp_path / "home" / "creator" / "artifacts").exists(), "nothing was published"


def test_create_run_refuses_windows_unfit_for_the_deployment_before_publishing(deployment, corpus, tmp_path):
    """devnet.runs.create_run (the demos', the tests' and `run create`'s path) reads the block time from
    RunRegistry and refuses the same windows with createRun's reason; what createRun itself says agrees."""
    protocol, (manifest, shards) = deployment.protocol, corpus
    assert protocol.block_seconds() == 1 == protocol.chain.manifest.block_seconds
    config = build_run_config(preset="tiny", run_seed="0x" + "7d" * 32, dataset_root=hash_to_hex(manifest.root))
    runs = protocol.chain.call("RunRegistry", "runCount")
    store = LocalArtifactStore(tmp_path / "creator")
    for rules, reason in [
        (PRODUCTION.with_run(inner_steps=0, steps_per_segment=0), DRAW_BEYOND_HORIZON),  # H, k: the tiny config's
        (TINY.with_run(commit_window=1, attest_window=100), COMMIT_TOO_SHORT),
        (TINY.with_run(commit_window=20, attest_window=3), DRAW_BEFORE_SEED),
        (TINY.with_run(commit_window=20, attest_window=15, challenge_window=8), CHALLENGE_TOO_SHORT),
    ]:
        with pytest.raises(WindowsUnfitForChainError) as refused:
            create_run(protocol, get_devnet_account(0), store, config, manifest, shards, rules, ETH)
        assert refused.value.reason == reason
        terms = build_run_terms(bytes(32), bytes(32), bytes(32), config, rules.run)
        with pytest.raises(ContractRevertError) as reverted:  # the contract, asked directly: refused at estimation
            protocol.create_run(get_devnet_account(0), terms, ETH)
        assert (reverted.value.error, reverted.value.args_) == ("InvalidConfig", {"reason": reason})
    # a manifest claiming another block time than the chain's is not this deployment's
    claimed = protocol.chain.manifest.model_copy(update={"block_seconds": 12})
    with pytest.raises(ManifestError, match=r"says 12-second blocks but RunRegistry .* blockSeconds = 1"):
        create_run(
            ProtocolClient(ChainClient(protocol.chain.rpc_url, claimed)), get_devnet_account(0), store, config,
            manifest, shards, TINY.with_run(commit_window=300, attest_window=300), ETH,
        )  # fmt: skip
    assert protocol.chain.call("RunRegistry", "runCount") == runs
    assert not (tmp_path / "creator").exists() or not any((tmp_path / "creator").rglob("*")), "nothing published"


@pytest.mark.e2e
def test_run_create_publishes_to_an_s3_store_and_artifacts_serve_serves_it(deployment, s3_bucket, s3_server, tmp_path):
    """--store s3://...: the creator's artifacts go to the bucket (the local S3 server), nothing to <home>, and
    `gradledger artifacts serve s3://...` answers GET /artifacts/{θ0} with the bucket's bytes."""
    home = tmp_path / "home"
    url = f"s3://{s3_bucket}/creator"
    result = run_cli("run", "create", "--preset", "tiny", "--force", "--json", "--store", url, *_home(deployment, home))
    assert result.returncode == 0, result.stderr
    theta0 = json.loads(result.stdout.strip().splitlines()[-1])["theta0"]
    key = f"creator/{theta0[2:]}"
    stored = s3_server.make_client().get_object(Bucket=s3_bucket, Key=key)["Body"].read()
    assert not (home / "creator" / "artifacts").exists(), "nothing went to the local store"

    server = subprocess.Popen(
        [sys.executable, "-m", "gradledger", "artifacts", "serve", url, "--home", str(home)],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stderr is not None
        while (line := server.stderr.readline()) and '"serving"' not in line:
            pass
        served_at = json.loads(line)["url"]
        reply = httpx.get(f"{served_at}/artifacts/{theta0}", timeout=30)
        assert reply.status_code == 200 and reply.content == stored
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def own_chain(tmp_path_factory) -> Iterator[Deployment]:
    """A driven devnet of this module's own: the reclaim test moves its clock 30 days on."""
    with driven_deployment(get_contracts_dir() / "out", tmp_path_factory.mktemp("reclaim")) as deployed:
        yield deployed


def _finish_with_nothing_accepted(protocol: ProtocolClient, run_id: int) -> None:
    """Play the run's rounds with no commitment: seed drawn, θ_r claimed as θ_(r+1), settled."""
    creator, chain = get_devnet_account(0), protocol.chain
    while not (times := protocol.round_times(run_id)).finished:
        chain.mine_blocks(times.seed_block - chain.block_number())  # first: on this clock every block is 1 s
        chain.mine_at(max(times.commit_end, chain.get_block()["timestamp"] + 1))
        draw_round_seed(protocol, creator, run_id, protocol.round_times(run_id))
        chain.mine_at(max(times.challenge_end, chain.get_block()["timestamp"] + 1))
        protocol.post_claim(
            creator, run_id, times.round, protocol.theta_of(run_id, times.round), protocol.challenge_bond(run_id)
        )
        chain.mine_at(protocol.claim_of(run_id, times.round).window_end)
        protocol.settle(creator, run_id, times.round)


def test_reclaim_of_a_run_that_accepted_nothing(own_chain, corpus, tmp_path):
    protocol = own_chain.protocol
    manifest, shards = corpus
    config = build_run_config(preset="tiny", run_seed="0x" + "7c" * 32, dataset_root=hash_to_hex(manifest.root))
    rules = TINY.with_run(max_rounds=2, commit_window=30, attest_window=30, challenge_window=30)
    store = LocalArtifactStore(tmp_path / "creator")
    run_id, _ = create_run(protocol, get_devnet_account(0), store, config, manifest, shards, rules, 3 * ETH)
    args = [*_home(own_chain, tmp_path / "home"), "--devnet-account", str(SENDER)]

    refused = run_cli("run", "reclaim", "--run", str(run_id), *args)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused
    assert f"run {run_id} is not finished" in " ".join(refused.stderr.split())
    unknown = run_cli("run", "reclaim", "--run", str(run_id + 1), *args)
    assert unknown.returncode == 1 and f"run {run_id + 1} does not exist" in " ".join(unknown.stderr.split())

    _finish_with_nothing_accepted(protocol, run_id)
    early = run_cli("run", "reclaim", "--run", str(run_id), "--json", *args)
    assert early.returncode == 1, early
    why = json.loads(early.stdout)
    finished_at = protocol.finished_at(run_id)
    assert why["reclaimed"] is False and why["error"] == "ReclaimTooEarly"
    assert why["reclaimable_at"] == finished_at + UNOWNED_REVENUE_GRACE
    assert "contributors have 30 days after the last settlement to claim their shares" in why["reason"]
    assert "in 29 d 23 h" in why["reason"] or "in 30 d 0 h" in why["reason"], why["reason"]

    protocol.chain.mine_at(why["reclaimable_at"])
    creator = get_devnet_account(0).address
    before = protocol.chain.get_balance(creator)
    done = run_cli("run", "reclaim", "--run", str(run_id), "--json", *args)
    assert done.returncode == 0, done
    result = json.loads(done.stdout)
    assert result["reclaimed"] is True and result["to"] == creator and result["amount_wei"] == 3 * ETH
    assert result["swept_rounds"] == [0, 1], "each round's unclaimed release reaches the stream by its sweep"
    assert protocol.chain.get_balance(creator) - before == 3 * ETH

    again = run_cli("run", "reclaim", "--run", str(run_id), *args)
    assert again.returncode == 1 and "nothing to reclaim (already reclaimed?)" in " ".join(again.stderr.split())
