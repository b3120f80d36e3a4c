"""The deployment files: platform/compose.yaml parses and holds what a multi-host
deployment needs, inlines no secret, and documents every variable it reads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "platform" / "compose.yaml"
ENV_EXAMPLE = ROOT / "platform" / ".env.example"
DOCKERFILE = ROOT / "platform" / "app.Dockerfile"
OPERATIONS = ROOT / "docs" / "operations.md"
VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)")
SECRET_NAME = re.compile(r"SECRET|PASSWORD|TOKEN|_KEY$")
DOCKER_SOCKET = "/var/run/docker.sock"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def _environment(service: dict) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {str(k): str(v) for k, v in env.items()}


def _command(service: dict) -> str:
    command = service.get("command", "")
    return " ".join(command) if isinstance(command, list) else str(command)


def test_it_has_every_service_of_the_deployment(compose):
    services = compose["services"]
    assert {"web", "worker-celery", "worker-sandbox", "beat", "postgres", "redis", "migrate"} <= set(services)
    assert "gunicorn" in _command(services["web"]) and "--worker-class=gthread" in _command(services["web"])
    assert re.search(r"-Q celery\b", _command(services["worker-celery"]))
    assert re.search(r"-Q sandbox\b", _command(services["worker-sandbox"]))
    assert "beat" in _command(services["beat"])
    migrate = _command(services["migrate"])
    assert "migrate" in migrate and "collectstatic" in migrate and services["migrate"]["restart"] == "no"


def test_web_and_workers_start_after_a_successful_migration(compose):
    for name in ("web", "worker-celery", "worker-sandbox", "beat"):
        depends = compose["services"][name]["depends_on"]
        assert depends["migrate"] == {"condition": "service_completed_successfully"}, name
    assert compose["services"]["migrate"]["depends_on"]["postgres"] == {"condition": "service_healthy"}


def test_the_sandbox_workers_are_replicated_docker_workers(compose):
    sandbox = compose["services"]["worker-sandbox"]
    assert sandbox["deploy"]["replicas"] == "${SANDBOX_REPLICAS:-2}"
    env = _environment(sandbox)
    assert env["SANDBOX_BACKEND"] == "docker"
    # The engine bind-mounts the harness from the host: the shared directory has one path on both sides.
    shared = next(v for v in sandbox["volumes"] if v.startswith("${SANDBOX_SHARED_DIR"))
    outside, inside = shared.split("}:", 1)
    assert outside + "}" == inside == env["TMPDIR"]


def test_every_service_plans_and_runs_on_the_same_sandbox_backend(compose):
    """The backend is part of a verification's configuration: a web or planning worker
    on another backend than the sandbox workers would plan runs they cannot make."""
    apps = [name for name, service in compose["services"].items() if "SECRET_KEY" in _environment(service)]
    assert {"web", "worker-celery", "worker-sandbox", "beat"} <= set(apps)
    assert {_environment(compose["services"][name]).get("SANDBOX_BACKEND") for name in apps} == {"docker"}


def test_healthchecks_use_healthz_pg_isready_and_redis_ping(compose):
    services = compose["services"]
    assert "/healthz" in " ".join(services["web"]["healthcheck"]["test"])
    assert "pg_isready" in services["postgres"]["healthcheck"]["test"]
    assert services["redis"]["healthcheck"]["test"][-2:] == ["redis-cli", "ping"]


def test_only_sandbox_workers_mount_the_docker_socket(compose):
    mounting = {name for name, service in compose["services"].items()
                if any(DOCKER_SOCKET in str(volume) for volume in service.get("volumes", []))}  # fmt: skip
    assert mounting == {"worker-sandbox"}


def test_no_secret_is_written_into_the_compose_file(compose):
    for name, service in compose["services"].items():
        for key, value in _environment(service).items():
            if SECRET_NAME.search(key):
                assert re.fullmatch(r"\$\{[A-Z_]+(:[?-][^}]*)?\}", value), f"{name}: {key} is inlined"
            for password in re.findall(r"://[^:/@\s]+:([^@\s]+)@", value):
                assert re.fullmatch(r"\$\{[^}]+\}", password), f"{name}: a password is inlined in {key}"


def test_every_variable_is_documented_and_in_the_example_env():
    variables = set(VARIABLE.findall(COMPOSE.read_text()))
    assert {"SECRET_KEY", "POSTGRES_PASSWORD", "SANDBOX_REPLICAS"} <= variables
    docs = OPERATIONS.read_text()
    example = {line.split("=", 1)[0] for line in ENV_EXAMPLE.read_text().splitlines() if re.match(r"[A-Z_]+=", line)}
    for variable in sorted(variables):
        assert f"`{variable}`" in docs, f"${{{variable}}} is not described in docs/operations.md"
        assert variable in example, f"${{{variable}}} is missing from platform/.env.example"
    # The example holds no secret values: those are filled in on the host.
    for line in ENV_EXAMPLE.read_text().splitlines():
        name, _, value = line.partition("=")
        if SECRET_NAME.search(name) and not line.startswith("#"):
            assert value == "", f"{name} has a value in the example"


def test_the_app_image_is_bookworm_python_with_the_requirements_and_a_non_root_user():
    text = DOCKERFILE.read_text()
    assert re.search(r"^FROM python:3\.11[\w.-]*-bookworm$", text, re.M)
    assert "pip install -r /app/requirements.txt" in text
    users = re.findall(r"^USER (\S+)", text, re.M)
    assert users and users[-1].split(":")[0] not in ("root", "0")
    ignore = (ROOT / "platform" / "app.Dockerfile.dockerignore").read_text().split()
    assert ".venv" in ignore and ".git" in ignore and "var" in ignore
