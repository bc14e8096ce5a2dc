"""A solver's HTTP API: what verifiers, jurors, whistleblowers and auditors fetch from it.

Besides every node's `/health`, `/metrics`, `/identity` and `/artifacts/{hash}` (protocol/adapters/http.py), a
solver serves `GET /commitments/{run}/{round}`: the commitment document it committed to (all leaves and θ_r's
hash), from which a checker learns which checkpoints to fetch. A document it does not hold is a 404; one whose
stored copy is corrupt is a 503 while the node re-creates it (solver/own_artifacts.py), never a 500.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, HTTPException

from protocol.adapters.artifacts import ArtifactStore
from protocol.adapters.http import make_node_app


def make_solver_app(
    address: str,
    store: ArtifactStore,
    get_health: Callable[[], dict[str, Any]],
    get_metrics: Callable[[], bytes],
    served_document: Callable[[int, int], bytes | None],
) -> FastAPI:
    """The solver's app over what its node serves: the store and documents its hooks (`served_store`,
    `served_document`, what an adversary overrides) return. It takes those values, not the node, so this module sits
    below solver/node.py."""
    app = make_node_app("solver", address, store, get_health, get_metrics)

    @app.get("/commitments/{run_id}/{round_index}")
    def get_commitment(run_id: int, round_index: int) -> dict:
        document = served_document(run_id, round_index)
        if document is None:
            raise HTTPException(404, f"no commitment document for run {run_id} round {round_index}")
        return {"document": document.decode(errors="replace")}

    return app
