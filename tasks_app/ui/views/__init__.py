"""Views of the curator UI: thin, each parses input, calls a selector or a service, renders."""

from tasks_app.ui.views.archives import archive_upload
from tasks_app.ui.views.bulk import bulk
from tasks_app.ui.views.review import review_queue, task_transition
from tasks_app.ui.views.tasks import solution_row, task_create, task_detail, task_edit, task_list
from tasks_app.ui.views.versions import version_detail, version_diff, version_list

__all__ = [
    "archive_upload",
    "bulk",
    "review_queue",
    "solution_row",
    "task_create",
    "task_detail",
    "task_edit",
    "task_list",
    "task_transition",
    "version_detail",
    "version_diff",
    "version_list",
]
