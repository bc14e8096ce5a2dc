"""The execution profiles' names and the process settings each one pins (no torch here: read before it loads).

A profile pins everything shown to change the bits of training on CPU (docs/determinism.md):

- the BLAS library's code path and its conditional-reproducibility mode (`MKL_CBWR`): without it MKL picks a
  kernel by CPU and thread count, and 1 and 2 threads differ on an AVX-512 Xeon;
- the instruction set torch's own kernels dispatch to (`ATEN_CPU_CAPABILITY`): AVX2, AVX-512 and the
  portable path round differently (softmax, GELU, reductions);
- oneDNN's instruction set (`ONEDNN_MAX_CPU_ISA`): torch runs GELU through oneDNN's JIT kernels, whose
  polynomial differs per ISA.

These are environment variables the libraries read once, when torch loads or first calls them, so they are set by
one function every entry point calls first (`protocol.adapters.execution_env.pin_execution_environment`). The
thread count and `torch.use_deterministic_algorithms` are set per process by `protocol.profile`.

Profile "cpu-fp32-elementary-v1" pinned none of these; it stays readable (old run configs hash as before) but has
no golden hashes, so no node gives an exact fail under it (protocol/goldens.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Final, Literal

PROFILE_V1: Final = "cpu-fp32-elementary-v1"
PROFILE_V2: Final = "cpu-fp32-pinned-v2"
ProfileName = Literal["cpu-fp32-elementary-v1", "cpu-fp32-pinned-v2"]
CURRENT_PROFILE: Final[ProfileName] = PROFILE_V2
"""The profile new runs get (protocol/config.py's default) and the one whose settings every entry point pins."""

PINNED_ENVIRONMENT: Final[dict[str, dict[str, str]]] = {
    PROFILE_V1: {},
    PROFILE_V2: {"MKL_CBWR": "AVX2,STRICT", "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
}
"""Environment each profile sets before torch loads. AVX2 because every x86-64 server CPU since 2013 has it
(Intel Haswell, AMD Zen), so one path serves all; AVX-512 would shut out most AMD and client CPUs. STRICT makes MKL's
results independent of the thread count (its conditional numerical reproducibility)."""

PINNED_ATEN_CAPABILITY: Final[dict[str, str | None]] = {PROFILE_V1: None, PROFILE_V2: "AVX2"}
"""What `torch.backends.cpu.get_cpu_capability()` must report once the pins took effect (None: not pinned)."""

PINS_SWITCH: Final = "GRADLEDGER_EXECUTION_PINS"
"""Set to "off" to leave the environment as it is: for measuring the cost of the pins (bench/overhead.py) and for
showing what an unpinned process does (tests). A node started so does not reproduce the goldens, and says so."""


@dataclass(frozen=True)
class ExecutionEnvironment:
    """What a process computes with, read after torch loaded (protocol/adapters/execution_env.py)."""

    torch_version: str
    aten_capability: str
    mkl_branch: str | None
    mkl_strict: bool
    onednn_max_isa: str | None
    cpu_vendor: str
    cpu_model: str
    avx2: bool
    avx512f: bool
    pinned: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def mkl_mode(self) -> str:
        """MKL's mode as `MKL_CBWR` spells it (e.g. "AVX2,STRICT"), or "no MKL"."""
        if self.mkl_branch is None:
            return "no MKL"
        return self.mkl_branch + (",STRICT" if self.mkl_strict else "")


def explain_environment_mismatch(profile: str, env: ExecutionEnvironment) -> str | None:
    """Why `env` does not run `profile`'s pinned kernels, or None when every pin this process can see took effect.

    MKL's branch is not required here: MKL runs its Intel branches only on Intel CPUs (elsewhere AVX2,STRICT stays
    AUTO,STRICT), so the branch is reported, and the golden hashes decide whether the machine reproduces."""
    pins = PINNED_ENVIRONMENT.get(profile)
    if pins is None:
        return f"unknown execution profile {profile!r}; this build knows {sorted(PINNED_ENVIRONMENT)}"
    if not pins:
        return f"profile {profile!r} pins no kernels (it predates the pins): nothing can be checked against it"
    if not env.pinned:
        return f"the pins are switched off ({PINS_SWITCH}=off): this process runs whatever kernels its CPU picks"
    expected = PINNED_ATEN_CAPABILITY[profile]
    if expected is not None and env.aten_capability != expected:
        return (
            f"torch dispatches {env.aten_capability} kernels, the profile needs {expected} (ATEN_CPU_CAPABILITY="
            f"{pins['ATEN_CPU_CAPABILITY']}): the CPU lacks it, or torch loaded before gradledger pinned the process"
        )
    if env.mkl_branch is not None and "STRICT" in pins.get("MKL_CBWR", "") and not env.mkl_strict:
        return f"MKL runs {env.mkl_mode}, the profile needs strict reproducibility (MKL_CBWR={pins['MKL_CBWR']})"
    return None
