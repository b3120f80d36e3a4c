"""The statements written out for speed (tasks_app/raw_rows.py,
trainer_bridge/services/reward_rows.py) on the embedded SQLite database of
`make run`: the suite runs on PostgreSQL, so this runs them in a fresh interpreter
on a throwaway SQLite file, through the public paths (a token's authentication, a
job's reward batch, a retried batch) and compares what they load with what the ORM
loads; and the reward worker's statements, which the suite runs on PostgreSQL only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

ROOT = Path(settings.BASE_DIR)

SCRIPT = r"""
import json, uuid
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone
from datetime import timedelta

from tasks_app.raw_rows import token_with_user
from tasks_app.models import ApiToken, State, Task
from tasks_app.roles import ensure_role_groups
from tasks_app.services import api_token_create
from tasks_app.services.tokens import hash_secret
from tests.factories import make_task
from trainer_bridge.models import RewardBatch
from trainer_bridge.services import rewards
from trainer_bridge.services.jobs import job_of_token, job_register
from trainer_bridge.services.pools import pool_create, snapshot_create

ensure_role_groups()
user = get_user_model().objects.create_user("curie", password="pw-not-used")
user.groups.add(Group.objects.get(name="curator"), Group.objects.create(name="book-club"))
issued = api_token_create(user=user, name="t", scopes=["read", "reward"],
                          expires_at=timezone.now() + timedelta(days=1))
found = token_with_user(hash_secret(issued.secret))
stored = ApiToken.objects.select_related("user").get(pk=issued.token.pk)
same_token = all(getattr(found, f.attname) == getattr(stored, f.attname) for f in ApiToken._meta.concrete_fields)
same_user = all(getattr(found.user, f.attname) == getattr(stored.user, f.attname)
                for f in get_user_model()._meta.concrete_fields)

task = make_task(owner=user)
version = task.latest_version
Task.objects.filter(pk=task.pk).update(state=State.APPROVED, approved_version=version)
snapshot, _ = snapshot_create(pool=pool_create(slug="p", title="P", criteria={}))
job = job_register(user=user, name="j", snapshot_hash=snapshot.hash)
job_token = token_with_user(hash_secret(job.secret))
bound = job_of_token(job_token)

body = {"completions": [{"version_hash": version.content_hash, "completion": "def add(a, b):\n    return a + b\n"}],
        "idempotency_key": "step-1"}
batch, created = rewards.rewards_submit(user=user, request=rewards.parse_batch(body, job=bound), job=bound)
again, created_again = rewards.rewards_submit(user=user, request=rewards.parse_batch(body, job=bound), job=bound)
print(json.dumps({
    "same_token": same_token, "same_user": same_user, "roles": sorted(found.user._platform_roles),
    "expires_is_aware": found.expires_at.tzinfo is not None, "active_is_bool": type(found.user.is_active) is bool,
    "job": [bound.pk == job.job.pk, bound.snapshot.hash == snapshot.hash, bound.snapshot.pool.slug],
    "batch": [created, created_again, again.pk == batch.pk, isinstance(again.pk, uuid.UUID),
              again.created_at == RewardBatch.objects.get().created_at],
    "in_flight": rewards.in_flight(),
}))
"""


# The worker's side (trainer_bridge/services/reward_rows.py): claim, verdicts written
# one at a time, a batch finished once its last item is, and the rows of its answer.
# Verdicts are set by hand: what is under test is the statements, not the sandboxes.
WORKER_SCRIPT = r"""
import json
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)

from datetime import timedelta
from django.contrib.auth import get_user_model
from django.utils import timezone

from tests.factories import make_task
from trainer_bridge.models import RewardBatch, RewardItem
from trainer_bridge.services import reward_rows, rewards
from trainer_bridge.services.reward_runs import Claimed

user = get_user_model().objects.create_superuser("curie", password="pw-not-used")
version = make_task(owner=user).latest_version
code = "def add(a, b):\n    return a + b\n"
body = {"completions": [{"version_hash": version.content_hash, "completion": code}] * 2, "seed": 7,
        "reward": "fraction"}
batch, _ = rewards.rewards_submit(user=user, request=rewards.parse_batch(body))
ids = batch.created_item_ids
now = timezone.now()
won = reward_rows.reward_items_claim(ids, worker="w1", now=now, stale=now - timedelta(minutes=20))
taken_again = reward_rows.reward_items_claim(ids, worker="w2", now=now, stale=now - timedelta(minutes=20))
claimed = [Claimed(pk, index, RewardBatch._meta.pk.to_python(batch_id), version, code, seed, mode)
           for pk, index, batch_id, version_id, code, seed, mode in sorted(won, key=lambda r: r[1])]
for n, item in enumerate(claimed):
    item.status, item.reward, item.tests_passed, item.tests_total = "failed", 0.5, 1, 2
    item.result = {"tests": [{"name": "t", "outcome": "failed", "message": "é"}], "n": n}
    item.wall_s, item.cpu_s, item.finished_at = 0.25, 0.125, timezone.now()
reward_rows.reward_verdicts_write(claimed[:1])
reward_rows.reward_batches_finish({batch.pk})
half_done = RewardBatch.objects.get().finished_at
reward_rows.reward_verdicts_write(claimed[1:])
reward_rows.reward_batches_finish({batch.pk})
rows = reward_rows.reward_body_rows(batch)
stored = list(RewardItem.objects.order_by("index"))
print(json.dumps({
    "won": [[index, batch_id == batch.pk.hex or batch_id == str(batch.pk), seed, mode]
            for _, index, batch_id, _, _, seed, mode in sorted(won, key=lambda r: r[1])],
    "taken_again": len(taken_again),
    "stored": [[i.status, i.reward, i.tests_passed, i.tests_total, i.result, i.worker, i.tries, i.wall_s]
               for i in stored],
    "finished_at_claimed": [i.finished_at == c.finished_at for i, c in zip(stored, claimed)],
    "batch": [half_done is None, RewardBatch.objects.get().finished_at is not None],
    "rows": [[r["index"], r["status"], r["result"], r["version__content_hash"] == version.content_hash,
              r["finished_at"] == c.finished_at] for r, c in zip(rows, claimed)],
    "in_flight": rewards.in_flight(),
}))
"""


def _facts_on_sqlite(script: str, tmp_path: Path) -> dict:
    """Run `script` in a fresh interpreter on a throwaway SQLite database; its last line of output, decoded."""
    keep = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY"}}
    env = {**keep, "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "CELERY_BROKER_URL": "memory://",
           "PLATFORM_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "config.settings"}  # fmt: skip
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_written_out_statements_load_on_sqlite_what_the_orm_loads(tmp_path):
    facts = _facts_on_sqlite(SCRIPT, tmp_path)
    assert facts == {
        "same_token": True,
        "same_user": True,
        "roles": ["curator"],
        "expires_is_aware": True,
        "active_is_bool": True,
        "job": [True, True, "p"],
        "batch": [True, False, True, True, True],
        "in_flight": 1,
    }


def test_the_reward_workers_statements_run_on_sqlite(tmp_path):
    facts = _facts_on_sqlite(WORKER_SCRIPT, tmp_path)
    result = {"tests": [{"name": "t", "outcome": "failed", "message": "é"}]}
    assert facts == {
        "won": [[0, True, 7, "fraction"], [1, True, 7, "fraction"]],
        "taken_again": 0,
        "stored": [["failed", 0.5, 1, 2, {**result, "n": n}, "w1", 1, 0.25] for n in range(2)],
        "finished_at_claimed": [True, True],
        "batch": [True, True],
        "rows": [[n, "failed", {**result, "n": n}, True, True] for n in range(2)],
        "in_flight": 0,
    }
