"""Held-out loss of each θ a run settled, for the explorer's chart: evaluated once per θ hash, off the request path.

The loss is the audit's (`protocol.training.evaluate_params` on the run's eval shards, the config and dataset read
under their on-chain hashes by `auditor/artifact_reads.py` `read_run_definition`), so the explorer's chart and the
audit's report show the same numbers. θs are read from the same artifact sources as the audit (the home's stores,
`--artifacts`, peers). Evaluating takes a forward pass over the eval shards per θ, so it runs in one background
thread: a page never waits for it, and the explorer announces each new loss like a new block.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from auditor.artifact_reads import RunDefinition, read_run_definition
from auditor.sources import ArtifactSources
from node.logs import get_logger, log_event
from protocol.errors import GradledgerError
from protocol.history.records import RunHistory
from protocol.state import decode_state
from protocol.training import evaluate_params, get_params

logger = get_logger("explorer")


@dataclass(frozen=True)
class RunLosses:
    """What is known of a run's losses now: θ_r's loss by r, and why some are missing (None: nothing missing)."""

    losses: dict[int, float]
    note: str | None


class LossBook:
    """Losses by θ hash, evaluated in a background thread; `on_new` is called (from that thread) after each one."""

    def __init__(self, sources: ArtifactSources | None, on_new: Callable[[], None]) -> None:
        self.sources = sources
        self.on_new = on_new
        self.by_hash: dict[str, float] = {}
        self.problems: dict[str, str] = {}
        self.definitions: dict[int, RunDefinition] = {}
        self.queue: list[tuple[int, RunHistory, str]] = []
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.thread: threading.Thread | None = None
        self.stopped = False

    def losses_of(self, history: RunHistory, wait: bool = False) -> RunLosses:
        """The losses known for the run's θ_0 .. θ_(settled); those not evaluated yet are queued for the background
        thread, or with `wait` evaluated now, in this thread (`gradledger run status`)."""
        if self.sources is None:
            return RunLosses({}, "no artifact store to read θ from (give --home or --artifacts)")
        thetas = self.thetas_of(history)
        known, missing, problems = {}, [], []
        with self.lock:
            for r, digest in thetas.items():
                if digest in self.by_hash:
                    known[r] = self.by_hash[digest]
                elif digest in self.problems:
                    problems.append(f"θ_{r}: {self.problems[digest]}")
                else:
                    missing.append((history.run_id, history, digest))
            queued = {d for _, _, d in self.queue}
            if not wait:
                self.queue.extend(m for m in missing if m[2] not in queued)
        if missing and wait:
            for run_id, _, digest in missing:
                self._record(digest, *self._evaluate(run_id, history, digest))
            return self.losses_of(history)
        if missing:
            self._start()
            self.wake.set()
        note = "; ".join(problems[:3]) or (f"{len(missing)} θ still being evaluated" if missing else None)
        return RunLosses(known, note)

    @staticmethod
    def thetas_of(history: RunHistory) -> dict[int, str]:
        """θ_r of every round, and θ_(r+1) of each settled round."""
        thetas = {rnd.index: rnd.theta_hash for rnd in history.rounds}
        for rnd in history.settled_rounds:
            if rnd.next_theta_hash is not None:
                thetas[rnd.index + 1] = rnd.next_theta_hash
        return thetas

    def _start(self) -> None:
        if self.thread is None:
            self.thread = threading.Thread(target=self._work, name="explorer-losses", daemon=True)
            self.thread.start()

    def stop(self) -> None:
        self.stopped = True
        self.wake.set()

    def _work(self) -> None:
        while not self.stopped:
            self.wake.wait()
            self.wake.clear()
            while not self.stopped:
                with self.lock:
                    if not self.queue:
                        break
                    run_id, history, digest = self.queue.pop(0)
                self._record(digest, *self._evaluate(run_id, history, digest))
                self.on_new()

    def _record(self, digest: str, loss: float | None, problem: str | None) -> None:
        with self.lock:
            if loss is not None:
                self.by_hash[digest] = loss
            else:
                self.problems[digest] = problem or "not evaluated"

    def _evaluate(self, run_id: int, history: RunHistory, digest: str) -> tuple[float | None, str | None]:
        """θ's held-out loss, or why there is none (the run's config or dataset unreadable, θ missing)."""
        if self.sources is None:  # nothing is queued without sources (`losses_of`)
            return None, "no artifact store"
        try:
            if run_id not in self.definitions:
                self.definitions[run_id] = read_run_definition(history, self.sources)
            definition = self.definitions[run_id]
            if definition.config is None or definition.dataset is None:
                facts = definition.facts
                return None, facts.config_problem or facts.dataset_problem or facts.rules_problem or "no run config"
            params = get_params(decode_state(self.sources.read(digest, "θ")))
            return evaluate_params(params, definition.dataset, definition.config), None
        except GradledgerError as exc:
            log_event(logger, "loss not evaluated", run=run_id, theta=digest, error=str(exc))
            return None, str(exc)
