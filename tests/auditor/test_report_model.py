"""auditor/report_model.py: one model, derived once from the audit, that every output renders (no chain)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from rich.console import Console

import auditor.report
from auditor.html_report import render_html
from auditor.json_report import render_json
from auditor.report import build_json, print_summary, write_outputs
from auditor.report_model import AuditReportModel, build_report_model
from auditor.terminal_report import render_terminal
from tests.auditor.test_report import _report
from tests.history_builder import SOLVER_A, SOLVER_B, VERIFIER_2, planted_run

ADDRESS = re.compile(r"\"(0x[0-9a-fA-F]{40})\"")


def _abstaining_planted_run():
    ev = planted_run(claimed=(SOLVER_B,), dispute="false plant")
    ev.report_abstention(2, SOLVER_B, VERIFIER_2, 1, reporter=SOLVER_B)
    return _report(ev)


def test_every_output_renders_the_same_model_as_the_report_entry_points():
    report = _abstaining_planted_run()
    model = build_report_model(report)
    assert render_json(model) == build_json(report) == build_json(model)
    from_model, from_report = io.StringIO(), io.StringIO()
    render_terminal(model, Console(file=from_model, width=220))
    print_summary(report, Console(file=from_report, width=220))
    assert from_model.getvalue() == from_report.getvalue()
    assert "1 disputed, 1 disproven" in from_model.getvalue()
    assert "planted, disproven by a jury (unpaid)" in render_html(model)


def test_the_model_derives_what_the_outputs_show():
    model = build_report_model(_abstaining_planted_run())
    planted = model.rounds[2]
    assert planted.plants.planted == (SOLVER_A,) and planted.plants.disproven == (SOLVER_A,)
    assert planted.plants.summary.startswith("1 planted, 1 lazy pass(es) caught")
    by_solver = {c.commitment.solver: c for c in planted.commitments}
    assert (by_solver[SOLVER_A].pay, by_solver[SOLVER_A].paid) == ("unpaid", False)
    assert by_solver[SOLVER_A].document.startswith("commitment document missing")
    assert planted.passes + planted.fails == len(planted.attestations) > 0
    assert model.rounds[0].loss == 5.5 and model.rounds[0].loss_after == 4.25
    assert model.label_of(SOLVER_A) == "alice" and model.label_of(None) == ""


def test_labels_cover_every_address_an_output_names():
    report = _abstaining_planted_run()
    model = build_report_model(report)
    named = set(ADDRESS.findall(json.dumps(render_json(model)))) - {report.history.share_token}
    assert named and named <= set(model.labels), sorted(named - set(model.labels))


def test_the_cli_derives_the_model_once_for_every_output(audited, monkeypatch, tmp_path: Path):
    built: list[AuditReportModel] = []

    def counting(report):
        built.append(build_report_model(report))
        return built[-1]

    monkeypatch.setattr(auditor.report, "build_report_model", counting)
    result = audited(_abstaining_planted_run(), "--json", str(tmp_path / "a.json"), "--html", str(tmp_path / "a.html"))
    assert result.exit_code == 0, result.output
    assert len(built) == 1, "printed, JSON and HTML from one model"
    assert json.loads((tmp_path / "a.json").read_text()) == json.loads(json.dumps(render_json(built[0])))
    write_outputs(built[0], tmp_path / "b.json", None)
    assert len(built) == 1, "a model is rendered as it is"
