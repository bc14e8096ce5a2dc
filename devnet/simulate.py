"""Local DiLoCo simulation, no chain: M solvers as separate one-thread processes.

Each round every simulated solver trains H inner steps from θ_r in its own process (two
one-thread processes beat one two-thread process on this kind of machine), returns its
pseudo-gradient as canonical state bytes, and the coordinator applies the outer step and
evaluates θ_(r+1) on the held-out batches. Bytes communicated count one upload (Δ) and one
download (θ) of float32 parameters per solver per round.
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

from protocol.config import RunConfig
from protocol.data import DatasetManifest, TokenDataset, build_token_dataset
from protocol.hashing import hash_to_hex, keccak256
from protocol.outer import compute_outer_step, get_initial_global_state
from protocol.state import compute_state_hash, decode_state, encode_state
from protocol.training import compute_pseudo_gradient, evaluate_params, get_params, train_round

_WORKER: dict[str, object] = {}


def get_simulated_solver(index: int) -> str:
    """A deterministic stand-in address for simulated solver `index`."""
    return "0x" + keccak256(f"gradledger simulated solver {index}".encode())[:20].hex()


def _init_worker(config_json: str, manifest: DatasetManifest, shards: dict[bytes, bytes]) -> None:
    torch.set_num_threads(1)
    config = RunConfig.model_validate_json(config_json)
    _WORKER["config"] = config
    _WORKER["dataset"] = build_token_dataset(manifest, shards, config.data.eval_shards)


def _train_solver(theta_bytes: bytes, round_index: int, solver: str) -> tuple[bytes, list[float]]:
    config: RunConfig = _WORKER["config"]  # type: ignore[assignment]
    dataset: TokenDataset = _WORKER["dataset"]  # type: ignore[assignment]
    theta = decode_state(theta_bytes)
    records, end = train_round(config, dataset, theta, round_index, solver)
    return encode_state(compute_pseudo_gradient(theta, end)), [r.mean_loss for r in records]


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


def run_simulation(
    config: RunConfig,
    manifest: DatasetManifest,
    shards: dict[bytes, bytes],
    solvers: int,
    rounds: int,
    on_round: Callable[[int, SimulationResult], None] | None = None,
    processes: int | None = None,
) -> SimulationResult:
    """Run `rounds` DiLoCo rounds with `solvers` solver processes; θ_r's eval loss per round."""
    started = time.perf_counter()
    dataset = build_token_dataset(manifest, shards, config.data.eval_shards)
    global_state = get_initial_global_state(config)
    params = get_params(global_state)
    n_params = sum(v.numel() for v in params.values())
    result = SimulationResult(solvers, config.train.inner_steps, rounds, n_params)
    result.eval_loss.append(evaluate_params(params, dataset, config))
    result.theta_hashes.append(hash_to_hex(compute_state_hash(global_state)))
    addresses = [get_simulated_solver(i) for i in range(solvers)]
    workers = processes or min(solvers, os.cpu_count() or 1)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        workers,
        mp_context=context,
        initializer=_init_worker,
        initargs=(config.model_dump_json(), manifest, shards),
    ) as pool:
        for round_index in range(rounds):
            theta_bytes = encode_state(get_params(global_state))
            futures = {s: pool.submit(_train_solver, theta_bytes, round_index, s) for s in addresses}
            deltas, losses = {}, []
            for solver, future in futures.items():
                delta_bytes, solver_losses = future.result()
                deltas[solver] = decode_state(delta_bytes)
                losses.extend(solver_losses)
            global_state = compute_outer_step(global_state, deltas, config.train)
            result.bytes_communicated += 2 * 4 * n_params * solvers
            result.train_loss.append(sum(losses) / len(losses))
            result.eval_loss.append(evaluate_params(get_params(global_state), dataset, config))
            result.theta_hashes.append(hash_to_hex(compute_state_hash(global_state)))
            result.seconds = time.perf_counter() - started
            if on_round:
                on_round(round_index, result)
    return result


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
