"""Audits of a whole data set, and rows of verification results for export.

`manage.py humaneval_audit` imports HumanEval through the importer service, submits
the drafts, verifies every task's latest version in-process (plan all, run every
execution on a thread pool, finish all: what `manage.py verify --sync` does), and
writes a Markdown report. Every figure in the report is read back from the database
by `audit_figures`, never carried over from the run, so the report says what the
database holds at the time of writing.

- `dataset_run`: the data set imported, its drafts submitted, the versions to verify;
- `report_figures`: every figure of the report, read from the database;
- `report`: the Markdown report, rendered from the `report.md` template;
- `rows`: finished verifications flattened into the rows `manage.py verification_report`
  writes as JSON or CSV.
"""

from evaluation.verification.audit.dataset_run import (
    AuditError,
    auditor_user,
    dataset_bytes,
    dataset_import,
    default_dataset,
    drafts_submit,
    latest_versions,
)
from evaluation.verification.audit.report import audit_markdown
from evaluation.verification.audit.report_figures import audit_figures
from evaluation.verification.audit.rows import LIST_FIELDS, ROW_FIELDS, verification_row, verification_rows

__all__ = [
    "LIST_FIELDS",
    "ROW_FIELDS",
    "AuditError",
    "audit_figures",
    "audit_markdown",
    "auditor_user",
    "dataset_bytes",
    "dataset_import",
    "default_dataset",
    "drafts_submit",
    "latest_versions",
    "verification_row",
    "verification_rows",
]
