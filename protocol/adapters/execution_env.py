"""Pin this process's arithmetic before torch loads, and read back what took effect.

`pin_execution_environment` is the one switch every entry point calls first: the `gradledger` command (from
`gradledger/__init__.py`, so `python -m gradledger`, torchrun ranks and every node process it starts), the test
suite's conftest and each benchmark. Child processes (a solver's `--nproc` workers, calibration workers) inherit the
environment. It overrides whatever the caller's environment says for the pinned variables: a stray `MKL_CBWR=AVX512`
in an operator's shell must not change a single bit (the reproducibility matrix test starts processes with such
settings and checks that they do not).

`read_execution_environment` reports, after torch loaded, what actually took effect: the kernels torch dispatches
to, MKL's reproducibility branch (asked of MKL itself, through the symbol torch's CPU library exports), the CPU.
Nothing here imports torch at module level.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from protocol.execution_pins import CURRENT_PROFILE, PINNED_ENVIRONMENT, PINS_SWITCH, ExecutionEnvironment

# MKL's codes for its conditional-numerical-reproducibility branches (mkl_service.h).
_MKL_CBWR_ALL = ~0
_MKL_CBWR_STRICT = 0x10000
_MKL_BRANCHES = {
    1: "OFF",
    2: "AUTO",
    3: "COMPATIBLE",
    4: "SSE2",
    6: "SSSE3",
    7: "SSE4_1",
    8: "SSE4_2",
    9: "AVX",
    10: "AVX2",
    11: "AVX512_MIC",
    12: "AVX512",
    13: "AVX512_MIC_E1",
    14: "AVX512_E1",
}


def is_pinning_disabled() -> bool:
    """True when the operator asked for an unpinned process (GRADLEDGER_EXECUTION_PINS=off)."""
    return os.environ.get(PINS_SWITCH, "").strip().lower() == "off"


def pin_execution_environment() -> dict[str, str]:
    """Set the current profile's environment (before torch loads); returns what was set ({} when switched off).

    # INVARIANT: called before anything imports torch in every process that trains or replays; the variables are
    read once by MKL, ATen and oneDNN, so a process that loaded torch first keeps whatever it had
    (`read_execution_environment` then shows it, and the golden self-check fails).
    """
    if is_pinning_disabled():
        return {}
    pins = PINNED_ENVIRONMENT[CURRENT_PROFILE]
    os.environ.update(pins)
    return dict(pins)


def get_unpinned_environment(environment: Mapping[str, str], **extra: str) -> dict[str, str]:
    """`environment` for a child process that must run unpinned: the switch off and every pinned variable removed
    (this process may have set them), then `extra` (e.g. ATEN_CPU_CAPABILITY="default" to ask for a code path)."""
    pinned = {name for pins in PINNED_ENVIRONMENT.values() for name in pins}
    return {**{k: v for k, v in environment.items() if k not in pinned}, PINS_SWITCH: "off", **extra}


def _torch_cpu_library() -> ctypes.CDLL | None:
    import torch

    path = Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
    try:
        return ctypes.CDLL(str(path)) if path.exists() else None
    except OSError:
        return None


def read_mkl_reproducibility() -> tuple[str | None, bool]:
    """(MKL's active branch, STRICT on), asked of MKL; (None, False) when torch was built without MKL.

    MKL refuses its Intel branches on other vendors' CPUs (on an AMD EPYC `MKL_CBWR=AVX2,STRICT` leaves it on
    AUTO with STRICT): this is how a node learns that the BLAS pin did not take."""
    library = _torch_cpu_library()
    getter = getattr(library, "mkl_serv_cbwr_get", None) if library is not None else None
    if getter is None:
        return None, False
    import torch

    torch.mm(torch.ones(2, 2), torch.ones(2, 2))  # MKL reads MKL_CBWR on its first call
    getter.restype, getter.argtypes = ctypes.c_int, [ctypes.c_int]
    mode = int(getter(_MKL_CBWR_ALL))
    return _MKL_BRANCHES.get(mode & 0xFFFF, f"code {mode & 0xFFFF}"), bool(mode & _MKL_CBWR_STRICT)


def _read_cpu() -> tuple[str, str, frozenset[str]]:
    vendor = model = ""
    flags: frozenset[str] = frozenset()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "vendor_id" and not vendor:
                    vendor = value
                elif key == "model name" and not model:
                    model = value
                elif key == "flags" and not flags:
                    flags = frozenset(value.split())
                if vendor and model and flags:
                    break
    except OSError:
        pass
    return vendor or sys.platform, model or "unknown", flags


def read_execution_environment() -> ExecutionEnvironment:
    """What this process computes with: torch, the dispatched kernels, MKL's mode, oneDNN's limit, the CPU."""
    import torch

    vendor, model, flags = _read_cpu()
    branch, strict = read_mkl_reproducibility()
    return ExecutionEnvironment(
        torch_version=torch.__version__,
        aten_capability=torch.backends.cpu.get_cpu_capability(),
        mkl_branch=branch,
        mkl_strict=strict,
        onednn_max_isa=os.environ.get("ONEDNN_MAX_CPU_ISA"),
        cpu_vendor=vendor,
        cpu_model=model,
        avx2="avx2" in flags,
        avx512f="avx512f" in flags,
        pinned=not is_pinning_disabled(),
    )
