"""Fixtures of the auditor's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.audit import AuditReport


@pytest.fixture
def audited(monkeypatch, tmp_path: Path):
    """`gradledger audit` with the chain and the stores replaced by a hand-built report (the CLI is imported here,
    not at collection: the auditor's other tests do not pay for it)."""
    from typer.testing import CliRunner

    import auditor.audit
    import gradledger.context
    import protocol.adapters.chain
    import protocol.adapters.event_index
    from gradledger.cli import app

    chosen: dict[str, AuditReport] = {}
    monkeypatch.setattr(gradledger.context, "resolve_manifest", lambda root, manifest: None)
    monkeypatch.setattr(protocol.adapters.chain, "ChainClient", lambda *args, **kwargs: None)
    monkeypatch.setattr(protocol.adapters.event_index, "EventIndex", lambda *args, **kwargs: None)
    monkeypatch.setattr(auditor.audit, "open_sources", lambda *args, **kwargs: None)
    monkeypatch.setattr(auditor.audit, "audit_run", lambda *args, **kwargs: chosen["report"])

    def run(report: AuditReport, *flags: str):
        chosen["report"] = report
        args = ["audit", "--run", "1", "--home", str(tmp_path), "--rpc-url", "http://127.0.0.1:9", *flags]
        return CliRunner().invoke(app, args)

    return run
