"""The execution profile measured: does it pin the bits, and what does pinning cost?

    python bench/profile_check.py [--device cpu|cuda] [--threads 1,2,4] [--steps 12] [--repeats 3] [--out FILE]

`--device cpu` (the default) runs every measurement in a fresh process, because the pins must be set before torch
loads (protocol/adapters/execution_env.py):
- the golden segments (protocol/goldens.py) pinned at each thread count of `--threads`, compared with each other and
  with the committed goldens (protocol/goldens.json): `goldens.one_hash_per_model`, `goldens.reproduces`;
- the step time of the built-in GPT (the default preset, ~0.8M parameters) and of the tiny Llama (examples/) under
  the pins and in an unpinned process (GRADLEDGER_EXECUTION_PINS=off: the CPU's native kernels), alternating, the
  best of `--repeats` runs of `--steps` timed steps each: `profile_slowdown` = pinned / unpinned - 1 per model;
  `profile_slowdown_spread`: min, quartiles and max of that figure over the `--repeats` adjacent pairs (issue 38: a
  ratio of a busy machine needs its spread).

`--device cuda` does the same on a GPU with the CUDA settings a GPU profile would pin (docs/determinism.md:
deterministic algorithms, CUBLAS_WORKSPACE_CONFIG=:4096:8, TF32 off, cuDNN deterministic) against an unpinned
GPU process (none of them): whether two processes give the same golden hashes under each, whether those equal the
CPU goldens, and the step times (`profile_slowdown` on the GPU). It needs only torch, transformers, pydantic and the
eth-hash family, so it runs from a bare copy of the repository (the project need not be installed).

The last line of output is one JSON object. Timings depend on the machine and its load; the hashes do not.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a bare copy of the repository (a GPU machine) has the project uninstalled

from bench.interleaved import compute_spread
from protocol.adapters.execution_env import get_unpinned_environment, pin_execution_environment

pin_execution_environment()  # before torch loads: the execution profile's kernels (docs/determinism.md)

TIMED_MODELS = ("gpt-default", "llama-tiny")
CUDA_PINNED_ENV = {"CUBLAS_WORKSPACE_CONFIG": ":4096:8"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where to train (default: cpu)")
    parser.add_argument("--threads", default="1,2,4", help="CPU thread counts the goldens are trained at")
    parser.add_argument("--timing-threads", type=int, default=1, help="CPU threads of the step-time runs")
    parser.add_argument("--steps", type=int, default=12, help="timed steps per run (after 2 untimed)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per setting; the fastest counts")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # one measurement, in a fresh process
    return parser.parse_args(argv)


# ---------------------------------------------------------------------------------------
# One measurement, in its own process


def _setup_cuda(pinned: bool) -> None:
    import torch

    torch.use_deterministic_algorithms(pinned)
    torch.backends.cudnn.deterministic = pinned
    torch.backends.cudnn.benchmark = not pinned
    torch.backends.cuda.matmul.allow_tf32 = not pinned
    torch.backends.cudnn.allow_tf32 = not pinned


def run_worker(spec: dict[str, Any]) -> dict[str, Any]:
    import torch

    from protocol.adapters.execution_env import read_execution_environment
    from protocol.goldens import (
        GOLDEN_SEGMENTS,
        GOLDEN_SOLVER,
        GoldenSegment,
        build_golden_config,
        build_golden_dataset,
        compute_golden_hash,
        get_golden_segment,
    )
    from protocol.hashing import hash_to_hex
    from protocol.outer import get_initial_global_state
    from protocol.training import build_trainer, get_params, make_start_checkpoint, run_inner_steps

    torch.set_num_threads(spec["threads"])
    device = spec["device"]
    if device == "cuda":
        _setup_cuda(spec["pinned"])
    else:
        torch.use_deterministic_algorithms(True)
    profile = spec["profile"]
    dataset = build_golden_dataset()
    out: dict[str, Any] = {"spec": spec}
    if spec["task"] == "goldens":
        out["hashes"] = {}
        for g in GOLDEN_SEGMENTS:
            try:
                out["hashes"][g.name] = hash_to_hex(compute_golden_hash(g, dataset, profile, device=device))
            except RuntimeError as exc:  # e.g. an op with no deterministic kernel on this device: say which
                out["hashes"][g.name] = f"error: {str(exc).splitlines()[0][:300]}"
    else:
        name = spec["model"]
        golden = GoldenSegment(name, {"architecture": "gpt"}) if name == "gpt-default" else get_golden_segment(name)
        config = build_golden_config(golden, dataset, profile)
        start = make_start_checkpoint(get_params(get_initial_global_state(config)))
        model, optimizer = build_trainer(config, start, device)
        run_inner_steps(model, optimizer, dataset, config, 0, GOLDEN_SOLVER, 0, 2)  # warm up
        if device == "cuda":
            torch.cuda.synchronize()
        began = time.perf_counter()
        run_inner_steps(model, optimizer, dataset, config, 0, GOLDEN_SOLVER, 2, spec["steps"])
        if device == "cuda":
            torch.cuda.synchronize()
        out["step_ms"] = 1000 * (time.perf_counter() - began) / spec["steps"]
    env = read_execution_environment() if device == "cpu" else None
    out["environment"] = env.as_dict() if env else {"gpu": torch.cuda.get_device_name(0), "cuda": torch.version.cuda}
    return out


def measure(spec: dict[str, Any], pinned: bool) -> dict[str, Any]:
    """Run one measurement in a fresh process, pinned or not (the pins must precede torch's import)."""
    env = dict(os.environ) if pinned else get_unpinned_environment(os.environ)
    if spec["device"] == "cuda" and pinned:
        env.update(CUDA_PINNED_ENV)
    spec = {**spec, "pinned": pinned}
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"measurement {spec} failed:\n{done.stderr[-4000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    environment = result["environment"]
    if spec["device"] == "cpu" and (
        environment["pinned"] != pinned or (pinned and environment["aten_capability"] != "AVX2")
    ):  # a comparison of two pinned (or two unpinned) processes would measure nothing
        raise SystemExit(f"measurement {spec} ran in the wrong environment: {environment}")
    return result


# ---------------------------------------------------------------------------------------
# The report


def measure_goldens(args: argparse.Namespace, profile: str) -> dict[str, Any]:
    from protocol.adapters.goldens import load_goldens

    threads = [int(t) for t in args.threads.split(",")] if args.device == "cpu" else [1]
    runs: dict[str, dict[str, str]] = {}
    for pinned in (True, False):
        for t in threads:
            for repeat in range(2 if args.device == "cuda" else 1):  # a GPU: does a second process repeat it?
                label = f"{'pinned' if pinned else 'unpinned'}-{t}t-run{repeat + 1}"
                spec = {"task": "goldens", "device": args.device, "threads": t, "profile": profile}
                result = measure(spec, pinned)
                runs[label] = result["hashes"]
                environment = result["environment"]
    goldens = load_goldens(profile)
    pinned_runs = [h for label, h in runs.items() if label.startswith("pinned")]
    unpinned_runs = [h for label, h in runs.items() if label.startswith("unpinned")]
    return {
        "runs": runs,
        "one_hash_per_model": all(h == pinned_runs[0] for h in pinned_runs),
        "unpinned_one_hash_per_model": all(h == unpinned_runs[0] for h in unpinned_runs),
        "reproduces": goldens is not None and all(h == goldens.segments for h in pinned_runs),
        "environment": environment,
    }


def measure_slowdown(args: argparse.Namespace, profile: str) -> dict[str, Any]:
    times: dict[str, dict[str, list[float]]] = {m: {"pinned": [], "unpinned": []} for m in TIMED_MODELS}
    for repeat in range(args.repeats):
        for model in TIMED_MODELS:
            for pinned in (True, False) if repeat % 2 == 0 else (False, True):  # in turns: load hits both alike
                spec = {"task": "time", "device": args.device, "threads": args.timing_threads, "profile": profile,
                        "model": model, "steps": args.steps}  # fmt: skip
                times[model]["pinned" if pinned else "unpinned"].append(measure(spec, pinned)["step_ms"])
    best = {m: {k: min(v) for k, v in t.items()} for m, t in times.items()}
    return {
        "step_ms": best,
        "step_ms_median": {m: {k: statistics.median(v) for k, v in t.items()} for m, t in times.items()},
        "profile_slowdown": {m: round(b["pinned"] / b["unpinned"] - 1, 4) for m, b in best.items()},
        "profile_slowdown_spread": {
            m: compute_spread([p / u - 1 for p, u in zip(t["pinned"], t["unpinned"], strict=True)]).as_json()
            for m, t in times.items()
        },
    }


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.worker:
        print(json.dumps(run_worker(json.loads(args.worker))))
        return
    from protocol.execution_pins import CURRENT_PROFILE

    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise SystemExit("--device cuda: no GPU is visible to torch here")
    began = time.time()
    goldens = measure_goldens(args, CURRENT_PROFILE)
    slowdown = measure_slowdown(args, CURRENT_PROFILE)
    report = {
        "device": args.device,
        "profile": CURRENT_PROFILE,
        "machine": platform.processor() or platform.machine(),
        "goldens": goldens,
        **slowdown,
        "profile_slowdown_max": max(slowdown["profile_slowdown"].values()),
        "timing_threads": args.timing_threads,
        "seconds": round(time.time() - began, 1),
    }
    text = json.dumps(report)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
