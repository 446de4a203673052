from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.template.response import TemplateResponse

from dashboard.domain import models
from dashboard.domain.clusters import DESCRIPTION, ClusterError, validated_kubeconfig
from dashboard.domain.tokens import acting_as, revoke
from dashboard.domain.withdrawals import reinstate, withdraw


class EvidenceAdmin(admin.ModelAdmin):
    """Evidence and credentials: shown, never added, changed or deleted in the admin. Corrections
    are actions with a reason (reasoned_action), each audited by the code it calls."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class ReasonForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=2000,
        help_text="Why: recorded in the audit trail and shown with the item.",
    )

    def clean_reason(self) -> str:
        reason = self.cleaned_data["reason"].strip()
        if not reason:
            raise forms.ValidationError("A correction needs a reason.")
        return reason


def reasoned_action(
    modeladmin: admin.ModelAdmin,
    request: Any,
    queryset: Any,
    done: str,
    apply: Callable[..., bool],
) -> TemplateResponse | None:
    """An admin action that first asks for a reason, then applies `apply(obj, actor=, reason=)`
    to each selected object."""
    form = ReasonForm(request.POST if "apply" in request.POST else None)
    if "apply" in request.POST and form.is_valid():
        changed = sum(
            bool(apply(obj, actor=request.user, reason=form.cleaned_data["reason"]))
            for obj in queryset
        )
        modeladmin.message_user(
            request, f"{changed} of {queryset.count()} selected {done}.", messages.SUCCESS
        )
        return None
    opts = modeladmin.model._meta
    return TemplateResponse(
        request,
        "admin/reasoned_action.html",
        {
            **modeladmin.admin_site.each_context(request),
            "title": f"{done.capitalize()}: give a reason",
            "opts": opts,
            "queryset": queryset,
            "form": form,
            "action": request.POST.get("action", ""),
            "selected": request.POST.getlist(ACTION_CHECKBOX_NAME),
            "checkbox_name": ACTION_CHECKBOX_NAME,
        },
    )


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
            *DESCRIPTION,
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
            try:
                validated_kubeconfig(value, check_reachable=False)
            except ClusterError as exc:
                raise forms.ValidationError(exc.message) from exc
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
    # Trust decisions go through dashboard.domain.trust (the cluster page or the API): audited there.
    readonly_fields = ["approved", "approved_by", "approved_at", "emulated"]


@admin.register(models.Vendor)
class VendorAdmin(admin.ModelAdmin):
    list_display = ["name", "created"]
    filter_horizontal = ["members"]


@admin.register(models.Plugin)
class PluginAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "in_tree", "implements_network_policy"]
    filter_horizontal = ["vendors"]
    # NetworkPolicy exemptions are recorded on the plugin page (dashboard.domain.trust), audited there.
    readonly_fields = ["netpol_exemption_reason", "netpol_exempted_by", "netpol_exempted_at"]


@admin.register(models.ApiToken)
class ApiTokenAdmin(EvidenceAdmin):
    """Read-only: a token's role, holder and revocation are never edited here. Revoking is an
    action with a reason (audited); tokens come from `manage.py issue_token`."""

    list_display = ["hint", "role", "vendor", "user", "created", "last_used", "revoked"]
    list_filter = ["role", "revoked"]
    actions = ["revoke_tokens"]

    @admin.action(description="Revoke the selected tokens (with a reason)")
    def revoke_tokens(self, request, queryset):

        def apply(token: Any, *, actor: Any, reason: str) -> bool:
            return bool(
                revoke(
                    models.ApiToken.objects.filter(pk=token.pk),
                    actor=actor.get_username(),
                    reason=reason,
                )
            )

        return reasoned_action(self, request, queryset, "revoked", apply)


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

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class WithdrawableAdmin(EvidenceAdmin):
    """Evidence: read-only; withdrawn or reinstated by an action with a reason (audited), never
    deleted (a withdrawn item stays, shown as withdrawn, and stops counting)."""

    actions = ["withdraw_evidence", "reinstate_evidence"]

    @admin.action(description="Withdraw the selected evidence (with a reason)")
    def withdraw_evidence(self, request, queryset):

        return reasoned_action(self, request, queryset, "withdrawn", withdraw)

    @admin.action(description="Reinstate the selected withdrawn evidence (with a reason)")
    def reinstate_evidence(self, request, queryset):

        return reasoned_action(self, request, queryset, "reinstated", reinstate)


@admin.register(models.Run)
class RunAdmin(WithdrawableAdmin):
    list_display = [
        "id",
        "cluster",
        "battery",
        "trigger",
        "state",
        "created",
        "finished",
        "withdrawn_at",
    ]
    list_filter = ["state", "battery", "trigger"]
    list_select_related = ["cluster"]
    inlines = [TestResultInline]


@admin.register(models.TestResult)
class TestResultAdmin(EvidenceAdmin):
    list_display = ["run", "test_key", "outcome", "duration"]
    list_filter = ["outcome", "test_key"]


@admin.register(models.Submission)
class SubmissionAdmin(WithdrawableAdmin):
    list_display = [
        "id",
        "plugin",
        "plugin_version",
        "kubernetes_version",
        "proxier",
        "status",
        "created",
        "withdrawn_at",
    ]
    list_filter = ["status", "proxier", "plugin"]
    exclude = ["content"]

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


class AuditedUserAdmin(UserAdmin):
    """Django's user admin; a change that revokes tokens (deactivation, leaving the maintainers)
    names the admin who made it in the audit trail (dashboard/domain/tokens.py)."""

    def save_model(self, request, obj, form, change):

        with acting_as(request.user):
            super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):

        with acting_as(request.user):
            super().save_related(request, form, formsets, change)


if admin.site.is_registered(get_user_model()):
    admin.site.unregister(get_user_model())
admin.site.register(get_user_model(), AuditedUserAdmin)
