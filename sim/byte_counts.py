"""How many times fewer bytes a compressed DiLoCo exchange moves, under the three counts the field uses.

Papers report compression against different baselines, so one payload has three honest ratios (issue 40):
- **ours** (the strictest): every byte a solver moves, its upload plus its downloads of the other M - 1
  solvers' payloads, against synchronous data-parallel training, where every solver uploads and downloads one
  float32 copy of the parameters every step: 2 x 4N x H bytes per solver per round of H steps.
- **per round against a dense fp32 update** (SparseLoCo / Covenant-72B's count): 32 bits per parameter against the
  bits one payload spends per parameter; downloads and H do not enter.
- **per step against data-parallel upload**: the upload of H data-parallel steps (4N x H bytes) against one
  payload; the per-round count times H.

All three are exact ratios of integers (payload lengths are exact), rounded only for display.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RatioCounts:
    """One exchange's compression under the three counts (module docstring); `bits_per_parameter` of one upload."""

    ours: float
    per_round_vs_dense: float
    per_step_vs_dp_upload: float
    bits_per_parameter: float


def compute_ratio_counts(
    parameters: int, inner_steps: int, solvers: int, upload_bytes_per_solver_round: float
) -> RatioCounts:
    """The three ratios of a run whose solvers each upload `upload_bytes_per_solver_round` bytes a round (the mean
    payload length) and download the other solvers' payloads."""
    if parameters <= 0 or inner_steps <= 0 or solvers <= 0 or upload_bytes_per_solver_round <= 0:
        raise ValueError("parameters, inner steps, solvers and payload bytes must all be positive")
    dense = 4 * parameters
    moved = solvers * upload_bytes_per_solver_round  # its own upload and the other M - 1 payloads
    return RatioCounts(
        ours=2 * dense * inner_steps / moved,
        per_round_vs_dense=dense / upload_bytes_per_solver_round,
        per_step_vs_dp_upload=dense * inner_steps / upload_bytes_per_solver_round,
        bits_per_parameter=8 * upload_bytes_per_solver_round / parameters,
    )
