"""Signals other apps listen to. tasks_app imports no other app (DESIGN.md), so the
verification pipeline learns of a submission by listening here."""

from django.dispatch import Signal

# Sent after the transaction that submitted a task commits; kwargs: version_id, actor_id.
version_submitted = Signal()

# Sent when the review queue lays out a page of rows; kwargs: tasks (the page's tasks).
# A receiver returns {task pk: {name: value}} for the rows' extension point
# (_review_extras.html reads row.extras): one batched read a page, never one a row.
review_rows_shown = Signal()
