"""`gradledger deploy`, `gradledger run create` and `gradledger artifacts serve`."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from gradledger.context import (
    HomeOption,
    KeystoreOption,
    ManifestOption,
    PublicUrlOption,
    RpcOption,
    StoreOption,
    check_eth_amount,
    connect_protocol,
    eth_to_wei,
    resolve_account,
    resolve_home,
    resolve_manifest,
    resolve_rpc_url,
    with_chain_options,
)
from node.logs import configure_logging
from protocol.errors import GradledgerError

if TYPE_CHECKING:
    from protocol.run_terms import CreationTerms

DEFAULT_ACCOUNT_HELP = "default 0 when neither --keystore nor $GRADLEDGER_PRIVATE_KEY names a key"

run_app = typer.Typer(help="Create and inspect runs.", no_args_is_help=True)
artifacts_app = typer.Typer(help="Serve an artifact store over HTTP.", no_args_is_help=True)


@with_chain_options
def deploy_command(
    home: Path | None = HomeOption,
    rpc_url: str | None = RpcOption,
    keystore: Path | None = KeystoreOption,
    devnet_account: int | None = typer.Option(
        None, "--devnet-account", help=f"deployer: anvil account N (devnet; {DEFAULT_ACCOUNT_HELP})"
    ),
    unbonding_delay: int = typer.Option(7 * 24 * 3600, min=1, help="StakeManager unbonding delay in seconds"),
    block_seconds: int = typer.Option(
        1,
        "--block-seconds",
        min=1,
        max=60,
        help="the chain's block time in seconds: every block is at least this long after its parent (1 for an anvil "
        "devnet, 12 for Ethereum's 12-second slots). Fixed at deployment (RunRegistry.blockSeconds): round seeds are "
        'counted in it and every run\'s windows must fit it (docs/contracts.md, "Windows and block time")',
    ),
    allow_private_peers: bool | None = typer.Option(
        None,
        "--allow-private-peers/--no-allow-private-peers",
        help="whether PeerDirectory accepts URLs naming loopback, link-local or private hosts (fixed at deployment). "
        "Default: allowed on the anvil devnet chain id 31337 only, refused on every other chain",
    ),
    json_out: bool = typer.Option(False, "--json", help="print the manifest summary as JSON"),
) -> None:
    """Build the contracts with forge, deploy them, write <home>/manifest.json."""
    from devnet.anvil import DEVNET_CHAIN_ID
    from devnet.deploy import deploy
    from protocol.adapters.chain import ChainClient

    configure_logging()
    root = resolve_home(home)
    url = resolve_rpc_url(root, rpc_url)
    chain_id = ChainClient(url).chain_id
    account = resolve_account(keystore, devnet_account, chain_id, default_devnet_account=0)
    private_peers = chain_id == DEVNET_CHAIN_ID if allow_private_peers is None else allow_private_peers
    manifest = deploy(url, account, root / "manifest.json", unbonding_delay, block_seconds, private_peers)
    summary = summarize_deployment(manifest, root / "manifest.json")
    if json_out:
        typer.echo(json.dumps(summary))
        return
    lines = [f"{name}: {address}" for name, address in summary["contracts"].items()]
    lines += [f"block time: {summary['block_seconds']} s (RunRegistry.blockSeconds)"]
    lines += [f"{name}: {what}" for name, what in summary["templates"].items()]
    typer.echo("\n".join(lines))


def summarize_deployment(manifest, path: Path) -> dict:
    """What `deploy` prints: the deployed contracts with their addresses, and apart from them the templates.

    A template (`RunShares`) is in the manifest for its ABI only, under the zero address: ModelShares deploys one
    per run. Printed among the contracts, its zero address read as a failed deployment, so it is listed with
    where each run's address comes from instead."""
    from devnet.deploy import TEMPLATES

    return {
        "manifest": str(path),
        "chain_id": manifest.chain_id,
        "block": manifest.deployed_block,
        "block_seconds": manifest.block_seconds,
        "contracts": {name: rec.address for name, rec in manifest.contracts.items() if name not in TEMPLATES},
        "templates": {
            name: "one per run, deployed by ModelShares at createRun (ABI only here; a run's address: "
            "ModelShares.shareToken(runId), or its RunCreated event)"
            for name in manifest.contracts
            if name in TEMPLATES
        },
    }


@run_app.command()
@with_chain_options
def create(
    preset: str = typer.Option(
        "default",
        "--preset",
        help="the run's on-chain terms (protocol/run_presets.py): tiny (the tests' scripted runs), default, demo, "
        "adversarial or production (H=500, k=10, 1-hour windows: needs a chain of 4-second blocks or longer). The "
        "options below and --rules override single terms",
    ),
    rules: Path | None = typer.Option(
        None,
        "--rules",
        help="a JSON or TOML file of run terms, in the shape this command prints: a `run` table (RunTerms fields: "
        "max_rounds, commit_window, ...), a `plant` table (rate_bps, jackpot, penalty) and plant_pool (wei); terms it "
        "leaves out are --preset's, unknown keys are refused",
    ),
    config_preset: str | None = typer.Option(
        None,
        "--config-preset",
        help="training config preset: tiny, default or large (default: tiny with --preset tiny, else default)",
    ),
    rounds: int | None = typer.Option(None, min=1, help="rounds in the run (default: the preset's)"),
    inner_steps: int | None = typer.Option(
        None, min=1, help="H: inner steps per round (default: the preset's, else the config preset's)"
    ),
    steps_per_segment: int | None = typer.Option(
        None, min=1, help="k: steps per segment (default: the preset's, else the config preset's)"
    ),
    samples: int | None = typer.Option(
        None, min=1, help="segments each verifier replays per commitment (default: the preset's)"
    ),
    commit_window: int | None = typer.Option(
        None,
        min=1,
        help="seconds for solvers to train and commit (at least 2 blocks of the deployment's block time; default: "
        "the preset's)",
    ),
    attest_window: int | None = typer.Option(
        None,
        min=1,
        help="seconds for verifiers to attest; its first half must hold the round's seed block and 2 more blocks and "
        'end within 256 blocks of it (the deployment\'s block time: docs/contracts.md, "Windows and block time"; '
        "default: the preset's)",
    ),
    challenge_window: int | None = typer.Option(
        None,
        min=1,
        help="seconds to challenge attestations and claims; at least attest window / 2 + 2 blocks, so an attestation "
        "made at the end of the attest window can still be replayed and challenged (default: the preset's)",
    ),
    start_delay: int | None = typer.Option(
        None,
        "--start-delay",
        min=0,
        help="seconds from the run's creation to round 0's start (at most MAX_START_DELAY, 86400): nodes started "
        "after the run is created still make round 0, and solvers join and register their plant anchors before it. "
        "Round 0's seed block counts from creation, so a delay that is not a multiple of the block time needs up to "
        "a block more of attest window (0: round 0 starts at creation; default: the preset's)",
    ),
    reward_pool: float = typer.Option(
        30.0, min=0, callback=check_eth_amount, help="ETH paid out to share holders across the run"
    ),
    data: Path | None = typer.Option(
        None, help="directory of text files, byte-level tokens (default: the Python stdlib sources)"
    ),
    dataset: Path | None = typer.Option(
        None, help="a dataset directory written by `gradledger data prepare` (token shards + tokenizer)"
    ),
    model_config: Path | None = typer.Option(
        None, "--model-config", help="JSON model section or transformers config.json (e.g. examples/llama-tiny.json)"
    ),
    init_from: Path | None = typer.Option(
        None, "--init-from", help="local Hugging Face model directory (safetensors) whose weights are θ0"
    ),
    thresholds: Path | None = typer.Option(
        None, help="replay thresholds written by `gradledger calibrate` (default: the config's)"
    ),
    settings: list[str] = typer.Option(
        [],
        "--set",
        help="a training-config setting SECTION.KEY=VALUE (repeatable), e.g. --set train.inner_lr=0.0003 --set "
        "model.n_layer=2; VALUE is JSON or a string; unknown keys are refused with the nearest valid name",
    ),
    seed: str = typer.Option("0x" + "00" * 31 + "2a", help="run seed, 32 bytes as 0x-hex"),
    force: bool = typer.Option(
        False, "--force", help="create the run even if its windows are shorter than this machine's measured pace needs"
    ),
    home: Path | None = HomeOption,
    rpc_url: str | None = RpcOption,
    manifest: Path | None = ManifestOption,
    keystore: Path | None = KeystoreOption,
    devnet_account: int | None = typer.Option(
        None, "--devnet-account", help=f"creator: anvil account N (devnet; {DEFAULT_ACCOUNT_HELP})"
    ),
    store: str | None = StoreOption,
    json_out: bool = typer.Option(False, "--json", help="print the run, with the terms it was created with, as JSON"),
) -> None:
    """Publish a run's config, dataset (and tokenizer) and θ0 to the creator's store (--store, default
    <home>/creator/artifacts) and create it on-chain.

    The model is --config-preset's built-in GPT, --model-config's, or --init-from's (gradledger/run_inputs.py).
    Checked first, before the chain is even contacted: the dataset against the config
    (`verify_dataset_fits_config`: a run on a corpus too small to train or evaluate on would lock its reward
    pool in a run every solver refuses), the commit and attest windows against the deployment's block time
    (the manifest's `block_seconds`, then RunRegistry.blockSeconds before sending: createRun refuses windows whose
    seed block cannot be drawn before the opening deadline, with the same reason as printed here), and against the
    model's pace measured on this machine (protocol/windows.py: windows too short make every node miss every
    round); --force skips the pace check only. --start-delay (at most MAX_START_DELAY) is checked with the windows:
    round 0 then starts that long after creation, so nodes started afterwards still make it (docs/contracts.md,
    "Start delay").

    The run's terms: --preset, then --rules FILE, then the single options above; H and k fixed by the terms must
    equal --inner-steps/--steps-per-segment when given. The chosen terms are printed before anything is sent (with
    --json, returned in the output's `terms`), in the shape --rules reads."""
    from devnet.runs import create_run
    from gradledger.run_inputs import parse_settings_but_h_and_k, resolve_run_inputs
    from node.pace import measure_window_needs
    from protocol.adapters.chain import ChainClient
    from protocol.adapters.contracts import ProtocolClient
    from protocol.adapters.object_store import open_artifact_store
    from protocol.hashing import hash_to_hex
    from protocol.windows import verify_challenge_window, verify_windows_fit, verify_windows_fit_chain

    configure_logging()
    chosen = choose_run_terms(  # first: a bad --preset, --rules or H/k is refused before any file or chain is read
        preset, rules, max_rounds=rounds, samples_per_commitment=samples, commit_window=commit_window,
        attest_window=attest_window, challenge_window=challenge_window, start_delay=start_delay,
    )  # fmt: skip
    terms = chosen.run
    h, k = terms.get_training_steps(inner_steps, steps_per_segment)
    root = resolve_home(home)
    deployment = resolve_manifest(root, manifest)
    verify_windows_fit_chain(terms.commit_window, terms.attest_window, deployment.block_seconds, terms.start_delay)
    verify_challenge_window(terms.attest_window, terms.challenge_window, deployment.block_seconds)
    train = {name: value for name, value in (("inner_steps", h), ("steps_per_segment", k)) if value is not None}
    overrides = parse_settings_but_h_and_k(settings, "H and k are run terms; pass --inner-steps/--steps-per-segment")
    inputs = resolve_run_inputs(
        preset=config_preset or ("tiny" if preset == "tiny" else "default"), seed=seed, data=data, dataset=dataset,
        model_config=model_config, init_from=init_from, thresholds=thresholds,
        overrides={**overrides, "train": {**overrides.get("train", {}), **train}},
    )  # fmt: skip
    config, dataset_manifest, shards = inputs.config, inputs.manifest, inputs.shards
    chosen = chosen.with_run(inner_steps=config.train.inner_steps, steps_per_segment=config.train.steps_per_segment)
    needs = measure_window_needs(config, dataset_manifest, shards, terms.samples_per_commitment)
    if not force:
        verify_windows_fit(needs, terms.commit_window, terms.attest_window)
    client = ProtocolClient(ChainClient(resolve_rpc_url(root, rpc_url, deployment), deployment))
    account = resolve_account(keystore, devnet_account, deployment.chain_id, default_devnet_account=0)
    artifacts = open_artifact_store(store or root / "creator" / "artifacts")  # a missing bucket fails here, before
    if not json_out:  # any transaction
        typer.echo(format_run_terms(chosen, preset, rules))
    run_id, bound = create_run(
        client, account, artifacts, config, dataset_manifest, shards, chosen, eth_to_wei(reward_pool),
        tokenizer_json=inputs.tokenizer_json, theta0_params=inputs.theta0_params,
    )  # fmt: skip
    round0_start = client.round_times(run_id).start
    out = {
        "run_id": run_id, "config_hash": hash_to_hex(bound.config_hash), "theta0": hash_to_hex(bound.theta0_hash),
        "windows_needed_s": {"commit": needs.commit_s, "attest": needs.attest_s},
        "block_seconds": deployment.block_seconds, "start_delay_s": bound.start_delay, "round0_start": round0_start,
        "preset": preset, "rules_file": None if rules is None else str(rules), "terms": chosen.to_mapping(),
    }  # fmt: skip
    starts = f"round 0 starts at chain time {round0_start}" + (
        f", after a start delay of {bound.start_delay} s" if bound.start_delay else " (no start delay)"
    )
    typer.echo(json.dumps(out) if json_out else f"created run {run_id} (config {out['config_hash']}); {starts}")


def choose_run_terms(preset: str, rules: Path | None, **options: int | None) -> CreationTerms:
    """The terms `run create` sends: the preset's (`protocol.run_presets.get_preset`), then the --rules file's
    (JSON, or TOML for a .toml file; `protocol.run_terms.update_creation_terms` refuses unknown keys naming the
    nearest valid one), then the single options given (RunTerms field names; None: not given)."""
    from protocol.run_presets import get_preset
    from protocol.run_terms import update_creation_terms

    terms = get_preset(preset)
    if rules is not None:
        terms = update_creation_terms(terms, read_terms_file(rules), f"--rules {rules}")
    given = {name: value for name, value in options.items() if value is not None}
    return terms.with_run(**given) if given else terms


def read_terms_file(path: Path) -> dict[str, Any]:
    """A terms file's contents: TOML for a .toml file, else JSON; TermsError when it cannot be read or parsed."""
    import tomllib

    from protocol.run_terms import TermsError

    try:
        text = path.read_text()
    except OSError as exc:
        raise TermsError(f"--rules {path}: cannot read it ({exc.strerror})") from None
    try:
        values = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        kind = "TOML" if path.suffix == ".toml" else "JSON (name the file .toml for TOML)"
        raise TermsError(f"--rules {path}: not valid {kind}: {exc}") from None
    if not isinstance(values, dict):
        raise TermsError(f"--rules {path}: holds {type(values).__name__}, not a table of terms")
    return values


def format_run_terms(terms: CreationTerms, preset: str, rules: Path | None) -> str:
    """The chosen terms as TOML, the shape --rules reads: a file saved from this output creates the same run."""
    source = f"preset {preset}" + (f", --rules {rules}" if rules is not None else "")
    mapping = terms.to_mapping()
    lines = [f"# run terms ({source}), sent to createRun and Plants.setTerms:", f"plant_pool = {mapping['plant_pool']}"]
    for table in ("run", "plant"):
        lines += [f"[{table}]", *(f"{name} = {value}" for name, value in mapping[table].items())]
    return "\n".join(lines)


class ReclaimError(GradledgerError):
    """A run's unowned revenue cannot be reclaimed (yet): the message says why and when it can; `details` are the
    same facts for --json (e.g. `reclaimable_at`)."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details = details


def explain_reclaim_refusal(error: str, args: dict[str, Any], run: int, now: int) -> ReclaimError | None:
    """Why ModelShares.reclaimUnownedRevenue (or the run's token under it) refuses, as a ReclaimError saying what
    to do or from when it works (`now`: the chain's time); None for an error this does not know."""
    from protocol.constants import UNOWNED_REVENUE_GRACE

    grace = f"{UNOWNED_REVENUE_GRACE // 86400} days"
    if error == "RunNotFinished":
        return ReclaimError(
            f"run {run} is not finished: its unowned revenue can be reclaimed {grace} after its last round settles",
            error=error,
        )
    if error == "ReclaimTooEarly":
        at = int(args["reclaimableAt"])
        wait = max(at - now, 0)
        return ReclaimError(
            f"run {run}'s unowned revenue can be reclaimed from {_utc(at)} (chain time), in {wait // 86400} d "
            f"{wait % 86400 // 3600} h (chain time now {_utc(now)}): contributors have {grace} after the last "
            "settlement to claim their shares; run this command again then",
            error=error, reclaimable_at=at, chain_time=now,
        )  # fmt: skip
    if error == "SharesOutstanding":
        supply = int(args["supply"])
        return ReclaimError(
            f"run {run} has {supply / 1e18:,.4f} shares outstanding: its revenue belongs to their holders (each "
            "withdraws it from the run's share token), nothing is unowned",
            error=error, supply=supply,
        )  # fmt: skip
    if error == "NothingToWithdraw":
        return ReclaimError(
            f"run {run}'s share token holds no unreleased revenue: nothing to reclaim (already reclaimed?)",
            error=error,
        )
    return None


def reclaim_run_revenue(client, account, run: int, now: int) -> dict[str, Any]:
    """Reclaim run `run`'s unowned revenue for its creator: checked first (finished, grace period over, no whole
    share), then every settled round's unclaimed release swept into the run's revenue stream (the pool is paid out
    per round at settlement and reaches the stream only by these sweeps, REWARD_CLAIM_WINDOW after each), then
    reclaimed. Raises ReclaimError (why not) before any transaction when the reclaim would revert."""
    from protocol.adapters.chain import ContractRevertError
    from protocol.constants import MIN_SUPPLY_FOR_RELEASE, UNOWNED_REVENUE_GRACE

    def refuse(error: str, **args: Any) -> ReclaimError:
        refusal = explain_reclaim_refusal(error, args, run, now)
        return refusal if refusal is not None else ReclaimError(f"run {run}: {error}", error=error)

    count = client.chain.call("RunRegistry", "runCount")
    if not 1 <= run <= count:
        raise ReclaimError(f"run {run} does not exist: this deployment has {count} run(s)")
    if not client.is_run_finished(run):
        raise refuse("RunNotFinished")
    reclaimable_at = client.finished_at(run) + UNOWNED_REVENUE_GRACE
    if now < reclaimable_at:
        raise refuse("ReclaimTooEarly", reclaimableAt=reclaimable_at)
    supply = client.share_supply(run)
    if supply >= MIN_SUPPLY_FOR_RELEASE:
        raise refuse("SharesOutstanding", supply=supply)
    swept = []
    for round_index in range(client.round_times(run).round):  # finished: the round count, all settled
        release = client.round_release(run, round_index)
        if release["settledAt"] and not release["swept"]:
            client.sweep_round_release(account, run, round_index)
            swept.append(round_index)
    try:
        result = client.reclaim_unowned_revenue(account, run)
    except ContractRevertError as exc:
        refusal = explain_reclaim_refusal(exc.error, exc.args_, run, now)
        if refusal is None:
            raise
        raise refusal from None
    event = next(e for e in result.events if e.name == "UnownedRevenueSwept")
    return {
        "run_id": run, "reclaimed": True, "to": event.args["to"], "amount_wei": event.args["amount"],
        "swept_rounds": swept, "transaction": result.transaction_hash, "block": result.block_number,
    }  # fmt: skip


def _utc(ts: int) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


@run_app.command()
@with_chain_options
def reclaim(
    run: int = typer.Option(..., "--run", min=1, help="the finished run whose unowned revenue goes to its creator"),
    home: Path | None = HomeOption,
    rpc_url: str | None = RpcOption,
    manifest: Path | None = ManifestOption,
    keystore: Path | None = KeystoreOption,
    devnet_account: int | None = typer.Option(
        None, "--devnet-account", help=f"sender (anyone may send it): anvil account N (devnet; {DEFAULT_ACCOUNT_HELP})"
    ),
    json_out: bool = typer.Option(False, "--json", help="print the result (or why not, with exit 1) as JSON"),
) -> None:
    """Send a finished run's revenue that nobody owns (no work was accepted, no share exists) back to its creator.

    ModelShares.reclaimUnownedRevenue: possible from 30 days after the run's last settlement (contributors have
    that long to claim shares) while no whole share exists; anyone may send it, the ETH goes to the creator.
    Exit 0 when reclaimed, 1 when refused (the message, or the JSON's `reason`, says why and from when)."""
    from node.bootstrap import get_chain_now

    configure_logging()
    client, account = connect_protocol(home, rpc_url, manifest, keystore, devnet_account, default_devnet_account=0)
    try:
        out = reclaim_run_revenue(client, account, run, get_chain_now(client.chain))
    except ReclaimError as exc:
        if not json_out:
            raise
        typer.echo(json.dumps({"run_id": run, "reclaimed": False, "reason": str(exc), **exc.details}))
        raise typer.Exit(1) from None
    shown = f"run {run}: {out['amount_wei'] / 1e18:g} ETH of unowned revenue sent to its creator {out['to']}"
    typer.echo(json.dumps(out) if json_out else shown)


@artifacts_app.command()
def serve(
    directory: str | None = typer.Argument(
        None,
        help="artifact store to serve: a directory or s3://BUCKET/PREFIX (AWS_* environment, docs/storage.md); "
        "default <home>/creator/artifacts",
    ),
    host: str = typer.Option("127.0.0.1", help="interface to listen on"),
    port: int = typer.Option(0, min=0, max=65535, help="port (0 = any free port)"),
    announce: bool = typer.Option(
        False, help="announce this server's URL on-chain from the account below (the run creator's), so nodes find it"
    ),
    public_url: str | None = PublicUrlOption,
    home: Path | None = HomeOption,
    rpc_url: str | None = RpcOption,
    manifest: Path | None = ManifestOption,
    keystore: Path | None = KeystoreOption,
    devnet_account: int | None = typer.Option(0, "--devnet-account", help="with --announce: anvil account N"),
) -> None:
    """Serve an artifact store (a directory or an S3 bucket prefix) at GET /artifacts/{hash} until interrupted."""
    from protocol.adapters.http import make_node_app, serve_in_thread
    from protocol.adapters.object_store import open_artifact_store

    configure_logging()
    store_dir = directory or resolve_home(home) / "creator" / "artifacts"
    served = open_artifact_store(store_dir)
    account = None
    if announce:
        client, account = connect_protocol(home, rpc_url, manifest, keystore, None if keystore else devnet_account)
    app = make_node_app("creator", account.address if account else "", served)
    handle = serve_in_thread(app, host, port)
    if account is not None:
        from node.logs import get_logger
        from node.peers import announce_url, verify_public_url

        announce_url(client, account, verify_public_url(public_url or handle.url), get_logger("creator"))
    typer.echo(json.dumps({"event": "serving", "url": handle.url, "store": str(store_dir)}), err=True)
    threading.Event().wait()
