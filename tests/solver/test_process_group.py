"""A solver that is a 2-process gloo group on localhost: the very checkpoints of one process, and no orphans."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import textwrap

import pytest

from protocol.config import build_run_config
from protocol.hashing import hash_to_hex
from protocol.outer import get_initial_global_state
from protocol.replay import judge_exact, replay_segment
from protocol.state import compute_state_hash
from protocol.training import get_moments, get_params, keep_checkpoints, train_round
from solver.process_group import start_local_group
from tests.conftest import RUN_SEED, SOLVER_A


@pytest.fixture(scope="module")
def micro_config(corpus):
    manifest, _ = corpus
    return build_run_config(
        preset="tiny",
        run_seed=RUN_SEED,
        dataset_root=hash_to_hex(manifest.root),
        overrides={"train": {"micro_batches": 2}},
    )


def _wait_for_exit(pid: int, timeout_s: float) -> bool:
    """Whether process `pid` (not our child) exits within `timeout_s`: a pidfd turns readable when it does."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout_s)[0])
    finally:
        os.close(fd)


def test_a_two_process_group_trains_the_checkpoints_one_process_replays(micro_config, dataset):
    theta = get_params(get_initial_global_state(micro_config))
    alone: dict = {}
    records_alone, end_alone = train_round(
        micro_config, dataset, theta, 0, SOLVER_A, save_checkpoint=keep_checkpoints(alone)
    )
    group = start_local_group(2, threads=1)
    try:
        together: dict = {}
        records, end = group.train_round(
            micro_config, dataset, theta, 0, SOLVER_A, save_checkpoint=keep_checkpoints(together)
        )
        assert group.exchanger is not None, "the group trained the round (it did not fall back to one process)"
        # the next job reaches the worker, with carried AdamW moments (train.carry_moments) broadcast to it
        again, _ = group.train_round(micro_config, dataset, theta, 1, SOLVER_A, start_moments=get_moments(end))
        assert group.exchanger is not None, "both ranks started round 1 from the same carried moments"
    finally:
        group.close()
    assert [w.returncode for w in group.workers] == [0]
    assert records == records_alone
    assert [compute_state_hash(together[i]) for i in sorted(together)] == [
        compute_state_hash(alone[i]) for i in sorted(alone)
    ]
    for segment, record in enumerate(records):
        replayed = replay_segment(micro_config, dataset, 0, SOLVER_A, segment, together[segment])
        verdict = judge_exact(micro_config, record.to_leaf(1, 0, SOLVER_A), together[segment], replayed)
        assert verdict.accepted, verdict.reason
    assert again == train_round(micro_config, dataset, theta, 1, SOLVER_A, start_moments=get_moments(end_alone))[0]
    assert again != train_round(micro_config, dataset, theta, 1, SOLVER_A)[0]  # the moments were carried


def test_a_lost_worker_leaves_rank_0_training_alone_with_the_same_bits(micro_config, dataset):
    theta = get_params(get_initial_global_state(micro_config))
    group = start_local_group(2, threads=1)
    try:
        group.workers[0].kill()
        group.workers[0].wait()
        records, _ = group.train_round(micro_config, dataset, theta, 0, SOLVER_A)
        assert group.exchanger is None, "rank 0 noticed the lost worker"
    finally:
        group.close()
    assert records == train_round(micro_config, dataset, theta, 0, SOLVER_A)[0]


def test_workers_exit_when_rank_0_is_killed(tmp_path):
    script = textwrap.dedent(
        """
        import json, sys
        from solver.process_group import start_local_group
        group = start_local_group(2, threads=1)
        print(json.dumps([w.pid for w in group.workers]), flush=True)
        sys.stdin.read()  # until the test kills this process
        """
    )
    rank0 = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=tmp_path, text=True
    )
    try:
        pids = json.loads(rank0.stdout.readline())
        assert len(pids) == 1 and not _wait_for_exit(pids[0], 0.5), "the worker runs while rank 0 does"
        rank0.send_signal(signal.SIGKILL)
        rank0.wait()
        assert _wait_for_exit(pids[0], 60), "the worker outlived rank 0"
    finally:
        if rank0.poll() is None:
            rank0.kill()
            rank0.wait()


@pytest.mark.slow
def test_under_torchrun_rank_0_trains_with_the_workers_torchrun_started(tmp_path):
    """`torchrun --nproc-per-node 2`: ranks other than 0 become workers (what `gradledger solver run` does)."""
    script = tmp_path / "rank.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            from solver.process_group import is_torchrun_worker, join_torchrun_group, run_torchrun_worker
            if is_torchrun_worker():
                run_torchrun_worker(threads=1)
                sys.exit(0)
            from protocol.adapters.corpus import load_corpus_shards
            from protocol.config import build_run_config
            from protocol.data import build_token_dataset
            from protocol.outer import get_initial_global_state
            from protocol.training import get_params, train_round
            manifest, shards = load_corpus_shards()
            config = build_run_config(preset="tiny", run_seed="0x" + "5e" * 32, dataset_root="0x" + manifest.root.hex(),
                                      overrides={"train": {"micro_batches": 4}})
            dataset = build_token_dataset(manifest, shards, config.data.eval_shards)
            theta = get_params(get_initial_global_state(config))
            group = join_torchrun_group()
            together, _ = group.train_round(config, dataset, theta, 0, "0x" + "11" * 20)
            trained_together = group.exchanger is not None
            group.close()
            alone, _ = train_round(config, dataset, theta, 0, "0x" + "11" * 20)
            print("RESULT", trained_together, together == alone)
            """
        )
    )
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(script)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert "RESULT True True" in done.stdout, done.stdout + done.stderr
    assert done.returncode == 0, done.stderr


def test_close_leaves_nothing_holding_the_group_after_the_profile_import(tmp_path):
    """Once closed, only c10d's own references to the group are gone too: nothing else pins its gloo threads.

    In a fresh interpreter (pytest's has imported torch._inductor.config long ago), the execution profile's import
    of torch._inductor.config after the group exists used to leave ten references in torch's default arguments
    (`process_group=dist.group.WORLD`): the group's threads outlived `close` and a clean exit could abort (SIGABRT)."""
    script = textwrap.dedent(
        """
        import sys
        import torch.distributed as dist
        from protocol.config import build_run_config
        from protocol.profile import apply_execution_profile
        from solver.process_group import start_local_group
        group = start_local_group(2, threads=1)
        world = dist.distributed_c10d._get_default_group()
        config = build_run_config(preset="tiny", run_seed="0x" + "5e" * 32, dataset_root="0x" + "00" * 32)
        apply_execution_profile(config.profile, threads=1)
        group.close()
        print(sys.getrefcount(world) - 1, [w.returncode for w in group.workers])
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "[0]"], f"references to the closed group besides ours: {done.stdout}"
