"""DRF serializers: the contract's JSON shapes, and the schema drf-spectacular derives from them.

Answers are read-only views of the models; what a client sends is checked by the domain
modules (dashboard/domain/clusters.py, submissions.py, runs.py), which the request serializers here
only describe. Times are ISO 8601 as `datetime.isoformat()` writes them.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers as s

from dashboard.domain.catalog import ALL_KEYS, CATALOG, Battery, Outcome, Proxier
from dashboard.domain.clusters import DESCRIPTION
from dashboard.domain.models import CatalogTest, Cluster, Run, Submission
from dashboard.domain.policy import submission_qualifying
from dashboard.domain.runs import missing_reason, results_of
from dashboard.domain.submission_state import never_counts, proxier_declared_only
from dashboard.web.api import schema as _schema  # noqa: F401  (registers the token scheme with drf-spectacular)

OUTCOMES = Outcome.values
CRITERION_STATUSES = ["met", "unmet", "at_risk", "stale"]
STAGES = ["alpha", "beta", "stable"]
CATALOG_BATTERIES = [Battery.BASIC.value, Battery.CONNECTIVITY.value]
EVIDENCE_KINDS = ["run", "submission"]
RUN_STATES = Run.State.choices
RUN_TRIGGERS = Run.Trigger.choices
SUBMISSION_STATUSES = Submission.Status.choices
# Catalog tests with no upstream spec today (dashboard/domain/catalog.py's `upstream_note`).
UPSTREAM_NOTES = {str(e["key"]): str(e["upstream_note"]) for e in CATALOG if e.get("upstream_note")}


def iso(value: Any) -> str | None:
    return value.isoformat() if value else None


class IsoDateTime(s.DateTimeField):
    """`isoformat()` as the API always wrote it ('+00:00', not DRF's 'Z')."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("read_only", True)
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)

    def to_representation(self, value: Any) -> str:
        return str(value.isoformat())  # DRF renders a None itself, without calling this


class ErrorSerializer(s.Serializer):
    error = s.CharField()
    existing_id = s.IntegerField(required=False, help_text="409: the submission already stored")
    field = s.CharField(required=False, help_text="the form field that was refused")
    retry_after = s.IntegerField(required=False, help_text="429: seconds until the limit resets")
    quota = s.CharField(
        required=False, help_text="the vendor quota reached: pending (429) or bytes_per_day (413)"
    )
    limit = s.IntegerField(required=False, help_text="the quota's limit")
    pending = s.IntegerField(required=False, help_text="the vendor's submissions pending review")
    sent = s.IntegerField(required=False, help_text="bytes the vendor sent in the last 24 hours")
    id = s.IntegerField(
        required=False, help_text="409: the submission already stored (as existing_id)"
    )
    existing = s.DictField(
        required=False,
        help_text="409: the first submission of the same e2e run: id, url, plugin, vendor",
    )
    run = s.IntegerField(required=False, help_text="409: the run whose own JUnit export this is")
    run_url = s.CharField(required=False)
    sctp_testcases = s.ListField(
        child=s.DictField(),
        required=False,
        help_text="422 (no SCTP test ran): the SCTP testcases found, each with name, "
        "catalog_test and state (not selected, skipped: reason, …)",
    )
    absent = s.ListField(
        child=s.CharField(), required=False, help_text="422: catalog tests absent from the file"
    )
    focus = s.CharField(required=False, allow_null=True, help_text="422: the run's focus")
    skip = s.CharField(required=False, allow_null=True, help_text="422: the run's skip")
    commands = s.DictField(
        child=s.CharField(),
        required=False,
        help_text="422: a sonobuoy and a hydrophone command that would produce qualifying evidence",
    )
    summary = s.CharField(
        required=False,
        help_text="422 (no SCTP test ran): the refusal in one line, in words (a conformance-only "
        "run, a focus that left the SCTP tests out, none of them in the file)",
    )
    conformance_only = s.BooleanField(
        required=False, help_text="422: the run was focused on [Conformance], which no SCTP test is"
    )
    steps = s.DictField(
        child=s.ListField(child=s.CharField()),
        required=False,
        help_text="422: for sonobuoy and hydrophone, the command lines in order (run, then "
        "retrieve or pack) that produce a file that counts",
    )
    release_in_file = s.CharField(required=False, help_text="422: the release the file states")
    release_source = s.CharField(required=False, help_text="422: where the file states it")
    declared = s.CharField(required=False, help_text="422: the declared release")
    cni_in_file = s.ListField(child=s.CharField(), required=False, help_text="422: CNIs seen")
    proxier_in_file = s.ListField(
        child=s.CharField(), required=False, help_text="422: kube-proxy modes seen"
    )


class CatalogTestSerializer(s.ModelSerializer):
    tags = s.ListField(child=s.CharField())
    upstream_names = s.ListField(child=s.CharField())
    battery = s.ChoiceField(choices=CATALOG_BATTERIES)
    upstream_note = s.SerializerMethodField(
        help_text=(
            "Set when no current upstream spec stands behind this test (it is ours alone, "
            "never upstream's verdict); empty otherwise"
        )
    )

    class Meta:
        model = CatalogTest
        fields = ["key", "title", "battery", "tags", "upstream_names", "kep_text", "upstream_note"]
        read_only_fields = fields

    @extend_schema_field(s.CharField())
    def get_upstream_note(self, obj: CatalogTest) -> str:
        return UPSTREAM_NOTES.get(obj.key, "")


# --- clusters ---------------------------------------------------------------------------------


class LastRunSerializer(s.Serializer):
    id = s.IntegerField()
    state = s.ChoiceField(choices=Run.State.choices)
    battery = s.ChoiceField(choices=Battery.choices)
    finished = IsoDateTime()


class ClusterSerializer(s.ModelSerializer):
    """A cluster as anyone may see it. The kubeconfig is a secret: never part of any answer."""

    url = s.CharField(source="get_absolute_url", read_only=True)
    owner = s.CharField(source="owner.name", allow_null=True, read_only=True)
    plugin = s.CharField(source="plugin.slug", read_only=True)
    proxier = s.ChoiceField(choices=Proxier.choices, read_only=True)
    emulated = s.SerializerMethodField()
    credentials_ok = s.BooleanField(
        read_only=True,
        help_text="false when the stored kubeconfig cannot be decrypted (register again)",
    )
    last_run = s.SerializerMethodField()

    class Meta:
        model = Cluster
        fields = [
            "name",
            "url",
            "owner",
            *DESCRIPTION,
            "lab",
            "enabled",
            "emulated",
            "mode",
            "approved",
            "basic_only",
            "credentials_ok",
            "last_run",
        ]
        read_only_fields = fields

    @extend_schema_field(
        s.BooleanField(help_text="registered by the lab, or its /version says so: never counts")
    )
    def get_emulated(self, c: Cluster) -> bool:
        return bool(c.emulated or c.lab)

    @extend_schema_field(LastRunSerializer(allow_null=True))
    def get_last_run(self, c: Cluster) -> dict[str, Any] | None:
        last = getattr(c, "last_run", None)
        return LastRunSerializer(last).data if last is not None else None


class ClusterRegistrationSerializer(s.Serializer):
    """The multipart form of POST clusters/ (checked by dashboard.domain.clusters.register_cluster)."""

    name = s.SlugField(max_length=63)
    plugin = s.SlugField()
    plugin_version = s.CharField(required=False)
    kubernetes_version = s.CharField(required=False)
    proxier = s.ChoiceField(choices=Proxier.choices)
    node_access = s.BooleanField(required=False)
    load_balancer = s.BooleanField(required=False)
    kubenet = s.BooleanField(required=False)
    agnhost_image = s.CharField(required=False)
    kubeconfig = s.FileField(help_text="inline credentials only; no exec, no file paths")


class ClusterEditSerializer(s.Serializer):
    """The multipart form of PATCH clusters/{name}/: every field optional."""

    plugin = s.SlugField(required=False)
    plugin_version = s.CharField(required=False)
    kubernetes_version = s.CharField(required=False)
    proxier = s.ChoiceField(choices=Proxier.choices, required=False)
    node_access = s.BooleanField(required=False)
    load_balancer = s.BooleanField(required=False)
    kubenet = s.BooleanField(required=False)
    agnhost_image = s.CharField(required=False)
    kubeconfig = s.FileField(required=False, help_text="a new kubeconfig; left out: kept")


class ClusterEditedSerializer(ClusterSerializer):
    changes = s.DictField(
        child=s.ListField(), help_text="field -> [old, new], as the audit entry records them"
    )

    class Meta(ClusterSerializer.Meta):
        fields = [*ClusterSerializer.Meta.fields, "changes"]


class RunRequestSerializer(s.Serializer):
    battery = s.ChoiceField(choices=Battery.choices, required=False, default=Battery.ALL)


class ApprovedSerializer(s.Serializer):
    name = s.CharField()
    approved = s.BooleanField()


CLUSTER_MODES = Cluster.Mode.choices


class ModeRequestSerializer(s.Serializer):
    mode = s.ChoiceField(choices=CLUSTER_MODES)
    reason = s.CharField(help_text="why the cluster's mode changes (audited)")


class ModeSerializer(s.Serializer):
    name = s.CharField()
    mode = s.ChoiceField(choices=CLUSTER_MODES)
    approved = s.BooleanField(help_text="cleared by a change of mode")


class ReasonSerializer(s.Serializer):
    reason = s.CharField(required=False, allow_blank=True)


class RunVerifiedSerializer(s.Serializer):
    run = s.IntegerField()
    trust = s.CharField()
    verified_at = IsoDateTime()


class RunQueuedSerializer(s.Serializer):
    run = s.IntegerField()
    url = s.CharField()
    state = s.ChoiceField(choices=Run.State.choices)


# --- runs -------------------------------------------------------------------------------------


class RunResultSerializer(s.Serializer):
    outcome = s.ChoiceField(choices=OUTCOMES)
    reason = s.CharField(allow_blank=True)
    duration = s.FloatField(allow_null=True, required=False)
    evidence = s.CharField(allow_blank=True, required=False)
    finished = IsoDateTime(required=False, read_only=False)  # catalog tests only


def _result(res: Any) -> dict[str, Any]:
    return {
        "outcome": res.outcome,
        "reason": res.reason,
        "duration": res.duration,
        "evidence": res.evidence,
    }


class RunSerializer(s.ModelSerializer):
    url = s.CharField(source="get_absolute_url", read_only=True)
    cluster = s.CharField(source="cluster.name", read_only=True)
    plugin = s.CharField(source="plugin.slug", read_only=True)
    status = s.CharField(source="state", read_only=True, help_text="the same as state")
    created = IsoDateTime()
    started = IsoDateTime()
    finished = IsoDateTime()
    heartbeat = IsoDateTime()
    duration_seconds = s.SerializerMethodField()
    proxier_detected = s.SerializerMethodField()
    fingerprint = s.DictField(read_only=True)
    qualifying = s.SerializerMethodField()
    results = s.SerializerMethodField()
    conformance = s.SerializerMethodField()
    trust = s.SerializerMethodField()
    verified_at = IsoDateTime(source="agent_verified_at")

    class Meta:
        model = Run
        fields = [
            "id",
            "url",
            "cluster",
            "plugin",
            "plugin_version",
            "kubernetes_version",
            "proxier",
            "battery",
            "trigger",
            "state",
            "status",
            "error",
            "created",
            "started",
            "finished",
            "heartbeat",
            "duration_seconds",
            "emulated",
            "trust",
            "verified_at",
            "proxier_detected",
            "fingerprint",
            "qualifying",
            "qualifying_reason",
            "results",
            "conformance",
        ]
        read_only_fields = fields

    def _by_key(self, r: Run) -> dict[str, Any]:
        cached = getattr(r, "_results_by_key", None)
        if cached is None:
            cached = r._results_by_key = {res.test_key: res for res in r.results.all()}  # type: ignore[attr-defined]
        return cached

    @extend_schema_field(s.FloatField(allow_null=True))
    def get_duration_seconds(self, r: Run) -> float | None:
        return r.duration.total_seconds() if r.duration else None

    @extend_schema_field(
        s.ChoiceField(
            choices=Proxier.choices,
            allow_null=True,
            help_text="the mode seen on the cluster; null when it could not be told",
        )
    )
    def get_proxier_detected(self, r: Run) -> str | None:
        return r.proxier_detected or None

    @extend_schema_field(
        s.ChoiceField(
            choices=["worker", "self-reported"],
            help_text="worker: run by the dashboard's workers; self-reported: posted by the "
            "cluster's own agent, counted only once a maintainer verifies it (verified_at)",
        )
    )
    def get_trust(self, r: Run) -> str:
        return "self-reported" if r.self_reported else "worker"

    @extend_schema_field(
        s.BooleanField(allow_null=True, help_text="null for a run without connectivity tests")
    )
    def get_qualifying(self, r: Run) -> bool | None:
        return r.qualifying if r.has_connectivity else None

    @extend_schema_field(
        s.DictField(child=RunResultSerializer(), help_text="every catalog test of the battery")
    )
    def get_results(self, r: Run) -> dict[str, Any]:
        catalog, _ = results_of(r, self._by_key(r))
        return {
            key: {"outcome": Outcome.NOT_RUN, "reason": missing_reason(r)}
            if res is None
            else {**_result(res), "finished": iso(res.finished)}
            for key, res in catalog.items()
        }

    @extend_schema_field(
        s.DictField(
            child=RunResultSerializer(),
            help_text="TCP/UDP conformance checks of the basic battery; never a criterion",
        )
    )
    def get_conformance(self, r: Run) -> dict[str, Any]:
        _, extras = results_of(r, self._by_key(r))
        return {key: _result(res) for key, res in extras.items()}


# --- submissions ------------------------------------------------------------------------------


class CountsSerializer(s.Serializer):
    passed = s.IntegerField()
    failed = s.IntegerField()
    skipped = s.IntegerField()
    not_run = s.IntegerField()


class SubmissionResultSerializer(s.Serializer):
    outcome = s.ChoiceField(choices=OUTCOMES)
    upstream_names = s.ListField(child=s.CharField())
    reasons = s.ListField(child=s.CharField())


class ReviewSerializer(s.Serializer):
    by = s.CharField(allow_null=True)
    at = IsoDateTime()
    reason = s.CharField(allow_blank=True)


class SubmissionListItemSerializer(s.ModelSerializer):
    """A submission in a list: no per-test details, no report, no warning texts (contract)."""

    url = s.CharField(source="get_absolute_url", read_only=True)
    plugin = s.CharField(source="plugin.slug", read_only=True)
    vendor = s.CharField(source="vendor.name", read_only=True)
    cluster = s.SerializerMethodField()
    created = IsoDateTime()
    run_at = IsoDateTime(
        help_text="when the e2e run happened: from the file, or a maintainer's date when the "
        "file does not say (null until then: not fresh)"
    )
    run_at_source = s.SerializerMethodField()
    counts = s.SerializerMethodField()
    qualifying = s.SerializerMethodField()

    class Meta:
        model = Submission
        fields = [
            "id",
            "url",
            "status",
            "plugin",
            "vendor",
            "plugin_version",
            "kubernetes_version",
            "proxier",
            "cluster",
            "kind",
            "sha256",
            "size",
            "created",
            "run_at",
            "run_at_source",
            "emulated",
            "counts",
            "qualifying",
        ]
        read_only_fields = fields

    @extend_schema_field(s.CharField(allow_null=True))
    def get_cluster(self, sub: Submission) -> str | None:
        return sub.cluster_name or None

    @extend_schema_field(s.ChoiceField(choices=["file", "maintainer", "upload"], allow_null=True))
    def get_run_at_source(self, sub: Submission) -> str | None:
        return sub.run_at_source or None

    @extend_schema_field(s.BooleanField())
    def get_qualifying(self, sub: Submission) -> bool:
        """The evidence policy's one answer (dashboard.domain.policy.submission_qualifying)."""
        return submission_qualifying(sub)[0]

    @extend_schema_field(CountsSerializer())
    def get_counts(self, sub: Submission) -> dict[str, int]:
        return {"passed": 0, "failed": 0, "skipped": 0, "not_run": 0, **(sub.counts or {})}


class SubmissionSerializer(SubmissionListItemSerializer):
    """One submission with its per-test results, warnings, review and validation report."""

    detected_kubernetes_version = s.SerializerMethodField()
    warnings = s.ListField(child=s.CharField(), read_only=True)
    results = s.SerializerMethodField()
    review = s.SerializerMethodField()
    report = s.SerializerMethodField()
    qualifying_reason = s.SerializerMethodField()
    never_counts = s.SerializerMethodField()
    proxier_declared_only = s.SerializerMethodField()

    class Meta(SubmissionListItemSerializer.Meta):
        fields = [
            "id",
            "url",
            "status",
            "plugin",
            "vendor",
            "plugin_version",
            "kubernetes_version",
            "detected_kubernetes_version",
            "proxier",
            "cluster",
            "kind",
            "filename",
            "sha256",
            "size",
            "uploaded_by",
            "created",
            "run_at",
            "run_at_source",
            "emulated",
            "counts",
            "results",
            "warnings",
            "qualifying",
            "qualifying_reason",
            "never_counts",
            "proxier_declared_only",
            "review",
            "report",
        ]
        read_only_fields = fields

    @extend_schema_field(s.CharField(allow_null=True))
    def get_detected_kubernetes_version(self, sub: Submission) -> str | None:
        return sub.detected_kubernetes_version or None

    @extend_schema_field(
        s.DictField(child=SubmissionResultSerializer(), help_text="every catalog test")
    )
    def get_results(self, sub: Submission) -> dict[str, Any]:
        results = {
            k: {
                "outcome": v.get("outcome", Outcome.NOT_RUN),
                "upstream_names": v.get("upstream_names", []),
                "reasons": v.get("reasons", []),
            }
            for k, v in (sub.results or {}).items()
        }
        for key in ALL_KEYS:
            results.setdefault(
                key, {"outcome": Outcome.NOT_RUN, "upstream_names": [], "reasons": []}
            )
        return results

    @extend_schema_field(ReviewSerializer())
    def get_review(self, sub: Submission) -> dict[str, Any]:
        by = sub.reviewed_by.get_username() if sub.reviewed_by_id and sub.reviewed_by else None
        return {"by": by, "at": iso(sub.reviewed_at), "reason": sub.review_reason}

    @extend_schema_field(s.CharField())
    def get_qualifying_reason(self, sub: Submission) -> str:
        return submission_qualifying(sub)[1]

    @extend_schema_field(
        s.CharField(
            help_text="while pending: why verifying it could never make it count (emulated, a "
            "release below the floor, a run older than the window); empty when it could"
        )
    )
    def get_never_counts(self, sub: Submission) -> str:
        return never_counts(sub) if sub.status == Submission.Status.PENDING else ""

    @extend_schema_field(
        s.CharField(
            help_text="the flag a verifier sees when the file does not show kube-proxy's mode "
            "(the proxier counts on the declaration); empty when the file shows it"
        )
    )
    def get_proxier_declared_only(self, sub: Submission) -> str:
        return proxier_declared_only(sub)

    @extend_schema_field(s.DictField(help_text="the validation report"))
    def get_report(self, sub: Submission) -> dict[str, Any]:
        # Warnings are stored and shown once (above); older reports held a copy. Its
        # qualifying verdict is the policy's one answer, as now (an exemption may have come).
        report = {k: v for k, v in (sub.report or {}).items() if k != "warnings"}
        ok, why = submission_qualifying(sub)
        report["qualifying"] = {"qualifying": ok, "reason": why}
        return report


class SubmissionUploadSerializer(s.Serializer):
    """The multipart form of POST submissions/ (checked by dashboard.domain.submissions.create_submission)."""

    file = s.FileField(
        help_text="e2e JUnit XML, Sonobuoy tarball, or Hydrophone output (.tar.gz, .zip)"
    )
    plugin = s.SlugField()
    plugin_version = s.CharField()
    kubernetes_version = s.CharField()
    proxier = s.ChoiceField(choices=Proxier.choices)
    cluster = s.CharField(required=False)


class ReviewRequestSerializer(s.Serializer):
    reason = s.CharField(required=False, allow_blank=True, help_text="required to reject")
    run_date = s.CharField(
        required=False,
        allow_blank=True,
        help_text="verify only: when the e2e run happened (2026-11-20 or an ISO date and time), "
        "for a file that does not say; audited",
    )


# --- readiness (a stored evaluation; described here, not re-serialized per request) -----------


class EvidenceSerializer(s.Serializer):
    kind = s.ChoiceField(choices=EVIDENCE_KINDS)
    id = s.IntegerField()
    url = s.CharField()
    # DRF's metaclass moves declared fields out of the class: this does not replace Field.label.
    label = s.CharField(required=False)  # type: ignore[assignment]
    counts = s.BooleanField(required=False, help_text="whether the evidence policy counts it")
    why = s.CharField(required=False, allow_blank=True, allow_null=True)
    emulated = s.BooleanField(required=False)
    trust = s.ChoiceField(
        choices=["worker", "self-reported", "submission"],
        required=False,
        help_text="who observed it: the dashboard's workers, the cluster's own agent, a file",
    )


class CriterionSerializer(s.Serializer):
    key = s.CharField()
    title = s.CharField()
    status = s.ChoiceField(choices=CRITERION_STATUSES)
    detail = s.CharField()
    evidence = EvidenceSerializer(many=True)
    rows = s.ListField(
        child=s.DictField(), required=False, help_text="per-plugin / per-proxier facts"
    )
    proxiers = s.DictField(
        child=s.DictField(),
        required=False,
        help_text=(
            "iptables-and-ipvs only: a verdict per proxier (iptables, ipvs, nftables), "
            '{MODE: {"status": met|unmet|stale, "detail", "evidence": [...], "note"}}'
        ),
    )
    what_if = s.CharField(required=False, allow_blank=True)
    evidence_total = s.IntegerField(required=False)
    failure = s.DictField(
        required=False,
        help_text="present when this criterion raised: it is unmet, 'could not be evaluated'",
    )


TransitionSerializer = type(
    "TransitionSerializer",
    (s.Serializer,),
    {
        "__doc__": "One stage transition and its criteria.",
        "from": s.ChoiceField(choices=STAGES),
        "to": s.ChoiceField(choices=STAGES),
        "ready": s.BooleanField(),
        "criteria": CriterionSerializer(many=True),
    },
)


class PolicySettingsSerializer(s.Serializer):
    """The settings the evaluation was made under (a stored one made under others is redone)."""

    fresh_days = s.IntegerField()
    periodic_runs = s.IntegerField()
    min_kubernetes = s.CharField(help_text='the oldest release that counts, "1.NN"')
    stage_without_signoffs = s.CharField(
        required=False, help_text="the stage shown before this deployment signs anything off"
    )


class PublicationSerializer(s.Serializer):
    """Present when the newest evaluation could not be made: what is served is the last good
    one (or, before any succeeded, the newest with what failed unmet)."""

    current = s.BooleanField(help_text="false: the newest evaluation failed")
    last_good_evaluated_at = s.DateTimeField(
        allow_null=True, help_text="when the evaluation served was made; null if none succeeded"
    )
    newest_failed_at = s.DateTimeField()
    message = s.CharField()
    failed = s.ListField(
        child=s.CharField(),
        help_text='the parts that raised: criterion keys, "evaluation", "badges"',
    )


# "label" and "source" are attributes of a DRF Field too: declared through type(), as "from" is.
KepLinkSerializer = type(
    "KepLinkSerializer",
    (s.Serializer,),
    {
        "__doc__": "A PR of a KEP-614 milestone.",
        "label": s.CharField(help_text='"kubernetes/enhancements#2073"'),
        "what": s.CharField(),
        "url": s.URLField(),
        "kep": s.BooleanField(help_text="a KEP PR (false: a code PR)"),
    },
)

KepMilestoneSerializer = type(
    "KepMilestoneSerializer",
    (s.Serializer,),
    {
        "__doc__": "A stage KEP-614 reached upstream: history from the KEP, not a sign-off made here.",
        "stage": s.ChoiceField(choices=STAGES),
        "label": s.CharField(),
        "release": s.CharField(help_text='the Kubernetes release, "1.NN"'),
        "date": s.DateField(help_text="that release's date"),
        "source": s.CharField(help_text='"KEP-614"'),
        "links": KepLinkSerializer(many=True),
    },
)


class ReadinessSerializer(s.Serializer):
    feature = s.CharField()
    kep = s.CharField(required=False)
    stage = s.ChoiceField(choices=STAGES)
    stage_source = s.ChoiceField(
        choices=["kep", "signoff"],
        required=False,
        help_text=(
            "kep: the stage is KEP-614's history (no sign-off recorded here); "
            "signoff: this deployment's own newest sign-off"
        ),
    )
    kep_history = KepMilestoneSerializer(many=True, required=False)
    watch = s.DictField(
        required=False,
        help_text=(
            "the post-GA watch: {releases: [{release, holds, plugins, proxiers, why}], minors, "
            "holds, proxiers, plugins: [{plugin, status, cells: [{proxier, release, status, "
            "why, evidence}]}], regressions: [{plugin, release, proxier, tests, evidence, when, "
            "held}]}"
        ),
    )
    evaluated_at = s.DateTimeField(required=False)
    fresh_days = s.IntegerField(required=False)
    min_kubernetes = s.CharField(
        required=False, help_text='the oldest Kubernetes release whose evidence counts, "1.NN"'
    )
    policy = PolicySettingsSerializer(required=False)
    transitions = TransitionSerializer(many=True)
    publication = PublicationSerializer(required=False)


# --- the same shapes as plain dicts, for the pages and `run_battery --json` ---------------------


def run(r: Run, results: list | None = None) -> dict[str, Any]:
    if results is not None:
        r._results_by_key = {res.test_key: res for res in results}  # type: ignore[attr-defined]
    return dict(RunSerializer(r).data)


def submission(sub: Submission) -> dict[str, Any]:
    return dict(SubmissionSerializer(sub).data)


def cluster(c: Cluster, last_run: Run | None = None) -> dict[str, Any]:
    c.last_run = last_run  # type: ignore[attr-defined]
    return dict(ClusterSerializer(c).data)
