"""Settings, all from the environment.

With nothing set the platform runs embedded: SQLite and a filesystem Celery
broker under var/, debug on, a development secret key. Setting SECRET_KEY
switches to production defaults (debug off, secure cookies, HSTS); then
DATABASE_URL, CELERY_BROKER_URL and ALLOWED_HOSTS point it at real services.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("PLATFORM_VAR_DIR", str(BASE_DIR / "var")))

_DEV_SECRET = "embedded-development-key-not-for-production-use-0123456789abcdef"  # noqa: S105 - the embedded default, never used once SECRET_KEY is set
SECRET_KEY = env_str("SECRET_KEY", _DEV_SECRET)
# Old keys still accepted for signatures (sessions, CSRF) while rotating SECRET_KEY (docs/operations.md).
SECRET_KEY_FALLBACKS = env_list("SECRET_KEY_FALLBACKS", [])
EMBEDDED = SECRET_KEY == _DEV_SECRET
DEBUG = env_bool("DJANGO_DEBUG", EMBEDDED)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    # Before tasks_app: their templates fill tasks_app's extension points (_version_extras.html,
    # _nav_extras.html). trainer_bridge first: its nav extras include evaluation's after its own.
    "trainer_bridge",
    "evaluation",
    "tasks_app",
]

MIDDLEWARE = [
    # First: it times every request, and answers /livez, /healthz and /metrics ahead of the
    # host check and the HTTPS redirect, which a load balancer calling by address would fail.
    "config.ops.middleware.OpsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "tasks_app.api.errors.ApiErrorMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "tasks_app.ui.context.roles",
                "config.ops.context.sandbox_alert",
            ],
        },
    },
]

_default_db = f"sqlite:///{VAR_DIR / 'db.sqlite3'}"
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", _default_db),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # A database that does not answer fails a request (and /healthz) in seconds, not at
    # the TCP timeout minutes later.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault("connect_timeout", env_int("DATABASE_CONNECT_TIMEOUT", 5))
    # The few statements of the hottest paths (tasks_app.raw_rows.hot_cursor: every API
    # call's token, every reward batch) are kept prepared on their connection after five
    # runs: planning some of them (the token's lookup) cost the server more than running
    # them. Every other query binds client-side as Django's default, never prepared.
    # Turn it off behind a pooler that cannot keep prepared statements (PgBouncer
    # before 1.21, transaction mode).
    _prepared = env_bool("DATABASE_PREPARED_STATEMENTS", True)
    DATABASES["default"]["OPTIONS"]["prepare_threshold"] = 5 if _prepared else None
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    # Several processes (web, worker) share the file: wait rather than fail on a lock.
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 20
    # WAL: readers do not block the writer, and a commit need not sync the whole file
    # (a verification writes a row per execution). IMMEDIATE: a writing transaction
    # takes the lock at its start, so two processes wait instead of deadlocking.
    DATABASES["default"]["OPTIONS"]["init_command"] = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
    DATABASES["default"]["OPTIONS"]["transaction_mode"] = "IMMEDIATE"
    DATABASES["default"]["CONN_MAX_AGE"] = 0

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "ui:task-list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(VAR_DIR / "static")))
if DEBUG:
    # WhiteNoise serves from the finders in debug but warns when the root is missing.
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

# --- Input limits (bytes). Anything larger is refused with a 4xx naming the field.
TASKS_MAX_STATEMENT_BYTES = env_int("TASKS_MAX_STATEMENT_BYTES", 64 * 1024)
TASKS_MAX_CODE_BYTES = env_int("TASKS_MAX_CODE_BYTES", 256 * 1024)
TASKS_MAX_IMPORT_FILE_BYTES = env_int("TASKS_MAX_IMPORT_FILE_BYTES", 50 * 1024 * 1024)
# Repository tasks (docs/repository-tasks.md): the tree a version holds, and the archive
# it may be uploaded as (the tree plus hidden tests, patches and task.json).
TASKS_REPO_MAX_BYTES = env_int("TASKS_REPO_MAX_BYTES", 20 * 1024 * 1024)
TASKS_REPO_MAX_FILE_BYTES = env_int("TASKS_REPO_MAX_FILE_BYTES", 5 * 1024 * 1024)
TASKS_REPO_MAX_FILES = env_int("TASKS_REPO_MAX_FILES", 5000)
TASKS_REPO_MAX_ARCHIVE_BYTES = env_int("TASKS_REPO_MAX_ARCHIVE_BYTES", 32 * 1024 * 1024)
# A request body may carry a whole import file.
DATA_UPLOAD_MAX_MEMORY_SIZE = TASKS_MAX_IMPORT_FILE_BYTES + 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
DATA_UPLOAD_MAX_NUMBER_FIELDS = 10_000

# --- REST API
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "tasks_app.api.auth.ScopedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["tasks_app.api.permissions.HasScope"],
    "DEFAULT_PAGINATION_CLASS": "tasks_app.api.pagination.PagePagination",
    "PAGE_SIZE": 50,
    # Lists filter through tasks_app.selectors (TaskFilters), not DRF filter backends.
    "DEFAULT_FILTER_BACKENDS": [],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "tasks_app.api.errors.api_exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"]
    + (["rest_framework.renderers.BrowsableAPIRenderer"] if DEBUG else []),
    "DEFAULT_PARSER_CLASSES": [
        "tasks_app.api.parsers.SafeJSONParser",
        "rest_framework.parsers.MultiPartParser",
        "rest_framework.parsers.FormParser",
    ],
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "DEFAULT_THROTTLE_CLASSES": ["tasks_app.api.throttles.PlatformThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env_str("THROTTLE_ANON", "120/min"),
        "user": env_str("THROTTLE_USER", "3000/min"),
        "rewards": env_str("THROTTLE_REWARDS", "1200/min"),
        "sessions": env_str(
            "THROTTLE_SESSIONS", "60000/min"
        ),  # every step of every episode is a call  # batches, each up to REWARD MAX_BATCH completions
        "jobs": env_str("THROTTLE_JOBS", "1200/min"),
        "export": env_str("THROTTLE_EXPORT", "120/min"),
    },
    # `?format=` names an import's source format; responses are negotiated by Accept.
    "URL_FORMAT_OVERRIDE": None,
}
# Throttle counts live in the cache: per process by default; CACHE_URL=redis://... shares
# them between the web server's processes and hosts.
CACHE_URL = env_str("CACHE_URL", "")
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}
    if CACHE_URL.startswith(("redis://", "rediss://"))
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Task curation and reward-verification platform API",
    "DESCRIPTION": (
        "Author, version, review and import programming tasks. Every error has the shape "
        '{"error": {"code": ..., "message": ..., "details": ...}}.'
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "ENUM_NAME_OVERRIDES": {"TaskStateEnum": "tasks_app.models.State"},
}

# --- Celery: a filesystem broker under var/ unless CELERY_BROKER_URL is set.
_celery_dir = VAR_DIR / "celery"
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
if CELERY_BROKER_URL.startswith("filesystem://"):
    for sub in ("queue", "processed", "control"):
        (_celery_dir / sub).mkdir(parents=True, exist_ok=True)
    # kombu's, with messages renamed into place whole (config/kombu_internals.py).
    CELERY_BROKER_TRANSPORT = "config.kombu_internals:FilesystemTransport"
    if env_int("CELERY_FILESYSTEM_POLL_MS", 10) < 1:
        raise ImproperlyConfigured("CELERY_FILESYSTEM_POLL_MS must be at least 1 (0 would spin a core)")
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_celery_dir / "queue"),
        "data_folder_out": str(_celery_dir / "queue"),
        "processed_folder": str(_celery_dir / "processed"),
        # Kombu's default is ./control, in whatever directory a worker starts.
        "control_folder": str(_celery_dir / "control"),
        "store_processed": False,
        # How long a worker sleeps when it finds no message, or when its slots are full
        # (it looks again only then, even once a slot is free). Kombu's default of 1 s
        # held a worker of two slots to about two messages a second, idle most of the
        # time; an idle look costs a listing of an empty folder.
        "polling_interval": env_int("CELERY_FILESYSTEM_POLL_MS", 10) / 1000,
    }
else:
    if CELERY_BROKER_URL.startswith("redis://"):
        # kombu's, with one client a pool (config/kombu_internals.py).
        CELERY_BROKER_TRANSPORT = "config.kombu_internals:RedisTransport"
    # Above the longest sandbox run, so a slow task is not redelivered mid-run.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600),
        # How often a worker looks for messages a dead worker held past the visibility
        # timeout: kombu scans every interval x throttle seconds (10 x 10 by default).
        "unacked_restore_interval": env_int("CELERY_UNACKED_RESTORE_INTERVAL", 10),
        "unacked_restore_throttle": env_int("CELERY_UNACKED_RESTORE_THROTTLE", 10),
    }
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", "") or None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 1800)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 1500)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Celery closes Django's database connections after every task unless told to reuse
# them: a new PostgreSQL session per task (a fork, an authentication, cold catalog
# caches: ~15 ms to plan the first statement). Reuse them for this many tasks;
# CONN_MAX_AGE and the health checks still retire stale ones.
CELERY_DB_REUSE_MAX = env_int("CELERY_DB_REUSE_MAX", 1000)

# --- Verification pipeline (evaluation/): what runs per version, and when a figure
# becomes a flag. An `error` flag sends the version to review; see docs/verification.md.
VERIFICATION = {
    "ON_SUBMIT": env_bool("VERIFY_ON_SUBMIT", True),  # submitting enqueues the verification
    "REPEATS": env_int("VERIFY_REPEATS", 5),  # runs of each reference and adversarial solution
    "MUTANTS": env_int("VERIFY_MUTANTS", 30),  # mutants of the reference, at most
    "MUTATION_SEED": 0,
    "PROBES": env_bool("VERIFY_PROBES", True),  # run the reward-hacking probes
    # Inputs generated from the tests' arguments per task (0: none), in one sandbox run that
    # also judges each mutant on them; hidden tests offered to an all-visible suite
    # (docs/generated-tests.md).
    "INPUTS": env_int("VERIFY_INPUTS", 200),
    "INPUT_SEED": 0,
    "PROPOSALS": env_int("VERIFY_PROPOSALS", 10),
    "THRESHOLDS": {"WEAK_TESTS_BELOW": 0.8, "SLOW_HEADROOM_BELOW": 2.0, "MIN_TESTS": 3},
    # An execution "running" this long past its time limit lost its worker: another may claim it.
    "STALE_AFTER_S": env_int("VERIFY_STALE_AFTER_S", 120),
    # A running verification with no execution started or finished this long, while the
    # sandbox queue is empty, lost its messages (a broker restarted without its data):
    # the reaper sends its remaining executions again.
    "STALL_AFTER_S": env_int("VERIFY_STALL_AFTER_S", 300),
    # Executions a sandbox-queue message runs side by side (fewer for tasks with long
    # time limits: evaluation/verification/execution_chunks.py). The filesystem broker pays
    # a folder listing and a poll a message, so there a message carries several; with
    # Redis one each, so a reward chunk waits behind one run, not a chunk of them.
    "CHUNK": env_int("VERIFY_CHUNK", 16 if CELERY_BROKER_URL.startswith("filesystem://") else 1),
}
if VERIFICATION["CHUNK"] < 1:
    raise ImproperlyConfigured(f"VERIFY_CHUNK={VERIFICATION['CHUNK']} is not a chunk size: use 1 or more executions")
# Difficulty from solver rollouts (evaluation/difficulty/, docs/difficulty.md).
DIFFICULTY = {
    "REGULARISATION": 1.0,  # L2 strength of the item-response fit (1 / scikit-learn's C)
    "BOOTSTRAP": env_int("DIFFICULTY_BOOTSTRAP", 100),  # refits for the intervals
    "SEED": 0,
    # Bands (TOO_EASY, TOO_HARD) are read against this solver's ability; empty: the median solver's.
    "TARGET_SOLVER": env_str("DIFFICULTY_TARGET_SOLVER", ""),
}
# Reward chunks share the `sandbox` queue with verification's runs but go ahead of
# them: a training step waits on its rewards, a verification backlog does not wait on
# anyone. With Redis, priority 0 is consumed first (kombu's priority steps 0/3/6/9);
# every other task goes at CELERY_TASK_DEFAULT_PRIORITY. The filesystem broker of
# the embedded defaults has no priorities: there the queue is first come, first served.
CELERY_TASK_DEFAULT_PRIORITY = env_int("CELERY_TASK_DEFAULT_PRIORITY", 6)
REWARD_PRIORITY = 0
# ... so on the filesystem broker reward chunks go to a queue of their own, which the
# same worker consumes (`make run`: -Q celery,sandbox,rewards): trainer_bridge/tasks.py.
CELERY_TASK_ROUTES = {
    "evaluation.run_execution": {"queue": "sandbox"},
    "evaluation.run_executions": {"queue": "sandbox"},
    "evaluation.run_attempt": {"queue": "sandbox"},
    "trainer_bridge.run_rewards": {"queue": "sandbox"},
}
CELERY_BEAT_SCHEDULE = {
    "reap-stuck-verifications": {
        "task": "evaluation.reap_verifications",
        "schedule": float(env_int("VERIFY_REAP_EVERY_S", 60)),  # cheap: one query, one queue count
    },
    "prune-reward-batches": {"task": "trainer_bridge.prune_rewards", "schedule": 3600.0},
    "reap-reward-items": {"task": "trainer_bridge.reap_rewards", "schedule": 60.0},
    "reap-sessions": {"task": "evaluation.reap_sessions", "schedule": 60.0},
}

# --- Reward API (trainer_bridge/services/rewards.py; docs/rewards.md).
REWARD = {
    "MAX_BATCH": env_int("REWARD_MAX_BATCH", 256),  # completions a request
    "MAX_COMPLETION_BYTES": env_int("REWARD_MAX_COMPLETION_BYTES", 65536),
    "DEADLINE_S": env_int("REWARD_DEADLINE_S", 120),  # how long a request waits for its verdicts by default
    "MAX_DEADLINE_S": env_int("REWARD_MAX_DEADLINE_S", 600),
    # Completions waiting or running across all workers before new batches get 429.
    "MAX_IN_FLIGHT": env_int("REWARD_MAX_IN_FLIGHT", 2048),
    # Completions a queue message (a worker runs them side by side): a batch of 16 is one message.
    "CHUNK": env_int("REWARD_CHUNK", 16),
    "RETENTION_H": env_int("REWARD_RETENTION_H", 72),  # finished batches are kept this long (idempotency)
    # Runs more of a completion whose run was a sandbox_error, before it is answered with no reward.
    "SANDBOX_RETRIES": env_int("REWARD_SANDBOX_RETRIES", 2),
}

# --- Agent sessions (evaluation/sandbox/sessions; docs/sessions.md).
SESSIONS = {
    # The session host agent's Unix socket; empty: this process runs the sessions itself
    # (one-process deployments and `make run`; its sandboxes live as long as it does).
    "AGENT_SOCKET": env_str("SESSION_AGENT_SOCKET", ""),
    "BACKEND": env_str("SESSION_BACKEND", "bwrap"),  # or docker: a container per session
    "SPARES": env_int("SESSION_SPARES", 2),  # warm sandboxes kept per environment in use (0: none)
    # Sandbox uids read the trees through it: a directory outside any private home.
    "ENVIRONMENTS_DIR": env_str("SESSION_ENVIRONMENTS_DIR", "/var/tmp/taskplatform-session-environments"),  # noqa: S108
    "ENVIRONMENTS_MAX_BYTES": env_int("SESSION_ENVIRONMENTS_MAX_BYTES", 4 << 30),
    "MAX_SESSIONS": env_int("SESSION_MAX_SESSIONS", 64),  # live sessions on the embedded host
    "MAX_SESSIONS_PER_USER": env_int("SESSION_MAX_SESSIONS_PER_USER", 256),  # live ones, across hosts
    "VERDICT_TIMEOUT_S": env_int("SESSION_VERDICT_TIMEOUT_S", 300),
    # Who may open a session on which version, beyond roles and scopes: a job's token
    # only on its snapshot's tasks (the app that knows jobs says so).
    "VERSION_GUARD": "trainer_bridge.services.jobs.session_version_allowed",
}

# --- Production hardening; each can be relaxed from the environment behind a proxy.
if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
    CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_CONTENT_TYPE_NOSNIFF = True
    X_FRAME_OPTIONS = "DENY"
    # Load balancers and Prometheus call these over plain HTTP inside the network.
    SECURE_REDIRECT_EXEMPT = [r"^livez/?$", r"^healthz/?$", r"^metrics/?$"]
SILENCED_SYSTEM_CHECKS = env_list("SILENCED_SYSTEM_CHECKS", [])

# --- Operations (config/ops/, docs/operations.md).
# /metrics: with a token, only `Authorization: Bearer <token>`; without, direct callers
# from loopback or private addresses only.
METRICS_TOKEN = env_str("METRICS_TOKEN", "")
# Checks that turn /healthz into a 503 when they fail; the others are reported only.
# Unset (None): the database and the broker, and the sandbox when the web checks its own
# backend (the filesystem broker of the embedded defaults). With Redis the sandbox check
# reads the workers' reports and is not required: a web host whose sandbox workers are
# away still serves curation, and a load balancer taking it out would not bring them
# back (config/ops/health.py).
HEALTH_REQUIRED_CHECKS = env_list("HEALTH_REQUIRED_CHECKS", []) if "HEALTH_REQUIRED_CHECKS" in os.environ else None
# json: one JSON object a line (config/ops/logs.py), for log shippers; plain: for people.
LOG_FORMAT = env_str("LOG_FORMAT", "plain" if EMBEDDED else "json").strip().lower()
if LOG_FORMAT not in ("json", "plain"):
    raise ImproperlyConfigured(f"LOG_FORMAT={LOG_FORMAT!r}: use json or plain")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "json": {"()": "config.ops.logs.JsonFormatter"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
