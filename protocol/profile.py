"""Execution profiles: the conditions under which an honest replay is bit-identical.

Profile "cpu-fp32-pinned-v2" (docs/determinism.md) pins torch 2.13.0 (and, for a Hugging Face model, the
transformers release), float32 everywhere, deterministic algorithms, only ops tested thread-invariant on CPU
(LayerNorm built from elementary ops, attention spelled out; see protocol/model.py and protocol/hf_model.py), and,
set before torch loads (protocol/execution_pins.py), MKL's reproducibility branch, torch's AVX2 kernels and oneDNN's
ISA. Under it the thread count does not change a single bit of training on a machine that reproduces the profile's
golden hashes (protocol/goldens.py; `gradledger profile check`), which tests/protocol/test_training.py and
tests/protocol/test_reproducibility_matrix.py check. Nodes still set the thread count explicitly
(`apply_execution_profile`) so nothing depends on a default. Profile "cpu-fp32-elementary-v1" (before the pins)
stays readable for runs created under it; it has no goldens.

A replay under any other profile (another torch, a GPU, the fused LayerNorm) or on a machine that does not
reproduce the goldens is judged by tolerances on the update sketch and on exact distances instead of hash equality
(protocol/replay.py, protocol/verdict.py).
"""

from __future__ import annotations

import sys

import torch

from protocol.config import ExecutionProfileConfig
from protocol.errors import ConfigError


def set_deterministic_algorithms(enabled: bool) -> None:
    """Turn torch's deterministic-algorithms flag on or off for the eager kernels gradledger runs.

    `torch.use_deterministic_algorithms` also sets the inductor compiler's flag, and to do so imports
    torch._inductor: 2.4 s of CPU in every node, audit and replay process at start (py-spy, issue 38). gradledger
    never compiles (no torch.compile anywhere), so only the kernels' flag matters, and this sets exactly that one.
    When torch._inductor is already loaded (a torchrun rank imports it on purpose, solver/process_group.py), the
    public call keeps both flags equal.

    # INVARIANT: afterwards `torch.are_deterministic_algorithms_enabled() == enabled`
    (tests/protocol/test_profile_flags.py checks it, and that no inductor import happened, in a fresh process).
    """
    setter = getattr(torch._C, "_set_deterministic_algorithms", None)
    if setter is None or "torch._inductor.config" in sys.modules:
        torch.use_deterministic_algorithms(enabled)
    else:
        setter(enabled, warn_only=False)


def get_local_profile_name(threads: int | None = None) -> str:
    """Describe this process: torch version and dtype (informational, for logs)."""
    return f"torch-{torch.__version__}/threads-{threads or torch.get_num_threads()}"


def get_transformers_version() -> str | None:
    """The installed transformers release, or None when it is not installed."""
    try:
        import transformers
    except ImportError:
        return None
    return str(transformers.__version__)


def explain_profile_mismatch(profile: ExecutionProfileConfig) -> str | None:
    """Why this process cannot replay bit-identically under `profile`, or None when it can.

    Checked by every node before it trains or replays (`apply_execution_profile`): the torch release, the
    transformers release that builds a Hugging Face model, and the dtype."""
    local = torch.__version__.split("+")[0]
    if profile.torch_version != local:
        return f"it needs torch {profile.torch_version}, this process has torch {torch.__version__}"
    if profile.transformers_version is not None:
        installed = get_transformers_version()
        if installed != profile.transformers_version:
            return (
                f"its Hugging Face model needs transformers {profile.transformers_version}, this process has "
                f"{'no transformers' if installed is None else 'transformers ' + installed}"
            )
    if profile.dtype != "float32":
        return f"it trains in {profile.dtype}; this build replays float32 only"
    return None


def is_profile_supported(profile: ExecutionProfileConfig) -> bool:
    """True when this process can replay bit-identically under `profile`."""
    return explain_profile_mismatch(profile) is None


def apply_execution_profile(profile: ExecutionProfileConfig, threads: int) -> None:
    """Set the process up for `profile`: explicit thread count, fp32 defaults, no TF32.

    Raises ConfigError when this process cannot run the profile bit-identically (e.g. another
    torch version): such a node must use tolerance verdicts, not exact ones.
    """
    if threads < 1:
        raise ConfigError(f"thread count must be at least 1, got {threads}")
    problem = explain_profile_mismatch(profile)
    if problem is not None:
        pins = f"torch=={profile.torch_version} (CPU build)"
        if profile.transformers_version:
            pins += f" and transformers=={profile.transformers_version}"
        raise ConfigError(
            f"refusing exact verdicts under execution profile {profile.name!r}: {problem}. Install {pins}, "
            "or replay with tolerance verdicts"
        )
    torch.set_num_threads(threads)
    set_deterministic_algorithms(profile.deterministic_algorithms)
    torch.set_default_dtype(torch.float32)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
