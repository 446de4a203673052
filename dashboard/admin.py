from __future__ import annotations

from django import forms
from django.contrib import admin

from . import models


class ClusterForm(forms.ModelForm):
    # The kubeconfig is write-only: an empty field keeps the stored one, nothing is shown back.
    kubeconfig = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6}),
        required=False,
        help_text="Paste a new kubeconfig to replace the stored one; it is never shown.",
    )

    class Meta:
        model = models.Cluster
        # Named, so that a new model field is not editable here before someone decides it should be.
        fields = [
            "name",
            "owner",
            "plugin",
            "plugin_version",
            "kubernetes_version",
            "proxier",
            "node_access",
            "load_balancer",
            "kubenet",
            "kubeconfig",
            "agnhost_image",
            "timeouts",
            "lab",
            "emulated",
            "enabled",
            "approved",
            "approved_by",
            "approved_at",
            "basic_only",
            "credentials_error",
            "created",
        ]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.initial["kubeconfig"] = ""

    def clean_kubeconfig(self) -> str:
        value = self.cleaned_data.get("kubeconfig", "")
        if not value and self.instance.pk:
            return self.instance.kubeconfig
        if value:
            from workers.kubeconfig import KubeconfigError, validate_kubeconfig

            try:
                validate_kubeconfig(value, check_reachable=False)
            except KubeconfigError as exc:
                raise forms.ValidationError(str(exc)) from exc
        return value


@admin.register(models.Cluster)
class ClusterAdmin(admin.ModelAdmin):
    form = ClusterForm
    list_display = [
        "name",
        "plugin",
        "plugin_version",
        "kubernetes_version",
        "proxier",
        "owner",
        "lab",
        "enabled",
    ]
    list_filter = ["proxier", "plugin", "lab", "enabled", "approved", "emulated"]
    search_fields = ["name"]
    # Trust decisions go through dashboard.trust (the cluster page or the API): audited there.
    readonly_fields = ["approved", "approved_by", "approved_at", "emulated"]


@admin.register(models.Vendor)
class VendorAdmin(admin.ModelAdmin):
    list_display = ["name", "created"]
    filter_horizontal = ["members"]


@admin.register(models.Plugin)
class PluginAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "in_tree", "implements_network_policy"]
    filter_horizontal = ["vendors"]
    # NetworkPolicy exemptions are recorded on the plugin page (dashboard.trust), audited there.
    readonly_fields = ["netpol_exemption_reason", "netpol_exempted_by", "netpol_exempted_at"]


@admin.register(models.ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["hint", "role", "vendor", "user", "created", "last_used", "revoked"]
    list_filter = ["role", "revoked"]
    readonly_fields = ["digest", "hint", "created", "last_used"]

    def has_add_permission(self, request):
        return False  # tokens come from `manage.py issue_token`, which shows them once


@admin.register(models.CatalogTest)
class CatalogTestAdmin(admin.ModelAdmin):
    list_display = ["key", "title", "battery", "position"]


@admin.register(models.Schedule)
class ScheduleAdmin(admin.ModelAdmin):
    list_display = ["cluster", "battery", "interval_minutes", "enabled"]


class TestResultInline(admin.TabularInline):
    model = models.TestResult
    extra = 0
    readonly_fields = ["test_key", "outcome", "reason", "duration", "finished"]
    exclude = ["evidence", "started"]


@admin.register(models.Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "cluster", "battery", "trigger", "state", "created", "finished"]
    list_filter = ["state", "battery", "trigger"]
    list_select_related = ["cluster"]
    inlines = [TestResultInline]
    raw_id_fields = ["cluster", "schedule", "requested_by"]


@admin.register(models.TestResult)
class TestResultAdmin(admin.ModelAdmin):
    list_display = ["run", "test_key", "outcome", "duration"]
    list_filter = ["outcome", "test_key"]
    raw_id_fields = ["run"]


@admin.register(models.Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "plugin",
        "plugin_version",
        "kubernetes_version",
        "proxier",
        "status",
        "created",
    ]
    list_filter = ["status", "proxier", "plugin"]
    exclude = ["content"]
    readonly_fields = ["sha256", "size", "kind", "results", "counts", "warnings", "report"]

    def get_queryset(self, request):
        return super().get_queryset(request).defer("content")


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records of what happened: readable in the admin, never added, edited or deleted there."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(models.SignOff)
class SignOffAdmin(ReadOnlyAdmin):
    list_display = ["from_stage", "to_stage", "kubernetes_release", "maintainer", "created"]


@admin.register(models.AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    """The audit trail is append-only and hash-chained (manage.py verify_audit_chain)."""

    list_display = ["id", "created", "actor", "action", "target"]
    list_filter = ["action"]
    search_fields = ["actor", "target"]


@admin.register(models.ReadinessSnapshot)
class ReadinessSnapshotAdmin(ReadOnlyAdmin):
    list_display = ["created", "reason"]


admin.site.register(models.ClusterLease)
