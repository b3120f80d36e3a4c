"""Signals other apps listen to. tasks_app imports no other app (DESIGN.md), so the
verification pipeline learns of a submission by listening here."""

from django.dispatch import Signal

# Sent after the transaction that submitted a task commits; kwargs: version_id, actor_id.
version_submitted = Signal()
