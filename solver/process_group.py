"""A solver that is a process group: one solver's round trained data-parallel by N processes.

Rank 0 is the solver node (chain, store, HTTP); ranks 1 .. N-1 are workers that only train. For every round rank 0
rings a doorbell in a TCP key-value store (`job/<n>`: "train" or "stop"; a worker may wait there for hours between
rounds, which a collective's timeout would not allow), then broadcasts the job -- θ_r, the round, the solver address,
the plant secret, the carried moments, and the run's config and dataset the first time -- and every rank trains the
same `RoundInputs` with the one `protocol.training.train_round_inputs` in lockstep with a `TorchExchanger`. Each
step, rank r computes its M/N micro-batch gradients and `all_gather` hands every rank all M rows in index order;
every rank folds them the same way (protocol/inner_step.py, `compute_step_gradient`), so every rank holds the same
parameters and AdamW state, and a verifier replaying with one process reproduces rank 0's checkpoints bit for bit.
Only rank 0 stores checkpoints and commits; after each round the ranks compare their end-checkpoint hashes.

Anything wrong with the group (a worker gone, a rank that ended with other bits, a group size that does not divide
the run's micro-batches) is logged as an ERROR and rank 0 trains alone from then on: the same bits, only slower.

Backend: gloo (CPU, this machine); NCCL for GPU ranks (`GRADLEDGER_DIST_BACKEND=nccl`). Workers started by
`gradledger solver run --nproc N` are this module's `main` in subprocesses that meet rank 0 at a TCP store on
127.0.0.1 (any free port) and exit when rank 0 stops: on its "stop", or at once when rank 0's process is gone (their
stdin, a pipe from rank 0, reaches end of file; nothing is left orphaned). Under `torchrun` every rank runs
`gradledger solver run`; ranks other than 0 become workers (`is_torchrun_worker`), and torchrun tears the group down.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from node.logs import configure_logging, get_logger, log_event
from protocol.config import RunConfig, compute_config_hash
from protocol.data import TokenDataset
from protocol.errors import GradledgerError
from protocol.hashing import Hash32, hash_to_hex
from protocol.profile import apply_execution_profile
from protocol.state import compute_state_hash
from protocol.training import RoundInputs, SegmentRecord, State, train_round_inputs

JOB_KEY = "gradledger/job/"
READY_KEY = "gradledger/ready/"
JOB_WAIT = timedelta(hours=1)
"""How long one doorbell wait lasts before a worker waits again (rounds may be hours apart)."""
WORKER_EXIT_S = 30.0
NO_HASH = Hash32(bytes(32))

logger = get_logger("solver.group")


class ProcessGroupError(GradledgerError):
    """The solver's process group cannot start or cannot go on (a worker failed to start or exited)."""


def get_backend() -> str:
    """torch.distributed backend: gloo on CPU (the default), nccl for GPU ranks (GRADLEDGER_DIST_BACKEND)."""
    return os.environ.get("GRADLEDGER_DIST_BACKEND", "gloo")


@dataclass(frozen=True)
class TorchExchanger:
    """`protocol.training.GradientExchanger` over torch.distributed: an all_gather, never an all_reduce."""

    rank: int
    world_size: int

    def gather(self, local: torch.Tensor) -> torch.Tensor:
        rows = [torch.empty_like(local) for _ in range(self.world_size)]
        dist.all_gather(rows, local.contiguous())
        return torch.cat(rows)  # rank r holds micro-batches r*M/N .. (r+1)*M/N - 1: this is index order


@dataclass(frozen=True)
class RoundJob:
    """One round's `RoundInputs` for every rank; `run` (config and dataset) travels only when it changes."""

    round_index: int
    solver: str
    theta: dict[str, torch.Tensor]
    plant_secret: Hash32 | None
    run: tuple[RunConfig, TokenDataset] | None
    start_moments: dict[str, torch.Tensor] | None = None
    """The AdamW moments c_0 carries (train.carry_moments), None for fresh ones."""

    def get_inputs(self, run: tuple[RunConfig, TokenDataset]) -> RoundInputs:
        """The inputs rank 0 trains, with the run it sent last."""
        config, dataset = run
        return RoundInputs(
            config, dataset, self.round_index, self.solver, self.theta, self.plant_secret, self.start_moments
        )


def _init_process_group(**how: Any) -> None:
    """`dist.init_process_group` on our backend, once nothing imported later can pin the group past its close.

    torch.use_deterministic_algorithms (protocol/profile.py) imports torch._inductor.config, which imports
    torch.distributed.fsdp, whose default arguments (`process_group=dist.group.WORLD`) take the default group if
    one exists at that moment. Those references outlive `destroy_process_group`, so the group's gloo threads ran
    on into interpreter exit, where one releasing a finished collective's tensors waited for the GIL and was
    ended inside a destructor: std::terminate, a SIGABRT at a clean exit (seen as a failed torchrun rank).
    """
    import torch._inductor.config  # noqa: F401  # INVARIANT: imported before the group exists: defaults hold None

    dist.init_process_group(get_backend(), **how)


def _broadcast(value: Any) -> Any:
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def _agree_on_end_hash(end_hash: Hash32) -> list[Hash32]:
    hashes: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(hashes, end_hash)
    return hashes


class SolverGroup:
    """Rank 0's side of the group: `train_round` has protocol.training.train_round's signature (solver/node.py)."""

    def __init__(
        self, store: dist.Store, world_size: int, workers: list[subprocess.Popen] | None = None, log=None
    ) -> None:
        self.store = store
        self.world_size = world_size
        self.workers = workers or []
        self.log = log or logger
        self.exchanger: TorchExchanger | None = TorchExchanger(0, world_size)
        self.sent_config: Hash32 | None = None
        self.jobs = 0
        self.unsplittable: set[int] = set()

    def train_round(
        self,
        config: RunConfig,
        dataset: TokenDataset,
        theta_params: Mapping[str, torch.Tensor],
        round_index: int,
        solver: str,
        plant_secret: Hash32 | None = None,
        start_moments: Mapping[str, torch.Tensor] | None = None,
        **outputs: Any,
    ) -> tuple[list[SegmentRecord], State]:
        """protocol.training.train_round's signature, for callers holding the inputs one by one."""
        inputs = RoundInputs(config, dataset, round_index, solver, theta_params, plant_secret, start_moments)
        return self.train_round_inputs(inputs, **outputs)

    def train_round_inputs(self, inputs: RoundInputs, **outputs: Any) -> tuple[list[SegmentRecord], State]:
        """Train the round with every rank, or alone once the group is gone (the same checkpoints either way).
        `outputs` are train_round_inputs' `save_checkpoint`, `on_step` and `in_background`."""
        micro = inputs.config.train.micro_batches
        if self.exchanger is not None and micro % self.world_size:
            if micro not in self.unsplittable:
                self.unsplittable.add(micro)
                log_event(
                    self.log, "training alone", level=logging.ERROR, processes=self.world_size, micro_batches=micro,
                    why=f"the run splits each step into {micro} micro-batches, which {self.world_size} processes "
                    "cannot share evenly; restart with a --nproc that divides train.micro_batches",
                )  # fmt: skip
            return train_round_inputs(inputs, **outputs)
        if self.exchanger is None:
            return train_round_inputs(inputs, **outputs)
        try:
            return self._train_together(inputs, self.exchanger, **outputs)
        except (RuntimeError, ProcessGroupError) as exc:  # torch.distributed errors are RuntimeErrors
            log_event(
                self.log, "process group failed, training alone", level=logging.ERROR, round=inputs.round_index,
                error=f"{type(exc).__name__}: {exc}",
                consequence="this and later rounds are trained by rank 0 alone: the same checkpoints, slower",
            )  # fmt: skip
            self.close()
            return train_round_inputs(inputs, **outputs)

    def _train_together(
        self, inputs: RoundInputs, exchanger: TorchExchanger, **outputs: Any
    ) -> tuple[list[SegmentRecord], State]:
        config_hash = compute_config_hash(inputs.config)
        run = (inputs.config, inputs.dataset) if config_hash != self.sent_config else None
        self.store.set(f"{JOB_KEY}{self.jobs}", "train")  # str, as the stubs say; read back as bytes
        self.jobs += 1
        theta = {k: v.detach().clone() for k, v in inputs.theta.items()}
        moments = inputs.start_moments
        moments = None if moments is None else {k: v.detach().clone() for k, v in moments.items()}
        _broadcast(RoundJob(inputs.round_index, inputs.solver, theta, inputs.plant_secret, run, moments))
        self.sent_config = config_hash
        records, end = train_round_inputs(inputs, exchanger=exchanger, **outputs)
        hashes = _agree_on_end_hash(records[-1].end_hash)
        if len(set(hashes)) != 1:
            raise ProcessGroupError(
                f"the ranks ended round {inputs.round_index} with different checkpoints "
                f"{[hash_to_hex(h)[:18] for h in hashes]}: a rank does not run the pinned execution profile"
            )
        return records, end

    def close(self) -> None:
        """Tell every worker to stop and wait for it (killed after WORKER_EXIT_S); idempotent."""
        if self.exchanger is None:
            return
        self.exchanger = None
        with contextlib.suppress(RuntimeError):  # the store is gone with the group: the workers see stdin close
            self.store.set(f"{JOB_KEY}{self.jobs}", "stop")
        for worker in self.workers:
            if worker.stdin is not None:
                worker.stdin.close()
        for worker in self.workers:
            try:
                worker.wait(timeout=WORKER_EXIT_S)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
        if dist.is_initialized():
            dist.destroy_process_group()
        log_event(self.log, "process group closed", processes=self.world_size)


def start_local_group(nproc: int, threads: int, log: logging.Logger | None = None) -> SolverGroup:
    """Rank 0 of an `nproc`-process group on this machine: spawn ranks 1 .. nproc-1, meet them on 127.0.0.1.

    Raises ProcessGroupError, naming the worker and its exit code, when a worker exits before joining."""
    log = log or logger
    if nproc < 2:
        raise ProcessGroupError(f"a process group needs at least 2 processes, got {nproc}")
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise ProcessGroupError("running under torchrun, which starts the processes itself: leave out --nproc")
    store = dist.TCPStore("127.0.0.1", 0, None, is_master=True, wait_for_workers=False)
    env = {**os.environ, "GLOO_SOCKET_IFNAME": os.environ.get("GLOO_SOCKET_IFNAME", "lo")}
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    command = [sys.executable, "-m", "solver.process_group", "--store", f"127.0.0.1:{store.port}"]
    workers = [
        subprocess.Popen(
            [*command, "--rank", str(rank), "--world-size", str(nproc), "--threads", str(threads)],
            stdin=subprocess.PIPE,
            env=env,
        )
        for rank in range(1, nproc)
    ]
    for rank, worker in enumerate(workers, start=1):
        threading.Thread(target=_report_early_exit, args=(store, rank, worker), daemon=True).start()
    group = SolverGroup(store, nproc, workers, log)
    try:
        store.wait([f"{READY_KEY}{r}" for r in range(1, nproc)], timedelta(minutes=10))
        failed = [r for r in range(1, nproc) if store.get(f"{READY_KEY}{r}") != b"ok"]
        if failed:
            codes = {r: workers[r - 1].poll() for r in failed}
            raise ProcessGroupError(
                f"solver process group worker(s) {failed} exited before joining (exit codes {codes}); their errors "
                "are in this log above"
            )
        _init_process_group(store=store, rank=0, world_size=nproc)
    except BaseException:
        group.exchanger = None  # not a group yet: only the workers to end
        for worker in workers:
            worker.kill()
            worker.wait()
        raise
    log_event(log, "process group started", processes=nproc, backend=get_backend(), workers=[w.pid for w in workers])
    return group


def _report_early_exit(store: dist.TCPStore, rank: int, worker: subprocess.Popen) -> None:
    """Mark worker `rank` failed in the store if it exits before saying it is ready (rank 0 waits on those keys)."""
    worker.wait()
    with contextlib.suppress(RuntimeError):  # the group is closed already
        if not store.check([f"{READY_KEY}{rank}"]):
            store.set(f"{READY_KEY}{rank}", f"exited {worker.returncode}")


def is_torchrun_worker() -> bool:
    """True in a process `torchrun` started as a rank other than 0."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1 and int(os.environ.get("RANK", "0")) != 0


def join_torchrun_group(log: logging.Logger | None = None) -> SolverGroup | None:
    """Rank 0 under `torchrun` (None outside torchrun): join the group and host the job store for the workers."""
    if int(os.environ.get("WORLD_SIZE", "1")) < 2:
        return None
    _init_process_group(init_method="env://")
    store = dist.TCPStore(os.environ["MASTER_ADDR"], 0, None, is_master=True, wait_for_workers=False)
    _broadcast(store.port)
    log_event(log or logger, "process group joined", processes=dist.get_world_size(), backend=get_backend())
    return SolverGroup(store, dist.get_world_size(), log=log)


def run_torchrun_worker(threads: int) -> None:
    """Ranks 1 .. N-1 under `torchrun`: join the group, reach rank 0's job store, train rounds until "stop"."""
    _init_process_group(init_method="env://")
    port = _broadcast(None)
    store = dist.TCPStore(os.environ["MASTER_ADDR"], port, is_master=False)
    serve_rounds(store, dist.get_rank(), dist.get_world_size(), threads)


def _discard(_index: int, _state: State) -> Hash32:
    return NO_HASH  # only rank 0 stores checkpoints


def serve_rounds(store: dist.Store, rank: int, world_size: int, threads: int) -> None:
    """A worker's loop: wait for the doorbell, take the job, train the round in lockstep, until "stop"."""
    exchanger = TorchExchanger(rank, world_size)
    run: tuple[RunConfig, TokenDataset] | None = None
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="sketch") as pool:
        for job_index in range(sys.maxsize):
            if _wait_for_job(store, job_index) == b"stop":
                break
            job: RoundJob = _broadcast(None)
            if job.run is not None:
                run = job.run
                apply_execution_profile(run[0].profile, threads)
            if run is None:
                raise ProcessGroupError("rank 0 sent a round before the run's config: restart the solver")
            _, end = train_round_inputs(
                job.get_inputs(run), save_checkpoint=_discard, in_background=pool.submit, exchanger=exchanger
            )
            _agree_on_end_hash(compute_state_hash(end))
            log_event(logger, "round trained", rank=rank, round=job.round_index)
    if dist.is_initialized():
        dist.destroy_process_group()


def _wait_for_job(store: dist.Store, job_index: int) -> bytes:
    key = f"{JOB_KEY}{job_index}"
    while True:
        try:
            store.wait([key], JOB_WAIT)
            return store.get(key)
        except dist.DistStoreError as exc:
            if "timeout" not in str(exc).lower():
                raise  # rank 0's store is gone


def _exit_when_stdin_closes() -> None:
    """Rank 0 holds our stdin's write end: end of file means rank 0 is gone (even if killed): exit at once."""
    while os.read(0, 4096):  # the raw descriptor: no buffered-reader lock held at interpreter exit
        pass
    os._exit(0)


def main(argv: list[str] | None = None) -> None:
    """`python -m solver.process_group --store HOST:PORT --rank R --world-size N`: one worker rank."""
    parser = argparse.ArgumentParser(description="A worker rank of a solver's process group (started by rank 0).")
    parser.add_argument("--store", required=True, help="rank 0's TCP store, HOST:PORT")
    parser.add_argument("--rank", type=int, required=True, help="this worker's rank, 1 .. world size - 1")
    parser.add_argument("--world-size", type=int, required=True, help="number of processes in the group")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (results do not depend on it)")
    args = parser.parse_args(argv)
    configure_logging()
    threading.Thread(target=_exit_when_stdin_closes, daemon=True, name="rank0-watch").start()
    host, port = args.store.rsplit(":", 1)
    store = dist.TCPStore(host, int(port), is_master=False)
    store.set(f"{READY_KEY}{args.rank}", "ok")
    _init_process_group(store=store, rank=args.rank, world_size=args.world_size)
    log_event(logger, "worker joined", rank=args.rank, processes=args.world_size, pid=os.getpid())
    serve_rounds(store, args.rank, args.world_size, args.threads)


if __name__ == "__main__":
    main()
