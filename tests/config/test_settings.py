"""Settings come from the environment; each case runs in a fresh interpreter
because Django reads settings once per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

ROOT = Path(settings.BASE_DIR)
PROBE = (
    "import json, django; from django.conf import settings as s; django.setup();"
    "print(json.dumps({'engine': s.DATABASES['default']['ENGINE'], 'name': str(s.DATABASES['default']['NAME']),"
    "'broker': s.CELERY_BROKER_URL, 'debug': s.DEBUG, 'embedded': s.EMBEDDED}))"
)


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "SECRET_KEY", "CELERY_BROKER_URL"}}
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=120
    )


def test_with_nothing_set_the_platform_runs_embedded(tmp_path):
    out = run(["-c", PROBE], {"PLATFORM_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "config.settings"})
    assert out.returncode == 0, out.stderr
    probe = json.loads(out.stdout)
    assert probe == {
        "engine": "django.db.backends.sqlite3",
        "name": str(tmp_path / "db.sqlite3"),
        "broker": "filesystem://",
        "debug": True,
        "embedded": True,
    }
    assert (tmp_path / "celery" / "queue").is_dir()


def test_production_settings_pass_the_deploy_check(tmp_path):
    env = {
        "SECRET_KEY": "x" * 20 + "production-secret-key-with-plenty-of-entropy-9f8e7d6c5b4a",
        "DATABASE_URL": os.environ.get("DATABASE_URL", "postgres://platform:platform@127.0.0.1:5432/platform"),
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
        "ALLOWED_HOSTS": "tasks.example.org",
        "PLATFORM_VAR_DIR": str(tmp_path),
    }
    out = run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "no issues" in out.stdout
    probe = json.loads(run(["-c", PROBE], {**env, "DJANGO_SETTINGS_MODULE": "config.settings"}).stdout)
    assert probe["engine"] == "django.db.backends.postgresql" and probe["debug"] is False


def test_a_malformed_boolean_setting_is_a_clear_error(tmp_path):
    out = run(
        ["-c", PROBE],
        {"DJANGO_DEBUG": "maybe", "PLATFORM_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "config.settings"},
    )
    assert out.returncode != 0 and "DJANGO_DEBUG='maybe' is not a boolean" in out.stderr
