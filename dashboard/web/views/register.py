"""/clusters/new/: vendors (for their plugins) and maintainers register a cluster."""

from __future__ import annotations

import math

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from dashboard.domain.catalog import Proxier
from dashboard.domain.clusters import ClusterError, register_cluster
from dashboard.domain.models import Plugin, Vendor
from dashboard.domain.roles import is_maintainer, vendor_ids
from dashboard.web.ratelimit import registration_wait
from dashboard.web.views.access import forbidden, login_required

MAX_UPLOAD = 256 * 1024


@require_http_methods(["GET", "POST"])
@never_cache  # a refused form shows the pasted kubeconfig again: never keep it in a cache
@login_required
def register(request: HttpRequest) -> HttpResponse:
    maintainer = is_maintainer(request.user)
    vendors = list(
        Vendor.objects.filter(id__in=vendor_ids(request.user)).prefetch_related("plugins")
    )
    if not maintainer and not vendors:
        return forbidden(request, "Only plugin vendors and maintainers may register clusters.")
    plugins = (
        Plugin.objects.all()
        if maintainer
        else Plugin.objects.filter(vendors__in=vendors).distinct()
    )
    context = {
        "plugins": plugins,
        "proxiers": Proxier.values,
        "data": request.POST,
        "error": None,
        "field": "",
        "max_bytes": MAX_UPLOAD,
    }
    if request.method == "POST":
        wait = registration_wait(request, f"user:{request.user.pk}")
        if wait:
            minutes = max(1, math.ceil(wait / 60))
            context.update(error=f"Too many cluster registrations; try again in {minutes} min.")
            response = render(request, "clusters/register.html", context, status=429)
            response["Retry-After"] = str(math.ceil(wait))
            return response
        text = request.POST.get("kubeconfig_text", "")
        upload = request.FILES.get("kubeconfig")
        if upload is not None:
            if (upload.size or 0) > MAX_UPLOAD:
                context.update(
                    error=f"kubeconfig: the file is {(upload.size or 0) // 1024} KB, larger than the "
                    "256 KB allowed. Nothing was stored; your other values are kept.",
                    field="kubeconfig",
                )
                return render(request, "clusters/register.html", context, status=400)
            try:
                text = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                context.update(error="kubeconfig: the file is not UTF-8 text", field="kubeconfig")
                return render(request, "clusters/register.html", context, status=400)
        plugin = Plugin.objects.filter(slug=request.POST.get("plugin", "")).first()
        owner = next(
            (v for v in vendors if plugin and plugin in v.plugins.all()),
            vendors[0] if vendors else None,
        )
        try:
            cluster = register_cluster(
                data=request.POST,
                kubeconfig=text,
                owner=owner,
                allowed_plugin_ids=None if maintainer else {p.id for p in plugins},
                actor=request.user.get_username(),
            )
        except ClusterError as exc:
            # A kubeconfig refusal names the input it came from: the file, or the pasted text.
            named = "kubeconfig_text" if exc.field == "kubeconfig" and upload is None else exc.field
            context.update(error=exc.message, field=named, error_url=exc.url)
            return render(request, "clusters/register.html", context, status=exc.status)
        messages.success(
            request, f"Cluster {cluster.name} registered; its kubeconfig is stored encrypted."
        )
        return redirect(cluster.get_absolute_url())
    return render(request, "clusters/register.html", context)
