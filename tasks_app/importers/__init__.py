"""Importing tasks from JSONL files (HumanEval, MBPP, the platform's own format) and exporting them.

`tasks_import` reads a whole file and imports all of its tasks or none;
`tasks_export` writes the native format, which `tasks_import` reads back.
"""

from tasks_app.importers.formats import FORMATS
from tasks_app.importers.native import FORMAT_ID as NATIVE_FORMAT_ID
from tasks_app.importers.report import ImportReport
from tasks_app.importers.service import tasks_export, tasks_import

__all__ = ["FORMATS", "NATIVE_FORMAT_ID", "ImportReport", "tasks_export", "tasks_import"]
