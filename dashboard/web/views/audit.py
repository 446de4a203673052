"""The whole audit trail (/audit/, maintainers): filterable by who, what and on what, paginated."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.http import urlencode

from dashboard.domain.models import AuditEvent
from dashboard.web.views.access import maintainer_required

PAGE_SIZE = 50


@maintainer_required
def audit_list(request: HttpRequest) -> HttpResponse:
    filters = {k: request.GET.get(k, "").strip() for k in ("actor", "action", "q")}
    qs = AuditEvent.objects.order_by("-id")
    if filters["actor"]:
        qs = qs.filter(actor__icontains=filters["actor"])
    if filters["action"]:
        qs = qs.filter(action=filters["action"])
    if filters["q"]:
        qs = qs.filter(target__icontains=filters["q"])
    page = Paginator(qs, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(
        request,
        "audit/list.html",
        {
            "page": page,
            "filters": filters,
            "actions": AuditEvent.objects.order_by("action")
            .values_list("action", flat=True)
            .distinct(),
            "query": urlencode({k: v for k, v in filters.items() if v}),
        },
    )
