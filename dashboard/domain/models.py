"""The domain: vendors and tokens, plugins, clusters, the catalog, runs, submissions, sign-offs."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.utils.timezone import now

from dashboard.domain.catalog import Battery, Outcome, Proxier, Stage
from dashboard.domain.crypto import (
    EncryptedTextField,
    SealedSecrets,
    new_token,
    strip_url_credentials,
    token_digest,
    token_hint,
)
from dashboard.domain.evidence import EvidenceFlags
from dashboard.domain.lookups import JSONKey


class Vendor(models.Model):
    name = models.CharField(max_length=100, unique=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="vendors")
    created = models.DateTimeField(default=now)

    def __str__(self) -> str:
        return self.name


class Plugin(models.Model):
    slug = models.SlugField(max_length=60, unique=True)
    name = models.CharField(max_length=100)
    in_tree = models.BooleanField(default=False)
    implements_network_policy = models.BooleanField(default=True)
    vendors = models.ManyToManyField(Vendor, blank=True, related_name="plugins")
    # A maintainer's audited decision: a plugin without NetworkPolicy support may still qualify
    # for two-out-of-tree-plugins (contract: Evidence policy). Empty reason: no exemption.
    netpol_exemption_reason = models.TextField(blank=True)
    netpol_exempted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )
    netpol_exempted_at = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(default=now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ApiToken(models.Model):
    """A bearer token for the API. Only its SHA-256 digest is stored."""

    class Role(models.TextChoices):
        VENDOR = "vendor", "vendor"
        MAINTAINER = "maintainer", "maintainer"

    role = models.CharField(max_length=20, choices=Role.choices)
    vendor = models.ForeignKey(Vendor, models.CASCADE, null=True, blank=True, related_name="tokens")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, models.CASCADE, null=True, blank=True)
    digest = models.CharField(max_length=64, unique=True, editable=False)
    hint = models.CharField(
        max_length=12, editable=False, help_text="The token's public id, to tell tokens apart"
    )
    created = models.DateTimeField(default=now)
    last_used = models.DateTimeField(null=True, blank=True)
    revoked = models.BooleanField(default=False)

    def __str__(self) -> str:
        owner = self.vendor or self.user
        return f"{self.role} token {self.hint}… ({owner})"

    @classmethod
    def issue(
        cls, *, role: str, vendor: Vendor | None = None, user: Any = None
    ) -> tuple[ApiToken, str]:
        token = new_token()
        obj = cls.objects.create(
            role=role, vendor=vendor, user=user, digest=token_digest(token), hint=token_hint(token)
        )
        return obj, token


class Cluster(SealedSecrets):
    class Mode(models.TextChoices):
        # Tested by the dashboard's workers through the kubeconfig the cluster was registered
        # with; or reporting through its in-cluster agent (self-reported evidence). Fixed at
        # registration; only a maintainer changes it (dashboard.domain.trust.set_mode, audited).
        WORKER = "worker", "tested by the dashboard's workers"
        AGENT = "agent", "self-reported by its in-cluster agent"

    name = models.SlugField(max_length=63, unique=True)
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.WORKER)
    # The agent's identity: the SHA-256 of its per-cluster key (the key itself is never stored).
    # Set on the agent's first contact; a maintainer's approval of the cluster approves it.
    agent_key_digest = models.CharField(max_length=64, blank=True, editable=False)
    owner = models.ForeignKey(
        Vendor, models.SET_NULL, null=True, blank=True, related_name="clusters"
    )
    plugin = models.ForeignKey(Plugin, models.PROTECT, related_name="clusters")
    plugin_version = models.CharField(max_length=40, blank=True)
    kubernetes_version = models.CharField(max_length=40, blank=True)
    proxier = models.CharField(max_length=20, choices=Proxier.choices, default=Proxier.IPTABLES)
    node_access = models.BooleanField(default=True, help_text="Privileged hostexec pods allowed")
    load_balancer = models.BooleanField(
        default=False, help_text="LoadBalancer services get an ingress"
    )
    kubenet = models.BooleanField(default=False)
    kubeconfig = EncryptedTextField(blank=True, help_text="Stored encrypted; never shown back")
    agnhost_image = models.CharField(
        max_length=255, blank=True, help_text="Empty: the default agnhost image"
    )
    timeouts = models.JSONField(
        default=dict, blank=True, help_text="Overrides of the battery's waits, in seconds"
    )
    lab = models.BooleanField(default=False, help_text="An emulated cluster served by the lab")
    # Evidence policy: registered by `lab --register`, or its GET /version said "emulated": true.
    emulated = models.BooleanField(default=False)
    enabled = models.BooleanField(default=True)
    # Evidence policy (trusted cluster): runs count only on approved, enabled clusters.
    approved = models.BooleanField(default=False)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )
    approved_at = models.DateTimeField(null=True, blank=True)
    basic_only = models.BooleanField(
        default=False,
        help_text="Connectivity runs are refused (they load sctp.ko; the periodic basic job runs here)",
    )
    # Set when code that needs the kubeconfig (a run, a sweep, a key rotation) could not decrypt
    # it; cleared when a new one is stored. Pages show it without decrypting anything.
    credentials_error = models.CharField(max_length=200, blank=True)
    created = models.DateTimeField(default=now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def credentials_ok(self) -> bool:
        return not self.credentials_error

    def get_absolute_url(self) -> str:
        return f"/clusters/{self.name}/"


class CatalogTest(models.Model):
    key = models.SlugField(max_length=60, unique=True)
    title = models.CharField(max_length=200)
    battery = models.CharField(max_length=20, choices=Battery.choices)
    tags = models.JSONField(default=list)
    kep_text = models.TextField(blank=True)
    upstream_names = models.JSONField(default=list)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["position"]

    def __str__(self) -> str:
        return self.key


class Schedule(models.Model):
    """A periodic battery on a cluster; mirrored into django-celery-beat's PeriodicTask."""

    cluster = models.ForeignKey(Cluster, models.CASCADE, related_name="schedules")
    battery = models.CharField(max_length=20, choices=Battery.choices, default=Battery.BASIC)
    interval_minutes = models.PositiveIntegerField(default=24 * 60)
    grace_minutes = models.PositiveIntegerField(default=60)
    enabled = models.BooleanField(default=True)
    # related_name: the default reverse accessor ("schedule") would shadow PeriodicTask.schedule,
    # which beat reads on every entry.
    periodic_task = models.OneToOneField(
        "django_celery_beat.PeriodicTask",
        models.SET_NULL,
        null=True,
        blank=True,
        editable=False,
        related_name="sctp_schedule",
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True)
    created = models.DateTimeField(default=now)

    def __str__(self) -> str:
        return f"{self.battery} on {self.cluster} every {self.interval_minutes} min"

    @property
    def interval(self) -> timedelta:
        return timedelta(minutes=self.interval_minutes)


class EvidenceMixin(models.Model):
    """The flags of dashboard.domain.evidence, stored where the criteria can query them by index."""

    has_connectivity = models.BooleanField(default=False)
    qualifying = models.BooleanField(default=False)
    qualifying_reason = models.CharField(max_length=300, blank=True)
    pod_to_service_passed = models.BooleanField(default=False)
    basic_ok = models.BooleanField(default=False)
    # Evidence is never deleted: a maintainer withdraws it, with a reason (audited; the row stays,
    # shown as withdrawn, and stops counting: dashboard/domain/policy.py).
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    withdrawn_by = models.CharField(max_length=150, blank=True)
    withdrawn_reason = models.TextField(blank=True)

    class Meta:
        abstract = True

    @property
    def withdrawn_text(self) -> str:
        """ "" while it stands, else one line: who withdrew it, when and why."""
        if self.withdrawn_at is None:
            return ""
        return (
            f"withdrawn by {self.withdrawn_by} on {self.withdrawn_at:%Y-%m-%d}: "
            f"{self.withdrawn_reason}"
        )

    def apply_flags(self, flags: EvidenceFlags) -> None:
        self.has_connectivity = flags.has_connectivity
        self.qualifying = flags.qualifying and flags.has_connectivity
        self.qualifying_reason = flags.qualifying_reason[:300]
        self.pod_to_service_passed = flags.pod_to_service_passed
        self.basic_ok = flags.basic_ok and flags.basic_complete


class RunManager(models.Manager["Run"]):
    """Leaves upstream's files out of every query unless asked for (`.defer(None)`, or reading
    the attribute): an evaluation reads hundreds of runs, and an upstream JUnit is megabytes."""

    def get_queryset(self) -> models.QuerySet[Run]:
        return super().get_queryset().defer("upstream_junit", "upstream_log")


class Run(EvidenceMixin):
    class State(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        FINISHED = "finished", "finished"
        CANCELLED = "cancelled", "cancelled"
        ERROR = "error", "error"

    class Trigger(models.TextChoices):
        MANUAL = "manual", "manual"
        PERIODIC = "periodic", "periodic"
        API = "api", "api"
        AGENT = "agent", "agent"  # posted by the in-cluster agent (dashboard/domain/agent_runs.py)

    cluster = models.ForeignKey(Cluster, models.CASCADE, related_name="runs")
    # Snapshots taken when the run is created: the evidence belongs to what was tested then.
    plugin = models.ForeignKey(Plugin, models.PROTECT, related_name="runs")
    plugin_version = models.CharField(max_length=40, blank=True)
    kubernetes_version = models.CharField(max_length=40, blank=True)
    proxier = models.CharField(max_length=20, choices=Proxier.choices)
    battery = models.CharField(max_length=20, choices=Battery.choices)
    trigger = models.CharField(max_length=20, choices=Trigger.choices, default=Trigger.MANUAL)
    schedule = models.ForeignKey(
        Schedule, models.SET_NULL, null=True, blank=True, related_name="runs"
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True
    )
    state = models.CharField(max_length=20, choices=State.choices, default=State.QUEUED)
    task_id = models.CharField(max_length=64, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    created = models.DateTimeField(default=now)
    dispatched = models.DateTimeField(null=True, blank=True)
    started = models.DateTimeField(null=True, blank=True)
    heartbeat = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    fingerprint = models.JSONField(default=dict, blank=True)
    # The fingerprint's keys a readiness evaluation reads (policy.RUN_FINGERPRINT_KEYS), kept by
    # the database itself on every write of the fingerprint: an evaluation reads hundreds of runs,
    # and a fingerprint is kilobytes (nodes, boot IDs, every object the battery created).
    fp_proxier_detected = models.GeneratedField(
        expression=JSONKey("fingerprint", "proxier_detected"),
        output_field=models.JSONField(null=True),
        db_persist=True,
    )
    fp_emulated = models.GeneratedField(
        expression=JSONKey("fingerprint", "emulated"),
        output_field=models.JSONField(null=True),
        db_persist=True,
    )
    fp_sctp_module_before = models.GeneratedField(
        expression=JSONKey("fingerprint", "sctp_module_before"),
        output_field=models.JSONField(null=True),
        db_persist=True,
    )
    fp_sctp_invariant_held = models.GeneratedField(
        expression=JSONKey("fingerprint", "sctp_invariant_held"),
        output_field=models.JSONField(null=True),
        db_persist=True,
    )
    # From the fingerprint when the run ends (evidence policy): the lab's /version mark, and the
    # proxier mode detected on the cluster ("" when it could not be determined).
    emulated = models.BooleanField(default=False)
    proxier_detected = models.CharField(max_length=20, blank=True)
    # The Kubernetes minor the evidence is of (the server's /version when the run saw it).
    kubernetes_minor = models.PositiveSmallIntegerField(null=True, blank=True)
    # Agent runs (self-reported): the payload's digest (a replay is refused), and the
    # maintainer's verification, without which the run never counts (dashboard.domain.policy).
    agent_digest = models.CharField(max_length=64, null=True, blank=True, unique=True)
    agent_verified_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )
    agent_verified_at = models.DateTimeField(null=True, blank=True)
    # The upstream battery (workers/upstream.py): upstream's e2e.test and what it said. `upstream`
    # holds {binary, minor, focus, specs: [{name, outcome, message, key}], progress: {running,
    # done, total}}; the JUnit is upstream's own file, served as is at /runs/<id>/junit.xml.
    upstream = models.JSONField(default=dict, blank=True)
    upstream_junit = models.BinaryField(null=True, blank=True)
    upstream_log = models.TextField(blank=True)

    objects = RunManager()

    class Meta:
        ordering = ["-created"]
        indexes = [
            # the cluster page's history and the "newest run of a cluster" lookups
            models.Index(fields=["cluster", "-created"]),
            # the matrix: newest finished run of each battery of a cluster
            models.Index(fields=["cluster", "state", "battery", "-created"]),
            # two-out-of-tree-plugins: newest (qualifying) connectivity evidence per plugin
            models.Index(fields=["plugin", "state", "has_connectivity", "-finished"]),
            models.Index(fields=["plugin", "state", "qualifying", "-finished"]),
            # iptables-and-ipvs: newest run per proxier with pod-to-service passed
            models.Index(fields=["proxier", "state", "pod_to_service_passed", "-finished"]),
            # connectivity candidates: per cluster, its newest run of each kind of evidence
            models.Index(fields=["cluster", "state", "has_connectivity", "-finished"]),
            models.Index(fields=["cluster", "state", "qualifying", "-finished"]),
            models.Index(fields=["cluster", "state", "pod_to_service_passed", "-finished"]),
            # tests-written: finished runs newest first, inside the freshness window
            models.Index(fields=["state", "-finished"]),
            # periodic-basic-passing: last N scheduled runs of a schedule
            models.Index(fields=["schedule", "-created"]),
            # the reaper and the dispatcher
            models.Index(fields=["state", "heartbeat"]),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.battery} on {self.cluster_id})"

    def get_absolute_url(self) -> str:
        return f"/runs/{self.pk}/"

    @property
    def self_reported(self) -> bool:
        """Posted by the cluster's own agent: a claim the dashboard's workers did not observe."""
        return self.trigger == Run.Trigger.AGENT

    @property
    def duration(self) -> timedelta | None:
        if self.started and self.finished:
            return self.finished - self.started
        return None


class TestResult(models.Model):
    __test__ = False  # not a pytest test class

    run = models.ForeignKey(Run, models.CASCADE, related_name="results")
    test_key = models.SlugField(max_length=60)
    outcome = models.CharField(max_length=20, choices=Outcome.choices)
    reason = models.TextField(blank=True)
    evidence = models.TextField(blank=True)
    duration = models.FloatField(null=True, blank=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(default=now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "test_key"], name="one_result_per_test")
        ]
        indexes = [
            models.Index(fields=["test_key", "outcome"]),  # /metrics: outcomes per test
            # tests-written: a key's newest result, when no counted run has a verdict for it
            models.Index(fields=["test_key", "-id"]),
        ]

    def __str__(self) -> str:
        return f"{self.test_key}: {self.outcome}"


class SubmissionQuerySet(models.QuerySet["Submission"]):
    def without_content(self) -> SubmissionQuerySet:
        return self.defer("content")


class Submission(EvidenceMixin):
    # Not a column: what the last review() of this instance did to readiness (its audit entry
    # keeps it as `effect`).
    review_effect: list[str] | None = None

    class Status(models.TextChoices):
        PENDING = "pending_review", "pending review"
        VERIFIED = "verified", "verified"
        REJECTED = "rejected", "rejected"

    plugin = models.ForeignKey(Plugin, models.PROTECT, related_name="submissions")
    vendor = models.ForeignKey(Vendor, models.PROTECT, related_name="submissions")
    uploaded_by = models.CharField(max_length=150, help_text="Token hint or user name")
    plugin_version = models.CharField(max_length=40)
    kubernetes_version = models.CharField(max_length=40)
    proxier = models.CharField(max_length=20, choices=Proxier.choices)
    cluster_name = models.CharField(max_length=100, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    kind = models.CharField(
        max_length=30, help_text="junit, sonobuoy, hydrophone-tar, hydrophone-zip"
    )
    filename = models.CharField(max_length=255, blank=True)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField()
    content = models.BinaryField(editable=False)
    results = models.JSONField(default=dict)
    counts = models.JSONField(default=dict)
    warnings = models.JSONField(default=list)
    report = models.JSONField(default=dict, help_text="The validation report")
    detected_kubernetes_version = models.CharField(max_length=40, blank=True)
    # Evidence policy: when the e2e run happened, read from the file; when the file does not
    # say, empty (not fresh) until a maintainer enters the run date when verifying.
    run_at = models.DateTimeField(null=True, blank=True)
    run_at_source = models.CharField(
        max_length=10,
        blank=True,
        help_text="file | maintainer | '' (the file does not say); upload on older rows",
    )
    # Evidence policy, Once: the e2e run's identity by content (dashboard.domain.ingest.identity),
    # whatever the bytes, and the same run without its outcomes (near-duplicates).
    content_id = models.CharField(max_length=64, blank=True, db_index=True)
    near_id = models.CharField(max_length=64, blank=True, db_index=True)
    emulated = models.BooleanField(
        default=False, help_text="The file says it comes from an emulated cluster"
    )
    kubernetes_minor = models.PositiveSmallIntegerField(null=True, blank=True)
    created = models.DateTimeField(default=now)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    review_reason = models.TextField(blank=True)

    objects = SubmissionQuerySet.as_manager()

    class Meta:
        ordering = ["-created"]
        constraints = [
            models.UniqueConstraint(
                fields=["plugin", "sha256"], name="one_submission_per_file_and_plugin"
            ),
            models.UniqueConstraint(
                fields=["content_id"],
                condition=~models.Q(content_id=""),
                name="one_submission_per_e2e_run",
            ),
        ]
        indexes = [
            models.Index(fields=["plugin", "status", "has_connectivity", "-created"]),
            models.Index(fields=["plugin", "status", "qualifying", "-created"]),
            models.Index(fields=["proxier", "status", "pod_to_service_passed", "-created"]),
            models.Index(fields=["status", "-created"]),
            models.Index(fields=["-created"]),  # the unfiltered submissions list, newest first
            # the matrix: newest submission of each status per plugin and proxier
            models.Index(fields=["plugin", "proxier", "status", "-created"]),
        ]

    def __str__(self) -> str:
        return f"submission {self.pk} ({self.plugin_id} {self.plugin_version})"

    def get_absolute_url(self) -> str:
        return f"/submissions/{self.pk}/"


class SignOff(models.Model):
    """A maintainer's decision on a transition; it freezes the verdicts and evidence it saw."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    from_stage = models.CharField(max_length=20, choices=Stage.choices)
    to_stage = models.CharField(max_length=20, choices=Stage.choices)
    maintainer = models.ForeignKey(settings.AUTH_USER_MODEL, models.PROTECT)
    comment = models.TextField()
    kubernetes_release = models.CharField(max_length=10, blank=True, help_text="e.g. 1.20")
    snapshot = models.JSONField(help_text="The readiness verdicts and evidence at sign-off")
    created = models.DateTimeField(default=now)
    # The audit chain's head once the sign-off was recorded (dashboard/domain/audit.py): quoted wherever
    # the sign-off is, it anchors the chain outside the database.
    audit_seq = models.PositiveBigIntegerField(null=True, blank=True)
    audit_head = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.from_stage} → {self.to_stage} by {self.maintainer}"


class AuditEvent(models.Model):
    """Who did what when: verifications, rejections, sign-offs, schedules, tokens."""

    # 1, 2, 3, … with no gaps: a deleted entry shows (dashboard/domain/audit.py).
    seq = models.PositiveBigIntegerField(null=True, blank=True, unique=True)
    actor = models.CharField(max_length=150)
    action = models.CharField(max_length=60)
    target = models.CharField(max_length=200, blank=True)
    detail = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(default=now)
    # Tamper evidence: each entry carries the keyed hash of itself and of the one before it.
    prev_hash = models.CharField(max_length=64, blank=True)
    hash = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["-created"]
        indexes = [models.Index(fields=["-created"])]

    def __str__(self) -> str:
        return f"{self.created:%Y-%m-%d %H:%M} {self.actor} {self.action} {self.target}"

    @classmethod
    def record(
        cls, actor: object, action: str, target: object = "", **detail: object
    ) -> AuditEvent:
        """Appends to the hash chain (dashboard/domain/audit.py); safe against concurrent writers.
        URL credentials (https://user:password@…) never reach the log."""
        # deferred: the audit chain reads this model (by name) to append to it
        from dashboard.domain.audit import append

        actor = str(actor).strip()
        if not actor or actor == "?":
            raise ValueError(f"an audit entry names its actor ({action} {target})")
        target, detail = strip_url_credentials(str(target)), strip_url_credentials(detail)
        entry: AuditEvent = append(cls, str(actor)[:150], action, str(target)[:200], detail, now())
        return entry


class ClusterLease(models.Model):
    """The per-cluster run lease when there is no Redis (embedded mode); see workers/lease.py."""

    cluster = models.OneToOneField(Cluster, models.CASCADE, primary_key=True, related_name="lease")
    holder = models.CharField(max_length=64)
    expires = models.DateTimeField()

    def __str__(self) -> str:
        return f"lease on {self.cluster_id} until {self.expires}"


class ReadinessSnapshot(models.Model):
    """A readiness evaluation whose verdicts differ from the one before: the criterion history."""

    statuses = models.JSONField(help_text="criterion key -> status")
    data = models.JSONField(help_text="The whole evaluation")
    reason = models.CharField(max_length=200, blank=True)
    created = models.DateTimeField(default=now)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"readiness at {self.created:%Y-%m-%d %H:%M}"


class PublishedReadiness(models.Model):
    """The readiness evaluation the public page, API and badges serve (one row, pk=1).

    Every change to evidence bumps `version` (a single UPDATE, in the writer's transaction);
    readers serve `data` while `computed_version` matches and it is younger than
    READINESS_MAX_AGE_SECONDS, and otherwise recompute it. A beat task recomputes it every
    minute (time alone turns evidence stale and schedules late) and a task does so after commits.
    """

    version = models.PositiveBigIntegerField(default=0)
    computed_version = models.BigIntegerField(default=-1)
    computed = models.DateTimeField(null=True, blank=True)
    # The evaluation as the API's JSON text: written once per publication and served as it is
    # (a jsonb column parsed and rebuilt its ~280 KB on every write and read, for no query
    # that ever looks inside it).
    data = models.TextField(default="{}")
    badges = models.JSONField(default=dict, help_text="plugin slug -> {status, message, why}")
    # When the newest evaluation raised (dashboard/domain/readiness/failures.py), the page keeps
    # serving `data` (the last good one) and says so: when it failed, what failed and where.
    failed_at = models.DateTimeField(null=True, blank=True)
    failure = models.JSONField(default=dict, blank=True)
    failures_total = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"readiness published at {self.computed}"


class EvidenceHead(models.Model):
    """Pre-aggregated: for one cluster, plugin or schedule, the ids of its newest evidence of
    each kind, which are the candidates a readiness evaluation reads (dashboard/domain/heads.py).

    Rows are kept up to date when evidence changes: a run's or submission's save or delete
    refreshes its scopes; the code that changes runs with a bulk UPDATE refreshes them
    itself; every readiness recording (after a run, and every minute) rebuilds them all.
    Only ids are kept, never a verdict: whether a candidate counts is decided at evaluation
    time, as before (dashboard.domain.policy)."""

    cluster = models.OneToOneField(
        Cluster, models.CASCADE, null=True, blank=True, related_name="evidence_head"
    )
    plugin = models.OneToOneField(
        Plugin, models.CASCADE, null=True, blank=True, related_name="evidence_head"
    )
    schedule = models.OneToOneField(
        Schedule, models.CASCADE, null=True, blank=True, related_name="evidence_head"
    )
    heads = models.JSONField(default=dict, help_text="slot -> id, or a list of ids")

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(cluster__isnull=False, plugin__isnull=True, schedule__isnull=True)
                    | models.Q(cluster__isnull=True, plugin__isnull=False, schedule__isnull=True)
                    | models.Q(cluster__isnull=True, plugin__isnull=True, schedule__isnull=False)
                ),
                name="evidence_head_one_scope",
            )
        ]

    def __str__(self) -> str:
        scope = (
            f"cluster {self.cluster_id}"
            if self.cluster_id
            else f"plugin {self.plugin_id}"
            if self.plugin_id
            else f"schedule {self.schedule_id}"
        )
        return f"evidence heads of {scope}"


# --- Operations: schedule health and notifications (dashboard/domain/schedules.py, dashboard/domain/notify.py) ---


class ScheduleHealth(models.Model):
    """The last state the beat check saw for a schedule, so that only changes are announced."""

    schedule = models.OneToOneField(
        Schedule, models.CASCADE, primary_key=True, related_name="health"
    )
    state = models.CharField(max_length=10, default="new")
    # Staleness is counted from here when no periodic run is newer (creation, resume, edit):
    # a resumed schedule gets a fresh chance instead of turning "down" at once.
    baseline = models.DateTimeField(default=now)
    changed = models.DateTimeField(default=now)
    # Bumped on every announced change; part of the notification's de-duplication key.
    version = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"schedule {self.schedule_id} is {self.state}"


class NotificationChannel(SealedSecrets):
    class Kind(models.TextChoices):
        WEBHOOK = "webhook", "webhook"
        EMAIL = "email", "e-mail"

    kind = models.CharField(max_length=10, choices=Kind.choices)
    target = models.CharField(max_length=500, help_text="The webhook URL or the e-mail address")
    secret = EncryptedTextField(
        blank=True, help_text="Webhooks: signs the body (X-Signature); stored encrypted"
    )
    enabled = models.BooleanField(default=True)
    created = models.DateTimeField(default=now)

    class Meta:
        ordering = ["kind", "target"]

    def __str__(self) -> str:
        return f"{self.kind} {self.target}"

    @property
    def has_secret(self) -> bool:
        """Whether a secret is stored, without decrypting it (pages list channels)."""
        return bool(self.__dict__.get("secret"))


class NotificationLog(models.Model):
    """One event for one channel. The unique key is claimed before anything is sent."""

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        SENDING = "sending", "sending"
        RETRYING = "retrying", "retrying"
        SENT = "sent", "sent"
        FAILED = "failed", "failed"

    channel = models.ForeignKey(NotificationChannel, models.CASCADE, related_name="log")
    event_key = models.CharField(max_length=200)
    event = models.CharField(max_length=40)
    payload = models.JSONField(default=dict)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    last_error = models.TextField(blank=True)
    created = models.DateTimeField(default=now)
    queued = models.DateTimeField(null=True, blank=True)
    sent = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        constraints = [
            models.UniqueConstraint(
                fields=["channel", "event_key"], name="one_notification_per_event"
            )
        ]
        # the re-dispatcher: deliveries whose task the broker never got or lost
        indexes = [models.Index(fields=["status", "queued"])]

    def __str__(self) -> str:
        return f"{self.event_key} → {self.channel}: {self.status}"
