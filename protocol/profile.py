"""Execution profiles: the conditions under which an honest replay is bit-identical.

Profile "cpu-fp32-elementary-v1" pins torch 2.13.0, float32 everywhere, and only ops tested
thread-invariant on CPU (the model's LayerNorm is built from elementary ops; see
protocol/model.py). Under it the thread count does not change a single bit of training, which
tests/protocol/test_training.py checks by training at 1 and at 2 threads. Nodes still set the
thread count explicitly (`apply_execution_profile`) so nothing depends on a default.

A replay under any other profile (another torch, a GPU, the fused LayerNorm) is judged by
tolerances on the update sketch and on exact distances instead of hash equality
(protocol/replay.py).
"""

from __future__ import annotations

import torch

from protocol.config import ExecutionProfileConfig
from protocol.errors import ConfigError


def get_local_profile_name(threads: int | None = None) -> str:
    """Describe this process: torch version and dtype (informational, for logs)."""
    return f"torch-{torch.__version__}/threads-{threads or torch.get_num_threads()}"


def is_profile_supported(profile: ExecutionProfileConfig) -> bool:
    """True when this process can replay bit-identically under `profile`."""
    local = torch.__version__.split("+")[0]
    return profile.torch_version == local and profile.dtype == "float32"


def apply_execution_profile(profile: ExecutionProfileConfig, threads: int) -> None:
    """Set the process up for `profile`: explicit thread count, fp32 defaults, no TF32.

    Raises ConfigError when this process cannot run the profile bit-identically (e.g. another
    torch version): such a node must use tolerance verdicts, not exact ones.
    """
    if threads < 1:
        raise ConfigError(f"thread count must be at least 1, got {threads}")
    if not is_profile_supported(profile):
        raise ConfigError(
            f"execution profile {profile.name!r} needs torch {profile.torch_version} and {profile.dtype}; "
            f"this process has torch {torch.__version__}. Install torch=={profile.torch_version} "
            "(CPU build) or replay with tolerance verdicts"
        )
    torch.set_num_threads(threads)
    torch.set_default_dtype(torch.float32)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
