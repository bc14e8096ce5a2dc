"""A run's on-chain terms, once: RunRegistry's `RunTerms` struct, Plants' `PlantTerms`, and what a run is created with.

One name per concept (issue 38): `RunTerms` is Solidity's struct (contracts/src/interfaces/Types.sol) field for field,
in snake case and in the struct's order; there is no second type repeating its fields. A run is created with a
`CreationTerms`: its RunTerms, whose hashes are zero until `RunTerms.bind` fixes them from the published config,
dataset and θ0, and the PlantTerms sent to Plants.setTerms with the plant pool. The presets (protocol/run_presets.py)
are values of it, and so is what `gradledger run create --rules FILE` reads (`update_creation_terms`).

H and k: terms either fix them (a preset trained at a known round length: the economics price it) or leave them 0,
the training config's. Fixed ones must equal the config's (`RunTerms.get_training_steps`, TermsError otherwise): the
config and the chain mirror them, and `protocol.config.verify_run_terms` refuses a run where they differ. Pure: no I/O.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import astuple, dataclass, fields, replace
from typing import Any

from protocol.constants import BPS_DENOMINATOR
from protocol.errors import GradledgerError
from protocol.hashing import Hash32, to_hash32
from protocol.struct_fields import decode_struct

__all__ = ["ZERO_HASH", "CreationTerms", "PlantTerms", "RunTerms", "TermsError", "update_creation_terms"]

ZERO_HASH = Hash32(bytes(32))
"""The hashes of terms not bound to a run yet (a preset, a terms file)."""
HASH_FIELDS = ("config_hash", "dataset_root", "theta0_hash")


class TermsError(GradledgerError):
    """Run terms that cannot be used: H or k unlike the training config's, or a terms file with unknown, missing or
    malformed keys. The message names the key and what to write instead."""


@dataclass(frozen=True, kw_only=True)
class RunTerms:
    """The on-chain `RunTerms` struct a run is created with (RunRegistry.createRun, event RunCreated).

    Hashes in bytes, amounts in wei, windows in seconds. `config_hash`, `dataset_root`, `inner_steps` and
    `steps_per_segment` mirror the published run config; `protocol.adapters.runs.load_run_context` and the auditor
    check them with `protocol.config.verify_run_terms`. Unbound terms (a preset) have zero hashes and H, k either fixed
    or 0 (the training config's): `bind` makes them a run's. Keyword-only, so a preset names every term it sets.
    """

    config_hash: Hash32 = ZERO_HASH
    dataset_root: Hash32 = ZERO_HASH
    theta0_hash: Hash32 = ZERO_HASH
    inner_steps: int = 0
    """H; 0 in unbound terms that leave it to the training config."""
    steps_per_segment: int = 0
    """k; 0 in unbound terms that leave it to the training config."""
    samples_per_commitment: int
    verifiers_per_commitment: int
    jury_size: int
    commit_window: int
    attest_window: int
    challenge_window: int
    dispute_timeout: int
    solver_min_stake: int
    verifier_min_stake: int
    attestation_bond: int
    challenge_bond: int
    solver_share_bps: int
    verifier_share_bps: int
    juror_share_bps: int
    shares_per_round: int
    revenue_release_period: int
    max_rounds: int
    start_delay: int = 0
    """Seconds from createRun to round 0's start (<= MAX_START_DELAY): nodes start, solvers join and anchor their
    plant chains before round 0 (docs/contracts.md, "Start delay"). The struct's last field, so `to_abi` keeps its
    order."""

    def __post_init__(self) -> None:
        for name in HASH_FIELDS:
            object.__setattr__(self, name, to_hash32(getattr(self, name), f"run terms {name}"))

    @classmethod
    def from_fields(cls, values: Mapping[str, Any]) -> RunTerms:
        return decode_struct(cls, values)

    def to_abi(self) -> tuple:
        return astuple(self)

    @property
    def is_bound(self) -> bool:
        """Whether these are a run's terms: config, dataset and θ0 hashes set, H and k fixed."""
        hashes = (self.config_hash, self.dataset_root, self.theta0_hash)
        return ZERO_HASH not in hashes and self.inner_steps > 0 and self.steps_per_segment > 0

    def get_training_steps(
        self, inner_steps: int | None, steps_per_segment: int | None
    ) -> tuple[int | None, int | None]:
        """(H, k) a run of these terms trains: the given ones (a training config's, a command line's), which must equal
        those the terms fix (TermsError names both), else the terms' own; None where neither says (the config's own).

        # INVARIANT: a fixed H or k wins only by agreement: the chain and the published config mirror them, so a
        conflict refused here is a run every node would refuse to load (protocol.config.verify_run_terms)."""
        chosen = []
        for name, letter, fixed, given in (
            ("inner_steps", "H", self.inner_steps, inner_steps),
            ("steps_per_segment", "k", self.steps_per_segment, steps_per_segment),
        ):
            if fixed and given is not None and given != fixed:
                raise TermsError(
                    f"the run terms fix {letter}={fixed} ({name}) but the training config has {letter}={given}: "
                    f"train {letter}={fixed}, or choose terms that leave {name} to the config ({name} 0)"
                )
            chosen.append(given if given is not None else (fixed or None))
        return chosen[0], chosen[1]

    def bind(
        self, *, config_hash: bytes, dataset_root: bytes, theta0_hash: bytes, inner_steps: int, steps_per_segment: int
    ) -> RunTerms:
        """These terms as one run's: the published config's, dataset's and θ0's hashes, and the config's H and k
        (refused when the terms fix others: `get_training_steps`)."""
        h, k = self.get_training_steps(inner_steps, steps_per_segment)
        return replace(
            self, config_hash=to_hash32(config_hash, "config hash"),
            dataset_root=to_hash32(dataset_root, "dataset root"), theta0_hash=to_hash32(theta0_hash, "θ0 hash"),
            inner_steps=h or 0, steps_per_segment=k or 0,
        )  # fmt: skip

    @property
    def num_segments(self) -> int:
        return self.inner_steps // self.steps_per_segment

    @property
    def solver_bucket(self) -> int:
        """Solver shares of one round (the RunTerms split, floored as Solidity does)."""
        return self.shares_per_round * self.solver_share_bps // BPS_DENOMINATOR

    @property
    def verifier_bucket(self) -> int:
        return self.shares_per_round * self.verifier_share_bps // BPS_DENOMINATOR

    @property
    def juror_bucket(self) -> int:
        return self.shares_per_round * self.juror_share_bps // BPS_DENOMINATOR


@dataclass(frozen=True)
class PlantTerms:
    """Plants.termsOf: planted commitments per 10,000, the jackpot of a fail and the penalty of a pass on a planted
    commitment (wei). The pool a run starts with is the msg.value of `Plants.setTerms` (`CreationTerms.plant_pool`):
    it is not part of the struct."""

    rate_bps: int
    jackpot: int
    penalty: int


@dataclass(frozen=True)
class CreationTerms:
    """Everything a run is created with on-chain: `run` for RunRegistry.createRun (hashes zero until bound), and, when
    it plants (`plant.rate_bps` > 0), `plant` for Plants.setTerms sent with `plant_pool` wei (docs/planted-faults.md).
    A preset is a value of this type (protocol/run_presets.py); devnet.runs.create_run sends one."""

    run: RunTerms
    plant: PlantTerms = PlantTerms(0, 0, 0)
    plant_pool: int = 0

    @property
    def plants(self) -> bool:
        """Whether the run plants faults: create_run sends Plants.setTerms only then."""
        return self.plant.rate_bps > 0

    def with_run(self, **changes: Any) -> CreationTerms:
        """These terms with some RunTerms fields changed (`TINY.with_run(max_rounds=1, commit_window=600)`)."""
        return replace(self, run=replace(self.run, **changes))

    def with_plant(self, *, pool: int | None = None, **changes: Any) -> CreationTerms:
        """These terms with some PlantTerms fields changed, and the plant pool if `pool` is given."""
        return replace(self, plant=replace(self.plant, **changes), plant_pool=self.plant_pool if pool is None else pool)

    def to_mapping(self) -> dict[str, Any]:
        """The terms as `gradledger run create` prints them and `--rules FILE` reads them: `run` (every RunTerms field
        but the hashes, which creation binds), `plant` and `plant_pool`."""
        run = {f.name: getattr(self.run, f.name) for f in fields(RunTerms) if f.name not in HASH_FIELDS}
        plant = {f.name: getattr(self.plant, f.name) for f in fields(PlantTerms)}
        return {"run": run, "plant": plant, "plant_pool": self.plant_pool}


def _terms_file_keys() -> dict[str, tuple[str, ...]]:
    """The keys a terms file may hold, by table: `run`'s and `plant`'s fields, and the top level's."""
    return {
        "run": tuple(f.name for f in fields(RunTerms) if f.name not in HASH_FIELDS),
        "plant": tuple(f.name for f in fields(PlantTerms)),
        "": ("run", "plant", "plant_pool"),
    }


def _refuse_unknown(key: str, table: str, source: str) -> TermsError:
    """An unknown key refused, naming the nearest valid one (in any table: `max_rounds` at the top belongs in `run`)."""
    where = f"[{table}]" if table else "the top level"
    if key in HASH_FIELDS:
        return TermsError(
            f"{source}: {key} is not a term to choose: creation binds it from the published config, dataset and θ0"
        )
    keys = _terms_file_keys()
    qualified = {f"{t}.{k}" if t else k: k for t, names in keys.items() for k in names}
    local = difflib.get_close_matches(key, keys[table], n=1, cutoff=0.6)
    if local:
        hint = f"did you mean {local[0]!r}?"
    else:
        near = difflib.get_close_matches(key, list(qualified.values()), n=1, cutoff=0.6)
        hint = (
            f"did you mean {next(q for q, k in qualified.items() if k == near[0])!r}?"
            if near
            else f"valid keys there: {', '.join(keys[table])}"
        )
    return TermsError(f"{source}: unknown key {key!r} in {where}; {hint}")


def _read_int(value: Any, name: str, source: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TermsError(f"{source}: {name} must be a non-negative integer (wei, seconds or a count), got {value!r}")
    return value


def update_creation_terms(base: CreationTerms, values: Mapping[str, Any], source: str) -> CreationTerms:
    """`base` (a preset) with the terms `values` names, in the shape of `CreationTerms.to_mapping` (a JSON or TOML
    terms file read by the command line; `source` names it in errors). Keys it leaves out keep `base`'s value; an
    unknown key is refused naming the nearest valid one, and so are hashes (bound at creation) and values that are
    not non-negative integers."""
    keys = _terms_file_keys()
    for key in values:
        if key not in keys[""]:
            raise _refuse_unknown(key, "", source)
    changes: dict[str, dict[str, int]] = {"run": {}, "plant": {}}
    for table in ("run", "plant"):
        given = values.get(table, {})
        if not isinstance(given, Mapping):
            raise TermsError(f"{source}: {table} must be a table of terms, got {given!r}")
        for key, value in given.items():
            if key not in keys[table]:
                raise _refuse_unknown(key, table, source)
            changes[table][key] = _read_int(value, f"{table}.{key}", source)
    pool = values.get("plant_pool")
    return replace(
        base.with_run(**changes["run"]).with_plant(**changes["plant"]),
        plant_pool=base.plant_pool if pool is None else _read_int(pool, "plant_pool", source),
    )
