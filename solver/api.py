"""A solver's HTTP API: what verifiers, jurors, whistleblowers and auditors fetch from it.

Besides every node's `/health`, `/metrics`, `/identity` and `/artifacts/{hash}` (protocol/adapters/http.py), a
solver serves `GET /commitments/{run}/{round}`: the commitment document it committed to (all leaves and θ_r's
hash), from which a checker learns which checkpoints to fetch. A document it does not hold is a 404; one whose
stored copy is corrupt is a 503 while the node re-creates it (solver/own_artifacts.py), never a 500.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import FastAPI, HTTPException

from protocol.adapters.http import make_node_app

if TYPE_CHECKING:
    from solver.node import SolverNode


def make_solver_app(node: SolverNode) -> FastAPI:
    """The solver's app; its hooks (`served_store`, `served_document`) are what an adversary overrides."""
    app = make_node_app(
        "solver",
        node.address,
        node.served_store(),
        node.get_health,  # the loop runs in the thread that calls run() (RunNode.loop_thread)
        node.get_metrics,
    )

    @app.get("/commitments/{run_id}/{round_index}")
    def get_commitment(run_id: int, round_index: int) -> dict:
        document = node.served_document(run_id, round_index)
        if document is None:
            raise HTTPException(404, f"no commitment document for run {run_id} round {round_index}")
        return {"document": document.decode(errors="replace")}

    return app
