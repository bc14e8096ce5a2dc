"""The audit's outputs, written: terminal summary, JSON export and self-contained HTML, from one report model.

The model (auditor/report_model.py) is derived once from the audit; each output is a pure function of it
(auditor/terminal_report.py, auditor/json_report.py, auditor/html_report.py). The entry points here take either
the audit's `AuditReport` or a model already built from it, so a caller that prints and writes (`gradledger
audit`) builds the model once and hands it to both.

Files are written atomically (temp file in the same directory, fsync, rename) and only after every output was
rendered: a reader never sees half a report, and a renderer that fails leaves no file behind.
The JSON schema is documented in docs/audit.md (`schema` = "gradledger-audit/1").
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console

from auditor.audit import AuditReport
from auditor.json_report import SCHEMA, render_json
from auditor.report_model import AuditReportModel, build_report_model
from auditor.terminal_report import render_terminal

__all__ = ["SCHEMA", "build_json", "get_report_model", "print_summary", "write_atomic", "write_outputs"]


def get_report_model(report: AuditReport | AuditReportModel) -> AuditReportModel:
    """The report's model: `report` itself when it is one, else built from the audit (once per call)."""
    return report if isinstance(report, AuditReportModel) else build_report_model(report)


def build_json(report: AuditReport | AuditReportModel) -> dict[str, Any]:
    """The JSON export (schema in docs/audit.md)."""
    return render_json(get_report_model(report))


def print_summary(report: AuditReport | AuditReportModel, console: Console, *, compact: bool = False) -> None:
    """Rich tables: checks, rounds, shares, slashes, balance, pending; a one-line verdict last."""
    render_terminal(get_report_model(report), console, compact=compact)


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temp file in the same directory (fsync, rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_outputs(report: AuditReport | AuditReportModel, json_path: Path | None, html_path: Path | None) -> None:
    """Render everything first, then write each file atomically."""
    model = get_report_model(report)
    rendered = []
    if json_path is not None:
        rendered.append((json_path, json.dumps(render_json(model), indent=1, ensure_ascii=False) + "\n"))
    if html_path is not None:
        from auditor.html_report import render_html  # matplotlib only when HTML is asked for

        rendered.append((html_path, render_html(model)))
    for path, text in rendered:
        write_atomic(path, text)
