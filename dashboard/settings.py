"""Settings, all from the environment. SQLite by default, PostgreSQL from DATABASE_URL."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("VAR_DIR", BASE_DIR / "var"))


def env(name: str, default: str = "") -> str:
    """A setting from the environment, or from the file named by NAME_FILE (docker secrets)."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        return Path(path).read_text().strip()
    return os.environ.get(name) or default  # set but empty counts as unset


def env_bool(name: str, default: bool) -> bool:
    value = env(name, "")
    if not value:
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


def env_int(name: str, default: int) -> int:
    value = env(name, "")
    return int(value) if value else default


def env_float(name: str, default: float) -> float:
    value = env(name, "")
    return float(value) if value else default


DEBUG = env_bool("DEBUG", True)
# Development only: with DEBUG off the web, workers and beat refuse to start on this key, or
# without a FIELD_ENCRYPTION_KEY of their own (dashboard/domain/checks.py). `make demo` generates both
# into var/.
DEV_SECRET_KEY = "dev-only-insecure-secret-key-change-me"
SECRET_KEY = env("SECRET_KEY", DEV_SECRET_KEY)
ALLOWED_HOSTS = [
    h.strip()
    for h in env("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",")
    if h.strip()
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_celery_beat",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "dashboard.domain",  # app label "dashboard": models, migrations, the domain's commands
    "dashboard.web",  # template tags, static files, the admin
    "workers",  # the commands that run a battery in this process
]

MIDDLEWARE = [
    "dashboard.web.health.OpsMiddleware",  # /healthz, /readyz, /metrics: before host checks and redirects
    "django.middleware.security.SecurityMiddleware",
    # Content-Security-Policy (no inline script), Permissions-Policy: dashboard/web/headers.py.
    "dashboard.web.headers.SecurityHeadersMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Bodies judged by Content-Length and the sender before CSRF or a view reads them.
    "dashboard.web.body_limits.BodyGuardMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "dashboard.urls"
WSGI_APPLICATION = "dashboard.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "dashboard.web.context_processors.roles",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env("DATABASE_URL", f"sqlite:///{VAR_DIR / 'dashboard.sqlite3'}"),
        conn_max_age=env_int("DB_CONN_MAX_AGE", 0),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL and a busy timeout let the web, a worker and beat share one SQLite file.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # A file (not :memory:) so worker subprocesses in the end-to-end tests share it; one per
    # test process so parallel test runs on one machine do not share it.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-dashboard-{os.getpid()}.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
MEDIA_ROOT = Path(env("MEDIA_ROOT", str(VAR_DIR / "media")))
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

# --- Redis, Celery ---------------------------------------------------------------------------
REDIS_URL = env("REDIS_URL", "redis://127.0.0.1:6379/0")
# "embedded" selects the broker that needs no server (kombu's filesystem transport under
# VAR_DIR) and database leases instead of Redis locks; see workers/lease.py.
CELERY_BROKER_URL = env("CELERY_BROKER_URL", REDIS_URL)
EMBEDDED_BROKER = CELERY_BROKER_URL.startswith("filesystem://")
if EMBEDDED_BROKER:
    _broker_dir = VAR_DIR / "broker"
    for _sub in ("out", "processed", "control"):
        (_broker_dir / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "out"),
        "data_folder_out": str(_broker_dir / "out"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
else:
    # Longer than the longest run, so an unacked task is not redelivered while it still runs.
    # Socket timeouts: a frozen Redis must fail a publish in seconds (the run then stays queued
    # for dispatch_pending), not hang the web request that asked for the run.
    # health_check_interval: connections are pinged and replaced when Redis stops answering
    # mid-reply, so a worker whose ack timed out during a hang consumes again afterwards.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": 4 * 3600,
        "socket_timeout": 5,
        "socket_connect_timeout": 3,
        "health_check_interval": 5,
        "socket_keepalive": True,
    }
CELERY_BROKER_CONNECTION_TIMEOUT = 3
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = False
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_RESULT_EXPIRES = None  # no result backend, so no celery.backend_cleanup on beat
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = "UTC"
CELERY_TASK_DEFAULT_QUEUE = env("CELERY_QUEUE", "celery")
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
# The task layer's side of dashboard/domain/tasks_port.py (the domain sends tasks by name through it).
TASKS_SEND = "dashboard.celery.send"
# Every task ends: the soft limit raises inside it (a run then ends in error and frees its lease),
# the hard one kills the pool process. Tasks that take longer set their own (execute_run,
# sweep_cluster: workers/tasks.py); these are the defaults for all the others.
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 120)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 180)
# The longest a battery run may take on a worker (a real cluster's connectivity battery: minutes).
RUN_TIME_LIMIT_SECONDS = env_int("RUN_TIME_LIMIT_SECONDS", 2 * 3600)
# The upstream battery (workers/upstream.py): upstream's e2e.test of each Kubernetes minor, at
# E2E_DIR/v1.<minor>/e2e.test (`make e2e-binaries` builds them); a minor without one is refused.
E2E_DIR = Path(env("E2E_DIR", str(VAR_DIR / "e2e")))
# The longest one e2e.test may run before its process group is killed (the run ends in error).
E2E_TIME_LIMIT_SECONDS = env_int("E2E_TIME_LIMIT_SECONDS", 3600)
# A cluster's API server is someone else's: every answer is bounded (kernel/bounded.py).
CLUSTER_RESPONSE_MAX_BYTES = env_int("CLUSTER_RESPONSE_MAX_BYTES", 50 * 1024 * 1024)
CLUSTER_CALL_DEADLINE_SECONDS = env_float("CLUSTER_CALL_DEADLINE_SECONDS", 60.0)
# Requested (manual or API) runs running at once, across all workers; keep it below the
# workers' total concurrency so that periodic jobs always find a free worker (0: no limit).
RUNS_REQUESTED_MAX_RUNNING = env_int("RUNS_REQUESTED_MAX_RUNNING", 3)

# --- The product -----------------------------------------------------------------------------
FIELD_ENCRYPTION_KEY = env("FIELD_ENCRYPTION_KEY", "")
# The audit chain's HMAC key (dashboard/domain/audit.py): kept out of the database, so that a copy of
# the database cannot recompute the chain after an edit. Empty: derived from SECRET_KEY (set it
# on its own so SECRET_KEY can be rotated without re-keying the chain).
AUDIT_CHAIN_KEY = env("AUDIT_CHAIN_KEY", "")
# The chain's head goes to the log and to every enabled webhook this often (workers.tasks
# audit_checkpoint), and is appended to this file, which verify_audit_chain checks against.
AUDIT_CHECKPOINT_SECONDS = env_int("AUDIT_CHECKPOINT_SECONDS", 3600)
AUDIT_CHECKPOINT_FILE = env("AUDIT_CHECKPOINT_FILE", str(VAR_DIR / "audit-checkpoints.jsonl"))
READINESS_FRESH_DAYS = env_int("READINESS_FRESH_DAYS", 90)
READINESS_PERIODIC_RUNS = env_int("READINESS_PERIODIC_RUNS", 3)
# Evidence of an older Kubernetes minor never counts; empty: three minors below the newest
# release the catalog knows (dashboard.domain.catalog.DEFAULT_MIN_MINOR).
READINESS_MIN_KUBERNETES = env("READINESS_MIN_KUBERNETES", "")
# The post-GA watch follows this many of the newest minors the catalog knows
# (dashboard.domain.readiness.watch.supported_minors).
READINESS_WATCH_MINORS = env_int("READINESS_WATCH_MINORS", 3)
# The public page, API and badges serve the stored evaluation (dashboard.domain.models.PublishedReadiness)
# until evidence changes or it is this old (0: evaluate every request); beat recomputes it every
# minute.
READINESS_MAX_AGE_SECONDS = env_int("READINESS_MAX_AGE_SECONDS", 120)
# How long a web process trusts its last look at the stored evaluation's version before it asks
# the database again (0: every request). A change made in this process is seen at once; one made
# elsewhere (a worker's run, another web process) within this many seconds.
READINESS_RECHECK_SECONDS = env_float("READINESS_RECHECK_SECONDS", 1.0)
# After a commit that changed evidence, ask a worker to recompute it (at most every 10 s).
READINESS_REFRESH_ON_COMMIT = env_bool("READINESS_REFRESH_ON_COMMIT", True)
SUBMISSION_MAX_BYTES = env_int("SUBMISSION_MAX_BYTES", 50 * 1024 * 1024)
# Per-vendor quotas (0: none): submissions waiting for review (429 past it), and bytes uploaded
# in the last 24 hours (413 past it). A refused upload stores nothing.
SUBMISSION_MAX_PENDING = env_int("SUBMISSION_MAX_PENDING", 20)
SUBMISSION_MAX_BYTES_PER_DAY = env_int("SUBMISSION_MAX_BYTES_PER_DAY", 250 * 1024 * 1024)
# Any other request body (forms, kubeconfigs, JSON): larger is refused from Content-Length, unread.
REQUEST_MAX_BYTES = env_int("REQUEST_MAX_BYTES", 2 * 1024 * 1024)
AGENT_RUN_MAX_BYTES = env_int(
    "AGENT_RUN_MAX_BYTES", 2 * 1024 * 1024
)  # POST agent-runs/ (413 above)
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
RUN_HEARTBEAT_SECONDS = env_int("RUN_HEARTBEAT_SECONDS", 10)
RUN_HEARTBEAT_TIMEOUT = env_int("RUN_HEARTBEAT_TIMEOUT", 60)
RUN_LEASE_SECONDS = env_int("RUN_LEASE_SECONDS", 60)
# Requested (not periodic) runs an owner may have waiting at once (dashboard/domain/runs.py).
RUNS_QUEUED_PER_OWNER = env_int("RUNS_QUEUED_PER_OWNER", 5)
# Keys this deployment writes to Redis directly (run leases) start with it: Redis may be shared.
REDIS_PREFIX = env("REDIS_PREFIX", "sctp-dashboard")
AGNHOST_IMAGE = env("AGNHOST_IMAGE", "registry.k8s.io/e2e-test-images/agnhost:2.63.0")
# Comma-separated CIDRs cluster servers may use although they are loopback, private, link-local…
# (kernel/netguard.py). Empty: only public addresses. `make demo` and the tests allow 127.0.0.0/8.
CLUSTER_ALLOWED_NETWORKS = env("CLUSTER_ALLOWED_NETWORKS", "")
try:
    import ipaddress as _ipaddress

    [
        _ipaddress.ip_network(_n.strip(), strict=False)
        for _n in CLUSTER_ALLOWED_NETWORKS.split(",")
        if _n.strip()
    ]
except ValueError as _exc:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(
        f"CLUSTER_ALLOWED_NETWORKS must be comma-separated CIDRs: {_exc}"
    ) from None

LOGGING: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "filters": {"refusals": {"()": "dashboard.logfilters.RefusalWithoutTraceback"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", "INFO")},
    "loggers": {
        "kubernetes": {"level": "WARNING"},
        "urllib3": {"level": "WARNING"},
        "django.request": {"filters": ["refusals"]},
    },
}
LOG_FORMAT = env("LOG_FORMAT", "text")  # json: one JSON object a line (dashboard/logjson.py)
if LOG_FORMAT == "json":
    LOGGING["formatters"] = {"json": {"()": "dashboard.logjson.JsonFormatter"}}
    LOGGING["handlers"]["console"]["formatter"] = "json"
    CELERY_WORKER_HIJACK_ROOT_LOGGER = False  # keep this format in workers and beat too

# --- Production ------------------------------------------------------------------------------
if not DEBUG:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    # SECURE_COOKIES=false only for plain-HTTP local serving (`make demo`): browsers drop secure
    # cookies over http, and the log-in would never stick.
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    X_FRAME_OPTIONS = "DENY"
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }
SESSION_COOKIE_HTTPONLY = True
CSRF_FAILURE_VIEW = (
    "dashboard.web.views.access.csrf_failure"  # the styled 403 page, like every refusal
)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
CSRF_TRUSTED_ORIGINS = [o for o in env("CSRF_TRUSTED_ORIGINS", "").split(",") if o]
STATIC_ROOT.mkdir(parents=True, exist_ok=True)

CELERY_BEAT_SCHEDULE = {
    "reap-stale-runs": {"task": "workers.tasks.reap_stale_runs", "schedule": 30.0},
    "dispatch-pending-runs": {"task": "workers.tasks.dispatch_pending", "schedule": 30.0},
    "sweep-namespaces": {"task": "workers.tasks.sweep_all_clusters", "schedule": 600.0},
    # ServiceAccount tokens from make_kubeconfig: renewed with a third of their life left.
    "renew-cluster-tokens": {"task": "workers.tasks.renew_cluster_tokens", "schedule": 900.0},
}

# --- Operations: cache, rate limits, notifications, schedule checks (dashboard/web/ratelimit.py,
# dashboard/domain/notify.py, dashboard/domain/schedules.py) -------------------------------------------------
# The rate limits count in the cache. Redis when the broker is Redis (short socket timeouts: a
# Redis outage must not hang the web, and the limiter fails open); the database table created
# by migration 0004 in the embedded mode; CACHE_URL may name another Redis (e.g. a separate db).
CACHE_URL = env(
    "CACHE_URL",
    "" if EMBEDDED_BROKER else (REDIS_URL if CELERY_BROKER_URL.startswith("redis") else ""),
)
if CACHE_URL.startswith(("redis://", "rediss://", "unix://")):
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": CACHE_URL,
            "KEY_PREFIX": env("CACHE_KEY_PREFIX", "sctp-dashboard"),
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": "dashboard_cache",
        }
    }

# "N/S": at most N requests in S seconds. POSTs to /api/v1/ count per token and per client IP
# (GETs are public, cheap reads and are not limited; DRF throttles in dashboard/web/api/throttles.py);
# failed logins count per user name + IP (dashboard/web/ratelimit.py).
API_RATE_LIMIT_TOKEN = env("API_RATE_LIMIT_TOKEN", "120/60")
API_RATE_LIMIT_IP = env("API_RATE_LIMIT_IP", "300/60")
LOGIN_RATE_LIMIT = env("LOGIN_RATE_LIMIT", "10/900")
# The same lockout (dashboard.web.ratelimit.LockoutModelBackend) also counts failures per user name
# from any address and per address across user names; /login/ and /admin/login/ share it.
LOGIN_RATE_LIMIT_USER = env("LOGIN_RATE_LIMIT_USER", "50/900")
LOGIN_RATE_LIMIT_IP = env("LOGIN_RATE_LIMIT_IP", "30/900")
AUTHENTICATION_BACKENDS = ["dashboard.web.ratelimit.LockoutModelBackend"]
# Cluster registrations (page and API), per account and per address: each one contacts a server.
CLUSTER_REGISTER_RATE_LIMIT = env("CLUSTER_REGISTER_RATE_LIMIT", "10/3600")
# A user name that logged in from an address is not stopped by that address's limit (only by
# its own lockout) for this long after: failures under other names never lock a known user out.
LOGIN_KNOWN_SECONDS = env_int("LOGIN_KNOWN_SECONDS", 90 * 24 * 3600)
# The client address: REMOTE_ADDR, or, when the peer is one of RATE_LIMIT_TRUSTED_PROXIES
# (comma-separated CIDRs: the ingress controller, compose's nginx), the nearest hop of this
# header (e.g. HTTP_X_FORWARDED_FOR) that is not a trusted proxy. From any other peer the header
# is ignored. /metrics never counts a request relayed by a trusted proxy as local.
RATE_LIMIT_IP_HEADER = env("RATE_LIMIT_IP_HEADER", "")
RATE_LIMIT_TRUSTED_PROXIES = env("RATE_LIMIT_TRUSTED_PROXIES", "")
# /metrics: answered with `Authorization: Bearer <METRICS_TOKEN>` (when set), or to a peer in
# METRICS_ALLOWED_NETWORKS (CIDRs; loopback by default) that is not a trusted proxy. /healthz and
# /readyz stay open.
METRICS_TOKEN = env("METRICS_TOKEN", "")
METRICS_ALLOWED_NETWORKS = env("METRICS_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")
for _name in ("RATE_LIMIT_TRUSTED_PROXIES", "METRICS_ALLOWED_NETWORKS"):
    try:
        [
            _ipaddress.ip_network(_n.strip(), strict=False)
            for _n in globals()[_name].split(",")
            if _n.strip()
        ]
    except ValueError as _exc:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(f"{_name} must be comma-separated CIDRs: {_exc}") from None

# --- The API (dashboard/web/api/): Django REST framework, its schema by drf-spectacular ------------
REST_FRAMEWORK = {
    # tokens only: the pages' session cookie never authorizes an API call
    "DEFAULT_AUTHENTICATION_CLASSES": ["dashboard.web.api.auth.ApiTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_THROTTLE_CLASSES": [
        "dashboard.web.api.throttles.TokenThrottle",
        "dashboard.web.api.throttles.AddressThrottle",
    ],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": [
        "rest_framework.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "dashboard.web.api.errors.api_exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "NUM_PROXIES": 0,  # not used (the throttles ask dashboard.web.ratelimit.client_ip); never trust XFF
}
SPECTACULAR_SETTINGS = {
    "TITLE": "SCTP readiness dashboard API",
    "DESCRIPTION": "KEP-614 graduation criteria, battery runs and vendor evidence.",
    "VERSION": "1",
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "SERVE_INCLUDE_SCHEMA": False,  # GET schema/ and docs/ are the schema, not operations in it
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "OutcomeEnum": "dashboard.domain.catalog.Outcome.choices",
        "ClusterModeEnum": "dashboard.web.api.serializers.CLUSTER_MODES",
        "BatteryEnum": "dashboard.domain.catalog.Battery.choices",
        "ProxierEnum": "dashboard.domain.catalog.Proxier.choices",
        "CatalogBatteryEnum": "dashboard.web.api.serializers.CATALOG_BATTERIES",
        "StageEnum": "dashboard.web.api.serializers.STAGES",
        "CriterionStatusEnum": "dashboard.web.api.serializers.CRITERION_STATUSES",
        "EvidenceKindEnum": "dashboard.web.api.serializers.EVIDENCE_KINDS",
        "RunStateEnum": "dashboard.web.api.serializers.RUN_STATES",
        "RunTriggerEnum": "dashboard.web.api.serializers.RUN_TRIGGERS",
        "SubmissionStatusEnum": "dashboard.web.api.serializers.SUBMISSION_STATUSES",
    },
}

EMAIL_BACKEND = env("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", "sctp-dashboard@localhost")
# Where links in notifications point; empty: relative links.
SITE_URL = env("SITE_URL", "").rstrip("/")
NOTIFY_MAX_ATTEMPTS = env_int("NOTIFY_MAX_ATTEMPTS", 5)
NOTIFY_BACKOFF_SECONDS = env_int("NOTIFY_BACKOFF_SECONDS", 30)  # 30 s, 60 s, 120 s, … capped
NOTIFY_BACKOFF_MAX_SECONDS = env_int("NOTIFY_BACKOFF_MAX_SECONDS", 1800)
NOTIFY_TIMEOUT_SECONDS = env_int("NOTIFY_TIMEOUT_SECONDS", 10)
# CIDRs webhooks may use although loopback or private (like CLUSTER_ALLOWED_NETWORKS, which
# applies when this is not set).
WEBHOOK_ALLOWED_NETWORKS = os.environ.get("WEBHOOK_ALLOWED_NETWORKS")

CELERY_BEAT_SCHEDULE["refresh-readiness"] = {
    "task": "workers.tasks.refresh_readiness",
    "schedule": 60.0,
}
CELERY_BEAT_SCHEDULE["audit-checkpoint"] = {
    "task": "workers.tasks.audit_checkpoint",
    "schedule": float(AUDIT_CHECKPOINT_SECONDS),
}
CELERY_BEAT_SCHEDULE["check-schedules"] = {
    "task": "workers.tasks.check_schedules",
    "schedule": 60.0,
}
