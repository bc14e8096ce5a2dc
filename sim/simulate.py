"""Local DiLoCo simulation, no chain: M solvers as separate one-thread processes.

Each round every simulated solver trains H inner steps from θ_r in its own process (two
one-thread processes beat one two-thread process on this kind of machine), returns its
pseudo-gradient as canonical state bytes, and the coordinator applies the outer step and
evaluates θ_(r+1) on the held-out batches. Bytes communicated count one upload (Δ) and one
download (θ) of float32 parameters per solver per round. With `train.carry_moments` each solver
starts a round from the AdamW moments its previous round ended with (every simulated round is
accepted, so every round after the first carries), as a protocol solver does (node/moments.py).

Optional pseudo-gradient compression (`Compression`, protocol/compression.py, never the
default): each solver uploads its Δ encoded with error feedback; with a download codec the
coordinator also encodes the mean of the decoded Δs (with its own error feedback) and every
party applies the outer step to that decoded mean, so θ_(r+1) stays a pure function of bytes
everyone received. With `peer_payloads` (the protocol's path) every solver instead downloads
the other M - 1 solvers' upload payloads and rebuilds θ_(r+1) from θ_r and all M decoded
payloads. Bytes are then the exact payload lengths.

`run_continuous_training` is the non-DiLoCo baseline (one model, no rounds): synchronous
data-parallel training is one model whose batch is M x b (the mean of the M per-solver
gradients is the gradient of the mean loss), and a lone solver is the same with batch b. It
advances training only through `protocol.training.run_inner_steps`, like everything else.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from protocol.compression import Codec, compress_with_feedback
from protocol.config import RunConfig
from protocol.data import DatasetManifest, TokenDataset, build_token_dataset
from protocol.hashing import hash_to_hex, keccak256
from protocol.model import build_model
from protocol.outer import compute_mean_pseudo_gradient, compute_outer_step, get_initial_global_state
from protocol.state import compute_state_hash, decode_state, encode_state
from protocol.training import (
    State,
    build_optimizer,
    compute_pseudo_gradient,
    evaluate,
    evaluate_params,
    get_moments,
    get_params,
    load_checkpoint_state,
    make_start_checkpoint,
    run_inner_steps,
    train_round,
)

_WORKER: dict[str, object] = {}


def get_simulated_solver(index: int) -> str:
    """A deterministic stand-in address for simulated solver `index`."""
    return "0x" + keccak256(f"gradledger simulated solver {index}".encode())[:20].hex()


def _init_worker(config_json: str, manifest: DatasetManifest, shards: dict[bytes, bytes]) -> None:
    torch.set_num_threads(1)
    config = RunConfig.model_validate_json(config_json)
    _WORKER["config"] = config
    _WORKER["dataset"] = build_token_dataset(manifest, shards, config.data.eval_shards)


def _train_solver(
    theta_bytes: bytes, round_index: int, solver: str, moments_bytes: bytes | None
) -> tuple[bytes, list[float], bytes | None]:
    """(Δ, the segments' losses, the end checkpoint's AdamW moments when the run carries them)."""
    config: RunConfig = _WORKER["config"]  # type: ignore[assignment]
    dataset: TokenDataset = _WORKER["dataset"]  # type: ignore[assignment]
    theta = decode_state(theta_bytes)
    moments = decode_state(moments_bytes) if moments_bytes is not None else None
    records, end = train_round(config, dataset, theta, round_index, solver, start_moments=moments)
    carried = encode_state(get_moments(end)) if config.train.carry_moments else None
    return encode_state(compute_pseudo_gradient(theta, end)), [r.mean_loss for r in records], carried


@dataclass
class SimulationResult:
    """What `gradledger simulate` reports (and writes as JSON)."""

    solvers: int
    inner_steps: int
    rounds: int
    parameters: int
    eval_loss: list[float] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    theta_hashes: list[str] = field(default_factory=list)
    bytes_communicated: int = 0
    seconds: float = 0.0
    eval_rounds: list[int] = field(default_factory=list)
    """Rounds completed when each `eval_loss` entry was measured (0 = θ0)."""
    bytes_up: int = 0
    bytes_down: int = 0
    syncs: int = 0
    compression: str | None = None


@dataclass(frozen=True)
class Compression:
    """Pseudo-gradient codecs for a simulation: `upload` for each solver's Δ; `download` for
    the mean Δ every party applies (None: solvers download θ as float32, or with
    `peer_payloads` the other solvers' upload payloads, from which θ_(r+1) is rebuilt)."""

    upload: Codec
    download: Codec | None = None
    peer_payloads: bool = False

    @property
    def name(self) -> str:
        if self.peer_payloads:
            return f"up {self.upload.name}, down peers' payloads"
        return f"up {self.upload.name}, down {self.download.name if self.download else 'fp32 θ'}"


COORDINATOR = "0x" + "00" * 19 + "01"
"""Key of the (already averaged) mean Δ when the outer step runs on a decoded download."""


def run_simulation(
    config: RunConfig,
    manifest: DatasetManifest,
    shards: dict[bytes, bytes],
    solvers: int,
    rounds: int,
    on_round: Callable[[int, SimulationResult], None] | None = None,
    processes: int | None = None,
    eval_every: int = 1,
    compression: Compression | None = None,
    on_state: Callable[[int, State], None] | None = None,
) -> SimulationResult:
    """Run `rounds` DiLoCo rounds with `solvers` solver processes.

    θ_r's held-out loss is measured every `eval_every` rounds and after the last one (eval is
    serial work in the coordinator, so benchmarks with short rounds thin it out).
    `on_state(r, global_state)` receives θ_0 .. θ_rounds (e.g. for replay benchmarks).
    """
    started = time.perf_counter()
    dataset = build_token_dataset(manifest, shards, config.data.eval_shards)
    global_state = get_initial_global_state(config)
    params = get_params(global_state)
    n_params = sum(v.numel() for v in params.values())
    result = SimulationResult(solvers, config.train.inner_steps, rounds, n_params)
    result.compression = compression.name if compression else None
    result.eval_loss.append(evaluate_params(params, dataset, config))
    result.eval_rounds.append(0)
    result.theta_hashes.append(hash_to_hex(compute_state_hash(global_state)))
    residuals: dict[str, State] = {}
    if on_state:
        on_state(0, global_state)
    addresses = [get_simulated_solver(i) for i in range(solvers)]
    workers = processes or min(solvers, os.cpu_count() or 1)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        workers,
        mp_context=context,
        initializer=_init_worker,
        initargs=(config.model_dump_json(), manifest, shards),
    ) as pool:
        moments: dict[str, bytes | None] = dict.fromkeys(addresses)  # every simulated round is accepted: all carry
        for round_index in range(rounds):
            theta_bytes = encode_state(get_params(global_state))
            futures = {s: pool.submit(_train_solver, theta_bytes, round_index, s, moments[s]) for s in addresses}
            deltas, losses = {}, []
            for solver, future in futures.items():
                delta_bytes, solver_losses, moments[solver] = future.result()
                deltas[solver] = decode_state(delta_bytes)
                losses.extend(solver_losses)
            if compression is None:
                global_state = compute_outer_step(global_state, deltas, config.train)
                result.bytes_up += 4 * n_params * solvers
                result.bytes_down += 4 * n_params * solvers
            else:
                global_state = _compressed_outer_step(global_state, deltas, config, compression, residuals, result)
            result.bytes_communicated = result.bytes_up + result.bytes_down
            result.syncs += 1
            result.train_loss.append(sum(losses) / len(losses))
            if (round_index + 1) % eval_every == 0 or round_index + 1 == rounds:
                result.eval_loss.append(evaluate_params(get_params(global_state), dataset, config))
                result.eval_rounds.append(round_index + 1)
            result.theta_hashes.append(hash_to_hex(compute_state_hash(global_state)))
            result.seconds = time.perf_counter() - started
            if on_state:
                on_state(round_index + 1, global_state)
            if on_round:
                on_round(round_index, result)
    return result


def _compressed_outer_step(
    global_state: State,
    deltas: dict[str, State],
    config: RunConfig,
    compression: Compression,
    residuals: dict[str, State],
    result: SimulationResult,
) -> State:
    """The outer step on what the wire carried: decoded uploads, and a decoded mean download.

    `residuals` holds each sender's error-feedback residual across rounds (solvers by
    address, the coordinator under COORDINATOR); `result`'s byte counters are advanced.
    """
    decoded, uploaded = {}, 0
    for solver, delta in deltas.items():
        step = compress_with_feedback(delta, compression.upload, residuals.get(solver))
        residuals[solver] = step.residual
        decoded[solver] = step.decoded
        uploaded += len(step.payload)
    result.bytes_up += uploaded
    n_params = sum(v.numel() for v in get_params(global_state).values())
    if compression.peer_payloads:
        # Each solver fetches every payload but its own: sum over solvers of (total - own).
        result.bytes_down += uploaded * (len(deltas) - 1)
        return compute_outer_step(global_state, decoded, config.train)
    if compression.download is None:
        result.bytes_down += 4 * n_params * len(deltas)
        return compute_outer_step(global_state, decoded, config.train)
    mean = compute_mean_pseudo_gradient(decoded, config.train)
    step = compress_with_feedback(mean, compression.download, residuals.get(COORDINATOR))
    residuals[COORDINATOR] = step.residual
    result.bytes_down += len(step.payload) * len(deltas)
    return compute_outer_step(global_state, {COORDINATOR: step.decoded}, config.train)


@dataclass
class TrainingCurve:
    """Held-out loss of one continuously trained model (a baseline) at given step counts."""

    label: str
    batch_size: int
    steps: list[int] = field(default_factory=list)
    eval_loss: list[float] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    seconds: float = 0.0


def run_continuous_training(
    config: RunConfig,
    dataset: TokenDataset,
    steps: int,
    solver: str,
    eval_config: RunConfig,
    eval_every: int,
    label: str,
) -> TrainingCurve:
    """Train one model for `steps` AdamW steps in a single round (no outer step, no resets).

    The baselines DiLoCo is compared against: `config.train.batch_size` = M x b for
    synchronous data-parallel training, b for a lone solver. Evaluated under `eval_config` so
    every arm is scored on the same held-out batches. Round 0, steps 0..steps-1: the same
    warmup schedule (by global step) as DiLoCo.
    """
    started = time.perf_counter()
    model = build_model(config.model, config.profile, config.seed_bytes)
    optimizer = build_optimizer(model, config.train)
    load_checkpoint_state(model, optimizer, make_start_checkpoint(get_params(get_initial_global_state(config))))
    curve = TrainingCurve(label, config.train.batch_size, [0], [evaluate(model, dataset, eval_config)])
    done = 0
    while done < steps:
        chunk = min(eval_every, steps - done)
        losses = run_inner_steps(model, optimizer, dataset, config, 0, solver, done, chunk)
        done += chunk
        curve.steps.append(done)
        curve.eval_loss.append(evaluate(model, dataset, eval_config))
        curve.train_loss.append(sum(losses) / len(losses))
    curve.seconds = time.perf_counter() - started
    return curve


def write_simulation_outputs(result: SimulationResult, json_path: Path, plot_path: Path | None) -> None:
    """JSON summary and a PNG loss plot, each written to a temp file and renamed into place."""
    json_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = json_path.with_suffix(json_path.suffix + ".tmp")
    tmp.write_text(json.dumps(asdict(result), indent=1) + "\n")
    tmp.replace(json_path)
    if plot_path is not None:
        write_loss_plot({"DiLoCo": result.eval_loss}, plot_path, "held-out loss of θ_r per round", "round")


def write_loss_plot(curves: dict[str, list[float]], path: Path, title: str, xlabel: str) -> None:
    """A PNG line plot of loss curves (matplotlib, no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(figsize=(7, 4))
    for label, values in curves.items():
        axes.plot(range(len(values)), values, label=label, marker="o" if len(values) < 40 else None)
    axes.set_xlabel(xlabel)
    axes.set_ylabel("loss (nats/byte)")
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    tmp = path.with_name(path.stem + ".tmp.png")
    figure.savefig(tmp, dpi=110)
    plt.close(figure)
    tmp.replace(path)
