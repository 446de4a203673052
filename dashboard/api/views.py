"""The HTTP API of the contract (/api/v1/)."""

from __future__ import annotations

import json

from django.db.models import OuterRef, Subquery
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from django.conf import settings

from dashboard import readiness
from dashboard.clusters import KUBECONFIG_MAX_BYTES, ClusterError, register_cluster
from dashboard.models import CatalogTest, Cluster, Run, Submission
from dashboard.ratelimit import registration_wait, too_many
from dashboard.roles import vendor_has_plugin
from dashboard.runs import RunRequestError, request_run
from dashboard.trust import TrustError, approve_cluster
from dashboard.submissions import SubmissionError, create_submission, review

from . import serializers
from .auth import error, token_required
from .schema import openapi


@require_GET
def catalog(request: HttpRequest) -> JsonResponse:
    return JsonResponse([serializers.catalog_entry(t) for t in CatalogTest.objects.all()], safe=False)


@require_GET
def readiness_view(request: HttpRequest) -> HttpResponse:
    # The published evaluation, encoded once per publication (dashboard.readiness).
    return HttpResponse(readiness.published_json(), content_type="application/json")


@require_GET
def schema(request: HttpRequest) -> JsonResponse:
    return JsonResponse(openapi())


@csrf_exempt
@require_http_methods(["GET", "POST"])
def clusters(request: HttpRequest) -> JsonResponse:
    if request.method == "POST":
        return _register_cluster(request)
    newest = Run.objects.filter(cluster=OuterRef("pk")).order_by("-created").values("id")[:1]
    rows = list(Cluster.objects.select_related("plugin", "owner").annotate(last_run_id=Subquery(newest)))
    runs = Run.objects.in_bulk([c.last_run_id for c in rows if c.last_run_id])
    return JsonResponse([serializers.cluster(c, runs.get(c.last_run_id)) for c in rows], safe=False)


@token_required("vendor", "maintainer")
def _register_cluster(request: HttpRequest) -> JsonResponse:
    token = request.api_token  # type: ignore[attr-defined]
    wait = registration_wait(request, f"token:{token.pk}")
    if wait:
        return too_many(wait, f"too many cluster registrations (limit {settings.CLUSTER_REGISTER_RATE_LIMIT} s)")
    upload = request.FILES.get("kubeconfig")
    try:
        text = upload.read(KUBECONFIG_MAX_BYTES + 1).decode("utf-8") if upload else request.POST.get("kubeconfig", "")
    except UnicodeDecodeError:
        return error(400, "kubeconfig: the file is not UTF-8 text")
    vendor = token.vendor if token.role == "vendor" else None
    try:
        cluster = register_cluster(
            data=request.POST, kubeconfig=text, owner=vendor,
            allowed_plugin_ids=set(vendor.plugins.values_list("id", flat=True)) if vendor else None,
            actor=str(vendor or token.user),
        )
    except ClusterError as exc:
        return error(exc.status, exc.message, field=exc.field)
    cluster = Cluster.objects.select_related("plugin", "owner").get(pk=cluster.pk)
    return JsonResponse(serializers.cluster(cluster), status=201)


@csrf_exempt
@require_POST
@token_required()
def cluster_runs(request: HttpRequest, name: str) -> JsonResponse:
    token = request.api_token  # type: ignore[attr-defined]
    cluster = Cluster.objects.filter(name=name).first()
    if cluster is None:
        return error(404, f"no cluster named {name!r}")
    allowed = token.role == "maintainer" or (
        token.vendor_id and token.vendor_id == cluster.owner_id
        and vendor_has_plugin(token.vendor_id, cluster.plugin_id)
    )
    if not allowed:
        return error(403, f"only the owner of cluster {name} or a maintainer may run its battery")
    try:
        body = json.loads(request.body or b"{}") if request.content_type == "application/json" else request.POST
    except ValueError:
        return error(400, "the body is not valid JSON")
    battery = (body.get("battery") if hasattr(body, "get") else None) or "all"
    try:
        run = request_run(cluster, str(battery), trigger=Run.Trigger.API, user=token.user)
    except RunRequestError as exc:
        return error(exc.status, exc.message)
    return JsonResponse({"run": run.id, "url": run.get_absolute_url(), "state": run.state}, status=202)


@csrf_exempt
@require_POST
@token_required("maintainer")
def cluster_approve(request: HttpRequest, name: str) -> JsonResponse:
    token = request.api_token  # type: ignore[attr-defined]
    cluster = Cluster.objects.select_related("plugin").filter(name=name).first()
    if cluster is None:
        return error(404, f"no cluster named {name!r}")
    try:
        cluster = approve_cluster(cluster, token.user or "maintainer token")
    except TrustError as exc:
        return error(exc.status, exc.message)
    return JsonResponse({"name": cluster.name, "approved": cluster.approved})


@require_GET
def run_detail(request: HttpRequest, run_id: int) -> JsonResponse:
    run = get_object_or_404(Run.objects.select_related("cluster", "plugin"), pk=run_id)
    return JsonResponse(serializers.run(run))


@csrf_exempt
@require_http_methods(["GET", "POST"])
def submissions(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        return _create_submission(request)
    qs = Submission.objects.without_content().defer("results", "report", "warnings").select_related(
        "plugin", "vendor")
    if plugin := request.GET.get("plugin"):
        qs = qs.filter(plugin__slug=plugin)
    if status := request.GET.get("status"):
        if status not in Submission.Status.values:
            return error(400, f"unknown status {status!r}: expected one of {', '.join(Submission.Status.values)}")
        qs = qs.filter(status=status)
    try:  # contract: paginated, at most 100 a page ("limit" is the older name of page_size)
        size = min(max(int(request.GET.get("page_size") or request.GET.get("limit") or 100), 1), 100)
        page = max(int(request.GET.get("page", 1)), 1)
    except ValueError:
        return error(400, "page and page_size must be numbers")
    total = qs.count()
    rows = qs.order_by("-created", "-id")[(page - 1) * size : page * size]

    def link(number: int) -> str | None:
        if number < 1 or (number - 1) * size >= total:
            return None
        query = request.GET.copy()
        query["page"], query["page_size"] = str(number), str(size)
        query.pop("limit", None)
        return request.build_absolute_uri(f"{request.path}?{query.urlencode()}")

    return JsonResponse({"count": total, "next": link(page + 1), "previous": link(page - 1),
                         "results": [serializers.submission_summary(s) for s in rows]})


@token_required("vendor")
def _create_submission(request: HttpRequest) -> JsonResponse:
    token = request.api_token  # type: ignore[attr-defined]
    upload = request.FILES.get("file")
    try:
        sub = create_submission(
            vendor=token.vendor,
            allowed_plugin_ids=set(token.vendor.plugins.values_list("id", flat=True)),
            plugin=request.POST.get("plugin"),
            plugin_version=request.POST.get("plugin_version"),
            kubernetes_version=request.POST.get("kubernetes_version"),
            proxier=request.POST.get("proxier"),
            cluster=request.POST.get("cluster"),
            fileobj=upload,
            filename=upload.name if upload else "",
            uploaded_by=f"{token.vendor.name} (token {token.hint})",
        )
    except SubmissionError as exc:
        return error(exc.status, exc.message, **exc.extra)
    return JsonResponse(serializers.submission(sub), status=201)


@require_GET
def submission_detail(request: HttpRequest, sub_id: int) -> JsonResponse:
    sub = get_object_or_404(Submission.objects.without_content().select_related("plugin", "vendor"), pk=sub_id)
    return JsonResponse(serializers.submission(sub))


def _review(request: HttpRequest, sub_id: int, verify: bool) -> JsonResponse:
    token = request.api_token  # type: ignore[attr-defined]
    sub = Submission.objects.without_content().select_related("plugin", "vendor").filter(pk=sub_id).first()
    if sub is None:
        return error(404, f"no submission {sub_id}")
    reason = ""
    if request.body:
        try:
            body = json.loads(request.body)
            reason = str(body.get("reason", "")) if isinstance(body, dict) else ""
        except ValueError:
            reason = request.POST.get("reason", "")
    try:
        review(sub, user=token.user, verify=verify, reason=reason)
    except SubmissionError as exc:
        return error(exc.status, exc.message)
    return JsonResponse(serializers.submission(sub))


@csrf_exempt
@require_POST
@token_required("maintainer")
def submission_verify(request: HttpRequest, sub_id: int) -> JsonResponse:
    return _review(request, sub_id, verify=True)


@csrf_exempt
@require_POST
@token_required("maintainer")
def submission_reject(request: HttpRequest, sub_id: int) -> JsonResponse:
    return _review(request, sub_id, verify=False)


@csrf_exempt
@require_POST
@token_required("vendor")
def agent_runs(request: HttpRequest) -> JsonResponse:
    """POST agent-runs/: a run the in-cluster agent made (logic in dashboard/agent_runs.py)."""
    from dashboard.agent_runs import AgentRunError, accept, max_bytes

    token = request.api_token  # type: ignore[attr-defined]
    try:
        # read() rather than .body: the run's own limit applies, and no more is read than that
        run = accept(request.read(max_bytes() + 1), token.vendor, actor=str(token.vendor))
    except AgentRunError as exc:
        return error(exc.status, exc.message)
    return JsonResponse({"run": run.pk, "url": run.get_absolute_url(), "state": run.state,
                         "cluster": run.cluster.name, "cluster_approved": run.cluster.approved,
                         "emulated": run.emulated}, status=201)
