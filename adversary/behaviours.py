"""Cheating solver behaviours, for benchmarks, tests and a cheating node on the devnet.

Never a default: nothing here runs unless a caller names a `Behaviour`. Each behaviour builds
a dishonest segment -- end checkpoint plus the `SegmentRecord` (leaf fields) a cheater would
commit -- from the honest machinery: training only ever advances through
`protocol.inner_step.run_inner_steps`, and a cheat changes what it is fed (fewer steps, half the
batch, another solver's batch, bf16 autocast) or what is done with its result (noise,
scaling, a reused or forged update). Every dishonest record claims what an honest one
claims (the served start state, the config's token count), so a verifier cannot reject it
on a precheck: only replay can tell.

    segment = make_dishonest_segment(Behaviour.SCALED_UPDATE, config, dataset, round_index,
                                     solver, segment_index, start_checkpoint, seed=7)
    leaf = segment.record.to_leaf(run_id, round_index, solver)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

import torch

from protocol.checkpoints import (
    ADAM_STEP,
    State,
    build_trainer,
    compute_param_update,
    get_checkpoint_state,
    get_param_state,
    get_params,
)
from protocol.config import RunConfig
from protocol.data import TokenDataset
from protocol.errors import GradledgerError
from protocol.hashing import keccak256
from protocol.inner_step import run_inner_steps
from protocol.model import build_model
from protocol.training import SegmentRecord, compute_segment_record, train_segment

SKIP_PERIOD = 10
"""Skipped steps: only steps whose index in the round is a multiple of this are trained."""


class AdversaryError(GradledgerError):
    """A dishonest segment cannot be built from the given inputs."""


class Behaviour(StrEnum):
    """The cheats a verifier must catch (DESIGN section 7)."""

    SKIPPED_STEPS = "skipped-steps"
    """Trains 1 of every 10 steps (9 of 10 skipped), claims them all."""
    HALF_TOKENS = "half-tokens"
    """Trains every step on the first half of its batch."""
    WRONG_DATA = "wrong-data"
    """One step of the segment trains on another solver's batch."""
    BF16 = "bf16"
    """Trains under bfloat16 autocast instead of float32."""
    NOISE_1PCT = "noise-1pct"
    """Honest update plus Gaussian noise of 1% of each tensor's update norm."""
    NOISE_10PCT = "noise-10pct"
    """Honest update plus Gaussian noise of 10% of each tensor's update norm."""
    REUSED_UPDATE = "reused-update"
    """Applies the previous segment's update again instead of training."""
    SCALED_UPDATE = "scaled-update"
    """The honest update multiplied by 0.9."""
    FORGED_CHECKPOINT = "forged-checkpoint"
    """An unrelated end state (another model's parameters)."""
    SINGLE_TENSOR = "single-tensor"
    """The honest update with one tensor's update replaced by a random one of the same norm."""


NOISE_FRACTIONS = {Behaviour.NOISE_1PCT: 0.01, Behaviour.NOISE_10PCT: 0.10}
SCALE = 0.9


@dataclass(frozen=True)
class DishonestSegment:
    """A cheater's segment: what it commits (`record`) and serves (`end_checkpoint`)."""

    behaviour: Behaviour
    record: SegmentRecord
    end_checkpoint: State


# ---------------------------------------------------------------------------------------
# Training with the honest step, fed differently


def _segment_steps(config: RunConfig, segment_index: int) -> range:
    k = config.train.steps_per_segment
    return range(segment_index * k, (segment_index + 1) * k)


def _train_skipping(
    config: RunConfig, dataset: TokenDataset, round_index: int, solver: str, segment_index: int, start: State
) -> tuple[State, list[float]]:
    model, optimizer = build_trainer(config, start)
    losses: list[float] = []
    for step in _segment_steps(config, segment_index):
        if step % SKIP_PERIOD == 0:
            losses += run_inner_steps(model, optimizer, dataset, config, round_index, solver, step, 1)
    # With no step trained the optimizer state is still the start's (loaded above).
    return _claim_full_step_count(config, start, get_checkpoint_state(model, optimizer)), losses


def _train_half_tokens(
    config: RunConfig, dataset: TokenDataset, round_index: int, solver: str, segment_index: int, start: State
) -> tuple[State, list[float]]:
    half = config.train.batch_size // 2
    if half < 1:
        raise AdversaryError("half-tokens needs a batch of at least 2 sequences")
    # Batch positions are prefix-stable in the batch size: this is the first half of each batch.
    half_config = config.model_copy(update={"train": config.train.model_copy(update={"batch_size": half})})
    return train_segment(half_config, dataset, round_index, solver, segment_index, start)


def _train_wrong_data(
    config: RunConfig,
    dataset: TokenDataset,
    round_index: int,
    solver: str,
    segment_index: int,
    start: State,
    seed: int,
) -> tuple[State, list[float]]:
    model, optimizer = build_trainer(config, start)
    steps = _segment_steps(config, segment_index)
    wrong = steps[seed % len(steps)]
    other = "0x" + keccak256(f"gradledger adversary other solver {seed}".encode())[:20].hex()
    losses: list[float] = []
    for step in steps:
        feed = other if step == wrong else solver
        losses += run_inner_steps(model, optimizer, dataset, config, round_index, feed, step, 1)
    return get_checkpoint_state(model, optimizer), losses


def _train_bf16(
    config: RunConfig, dataset: TokenDataset, round_index: int, solver: str, segment_index: int, start: State
) -> tuple[State, list[float]]:
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return train_segment(config, dataset, round_index, solver, segment_index, start)


def _claim_full_step_count(config: RunConfig, start: Mapping[str, torch.Tensor], end: State) -> State:
    """Set AdamW's step counter to what k honest steps give (a careful cheater's touch)."""
    end[ADAM_STEP] = start[ADAM_STEP] + config.train.steps_per_segment
    return end


# ---------------------------------------------------------------------------------------
# Tampering with an update


def _generator(seed: int, label: str) -> torch.Generator:
    digest = keccak256(f"gradledger adversary {label} {seed}".encode())
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little"))


def _with_params(checkpoint: Mapping[str, torch.Tensor], params: Mapping[str, torch.Tensor]) -> State:
    return {**{k: v.clone() for k, v in checkpoint.items()}, **params}


def _apply_update(start: Mapping[str, torch.Tensor], update: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {name: start[name] + delta for name, delta in update.items()}


def _random_like(tensor: torch.Tensor, norm: float, generator: torch.Generator) -> torch.Tensor:
    noise = torch.randn(tensor.shape, generator=generator, dtype=torch.float32)
    return noise * (norm / max(noise.norm().item(), 1e-30))


def _add_noise(update: State, fraction: float, seed: int) -> State:
    generator = _generator(seed, "noise")
    return {name: u + _random_like(u, fraction * u.norm().item(), generator) for name, u in sorted(update.items())}


def _replace_one_tensor(update: State, seed: int) -> State:
    generator = _generator(seed, "single-tensor")
    names = sorted(update)
    target = names[int(torch.randint(len(names), (1,), generator=generator))]
    replaced = dict(update)
    replaced[target] = _random_like(update[target], update[target].norm().item(), generator)
    return replaced


def _forge(config: RunConfig, start: Mapping[str, torch.Tensor], seed: int) -> State:
    """Parameters of an unrelated model (same architecture, another init seed)."""
    other = build_model(config.model, config.profile, keccak256(f"gradledger adversary forged {seed}".encode()))
    forged = _with_params(start, get_param_state(other))
    return _claim_full_step_count(config, start, forged)


# ---------------------------------------------------------------------------------------
# Public API


def make_dishonest_segment(
    behaviour: Behaviour | str,
    config: RunConfig,
    dataset: TokenDataset,
    round_index: int,
    solver: str,
    segment_index: int,
    start_checkpoint: Mapping[str, torch.Tensor],
    *,
    seed: int = 0,
    previous_update: Mapping[str, torch.Tensor] | None = None,
    honest_end: Mapping[str, torch.Tensor] | None = None,
) -> DishonestSegment:
    """Build what a solver cheating with `behaviour` commits and serves for one segment.

    `seed` picks the noise, the replaced tensor, the wrong step and the forged state.
    `previous_update` (param names -> tensors) is required by REUSED_UPDATE: the update of
    the segment before this one. `honest_end` may be passed to save the honest training the
    tampering behaviours start from (it must be this segment's honest end checkpoint).
    """
    behaviour = Behaviour(behaviour)
    start: State = dict(start_checkpoint)
    args = (config, dataset, round_index, solver, segment_index, start)
    losses: list[float] = []

    def honest() -> State:
        nonlocal losses
        if honest_end is not None:
            return dict(honest_end)
        end, losses = train_segment(*args)
        return end

    if behaviour is Behaviour.SKIPPED_STEPS:
        end, losses = _train_skipping(*args)
    elif behaviour is Behaviour.HALF_TOKENS:
        end, losses = _train_half_tokens(*args)
    elif behaviour is Behaviour.WRONG_DATA:
        end, losses = _train_wrong_data(*args, seed)
    elif behaviour is Behaviour.BF16:
        end, losses = _train_bf16(*args)
    elif behaviour in NOISE_FRACTIONS:
        base = honest()
        noisy = _add_noise(compute_param_update(start, base), NOISE_FRACTIONS[behaviour], seed)
        end = _with_params(base, _apply_update(start, noisy))
    elif behaviour is Behaviour.SCALED_UPDATE:
        base = honest()
        scaled = {k: SCALE * u for k, u in compute_param_update(start, base).items()}
        end = _with_params(base, _apply_update(start, scaled))
    elif behaviour is Behaviour.SINGLE_TENSOR:
        base = honest()
        end = _with_params(base, _apply_update(start, _replace_one_tensor(compute_param_update(start, base), seed)))
    elif behaviour is Behaviour.REUSED_UPDATE:
        if previous_update is None:
            raise AdversaryError("reused-update needs the previous segment's update (previous_update=...)")
        if set(previous_update) != set(get_params(start)):
            raise AdversaryError("previous_update must cover exactly the model's parameters")
        end = _claim_full_step_count(config, start, _with_params(start, _apply_update(start, previous_update)))
    elif behaviour is Behaviour.FORGED_CHECKPOINT:
        end = _forge(config, start, seed)
    else:  # pragma: no cover - the enum is exhaustive
        raise AdversaryError(f"unknown behaviour {behaviour!r}")
    return DishonestSegment(behaviour, compute_segment_record(config, segment_index, start, end, losses), end)
