"""/clusters/<name>/edit/: the explicit way to change a cluster (registration never does).

The form starts from the current values; sending it shows what would change (old → new) and
whether the approval goes, and only the confirmation stores it, audited with both values."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from dashboard.domain.catalog import Proxier
from dashboard.domain.clusters import FIELD_LABELS, ClusterError, apply_edit, check_edit, shown
from dashboard.domain.models import Cluster, Plugin
from dashboard.domain.roles import can_manage_cluster, is_maintainer, vendor_ids
from dashboard.web.views.access import forbidden, login_required
from dashboard.web.views.register import MAX_UPLOAD


def _kubeconfig_of(request: HttpRequest) -> str:
    upload = request.FILES.get("kubeconfig")
    if upload is not None:
        if (upload.size or 0) > MAX_UPLOAD:
            raise ClusterError(400, "kubeconfig: the file is larger than 256 KB", "kubeconfig")
        try:
            return bytes(upload.read()).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ClusterError(400, "kubeconfig: the file is not UTF-8 text", "kubeconfig") from exc
    return str(request.POST.get("kubeconfig_text", ""))


def _label(value: Any) -> str:
    if value is True:
        return "yes"
    if value is False:
        return "no"
    return str(value) if value not in (None, "") else "(empty)"


@require_http_methods(["GET", "POST"])
@never_cache  # the confirmation step carries a pasted kubeconfig: never keep it in a cache
@login_required
def cluster_edit(request: HttpRequest, name: str) -> HttpResponse:
    cluster = get_object_or_404(Cluster.objects.select_related("plugin"), name=name)
    if not can_manage_cluster(request.user, cluster):
        return forbidden(
            request, f"Only the owner of cluster {cluster.name} or a maintainer may change it."
        )
    maintainer = is_maintainer(request.user)
    plugins = (
        Plugin.objects.all()
        if maintainer
        else Plugin.objects.filter(vendors__in=vendor_ids(request.user)).distinct()
    )
    current = shown(cluster)
    context: dict[str, Any] = {
        "cluster": cluster,
        "plugins": plugins,
        "proxiers": Proxier.values,
        "data": current,
        "error": None,
        "field": "",
        "changes": None,
    }
    if request.method == "GET":
        return render(request, "clusters/edit.html", context)
    data = request.POST
    context["data"] = {
        **{k: data.get(k, "") for k in current},
        **{k: data.get(k) == "true" for k in ("node_access", "load_balancer", "kubenet")},
    }
    try:
        kubeconfig = _kubeconfig_of(request)
        edit = check_edit(
            cluster,
            data=data,
            kubeconfig=kubeconfig,
            allowed_plugin_ids=None if maintainer else {p.id for p in plugins},
        )
    except ClusterError as exc:
        context.update(error=exc.message, field=exc.field)
        return render(request, "clusters/edit.html", context, status=exc.status)
    if not edit.changes:
        messages.info(request, f"Nothing changed: cluster {cluster.name} keeps its values.")
        return redirect(cluster.get_absolute_url())
    if data.get("confirm") != "yes":
        context.update(
            changes=[
                {
                    "field": FIELD_LABELS.get(k, k),
                    "key": k,
                    "old": _label(old),
                    "new": _label(new),
                }
                for k, (old, new) in edit.changes.items()
            ],
            edit=edit,
            kubeconfig_text=kubeconfig,
        )
        return render(request, "clusters/edit.html", context)
    apply_edit(edit, request.user.get_username())
    said = ", ".join(
        f"{FIELD_LABELS.get(k, k)} {_label(o)} → {_label(n)}" for k, (o, n) in edit.changes.items()
    )
    extra = ""
    if edit.clears_approval:
        extra = " Its approval was withdrawn: a maintainer must approve it again."
    elif edit.approves:
        extra = " Changed by a maintainer, it is approved."
    messages.success(request, f"Cluster {cluster.name} changed: {said}.{extra}")
    return redirect(cluster.get_absolute_url())
