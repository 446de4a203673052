"""The HTTP API of the contract (/api/v1/) on Django REST framework.

Views only translate HTTP: who may call (permission classes in auth.py), how often (throttles),
what comes back (serializers). What a request means is decided by the domain modules
(dashboard.domain.clusters, dashboard.domain.runs, dashboard.domain.submissions, dashboard.domain.readiness).
"""

from __future__ import annotations

from typing import Any

import django_filters
from django.conf import settings
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import exceptions, generics
from rest_framework import serializers as drf_fields
from rest_framework.pagination import BasePagination
from rest_framework.permissions import AllowAny, BasePermission
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from dashboard.domain import publication
from dashboard.domain.agent_runs import KEY_HEADER, AgentRunError, accept, max_bytes
from dashboard.domain.clusters import (
    KUBECONFIG_MAX_BYTES,
    ClusterError,
    register_cluster,
    shown,
    update_cluster,
)
from dashboard.domain.models import CatalogTest, Cluster, Run, Submission
from dashboard.domain.runs import RunRequestError, request_run
from dashboard.domain.submissions import SubmissionError, create_submission, review
from dashboard.domain.trust import TrustError, approve_cluster, set_mode, verify_agent_run
from dashboard.web.api import serializers as sz
from dashboard.web.api.auth import (
    ClusterOwnerOrMaintainer,
    MaintainerToken,
    VendorOrMaintainerToken,
    VendorToken,
    token_of,
)
from dashboard.web.api.errors import ApiError, TooManyRequests
from dashboard.web.ratelimit import registration_wait

ERROR_TEXT = {
    400: "unreadable or unsupported file or field, or a Content-Length that is not a number",
    401: "missing or bad token",
    403: "not allowed for this token",
    404: "not found",
    409: "conflict",
    413: "body larger than allowed (judged from Content-Length, unread), or a vendor's daily "
    "upload quota reached",
    422: "a readable file that is no evidence",
    429: "too many requests (Retry-After), or too many submissions pending review",
}


def errors(*codes: int) -> dict[int, OpenApiResponse]:
    """The documented refusals of an operation; every POST may also meet the body guard (400, 413)."""
    return {
        code: OpenApiResponse(sz.ErrorSerializer, description=ERROR_TEXT[code]) for code in codes
    }


def post_errors(*codes: int) -> dict[int, OpenApiResponse]:
    return errors(*sorted({400, 413, *codes}))


class ApiView(APIView):
    """Throttles before authentication: a client guessing tokens is limited by its address."""

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        self.format_kwarg = self.get_format_suffix(**kwargs)
        request.accepted_renderer, request.accepted_media_type = self.perform_content_negotiation(
            request
        )
        request.version, request.versioning_scheme = self.determine_version(
            request, *args, **kwargs
        )
        self.check_throttles(request)
        self.perform_authentication(request)
        self.check_permissions(request)

    def check_throttles(self, request: Request) -> None:
        for throttle in self.get_throttles():
            if not throttle.allow_request(request, self):
                raise TooManyRequests(throttle.wait() or 1, throttle.describe())  # type: ignore[attr-defined]

    def perform_authentication(self, request: Request) -> None:
        pass  # lazy: open reads never look at a token


class GetOpenPostNeeds(ApiView):
    """GET open to anyone; POST needs `post_permission`."""

    post_permission: type[BasePermission] = AllowAny

    def get_permissions(self) -> list[BasePermission]:
        return [self.post_permission() if self.request.method == "POST" else AllowAny()]


# --- catalog, readiness -------------------------------------------------------------------------


class CatalogView(ApiView):
    @extend_schema(
        summary="The 8 KEP-614 catalog tests",
        operation_id="catalog_list",
        responses=sz.CatalogTestSerializer(many=True),
    )
    def get(self, request: Request) -> HttpResponse:
        # A catalog change bumps the publication: encoded once per publication, like readiness.
        body = publication.derived(
            "catalog-json",
            lambda _data: JSONRenderer().render(
                sz.CatalogTestSerializer(CatalogTest.objects.all(), many=True).data
            ),
        )
        return HttpResponse(body, content_type="application/json")


class ReadinessView(ApiView):
    @extend_schema(
        summary="Graduation criteria with verdicts and evidence", responses=sz.ReadinessSerializer
    )
    def get(self, request: Request) -> HttpResponse:
        # The published evaluation, encoded once per publication (dashboard.domain.readiness): it is
        # already the answer's shape (the tests check it against ReadinessSerializer).
        return HttpResponse(publication.published_json(), content_type="application/json")


# --- clusters and runs ----------------------------------------------------------------------------


class ClustersView(GetOpenPostNeeds):
    post_permission = VendorOrMaintainerToken

    @extend_schema(
        summary="Registered clusters (kubeconfigs are never returned)",
        responses=sz.ClusterSerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        newest = Run.objects.filter(cluster=OuterRef("pk")).order_by("-created").values("id")[:1]
        rows = list(
            Cluster.objects.select_related("plugin", "owner").annotate(last_run_id=Subquery(newest))
        )
        runs = Run.objects.in_bulk([c.last_run_id for c in rows if c.last_run_id])
        for c in rows:
            c.last_run = runs.get(c.last_run_id)  # type: ignore[attr-defined]  # read by get_last_run
        return Response(sz.ClusterSerializer(rows, many=True).data)

    @extend_schema(
        summary="Register a cluster (vendor token for its plugin, or maintainer)",
        request={"multipart/form-data": sz.ClusterRegistrationSerializer},
        responses={201: sz.ClusterSerializer, **post_errors(401, 403, 409, 429)},
    )
    def post(self, request: Request) -> Response:
        token = token_of(request)
        # Each attempt makes the dashboard contact a server someone named: counted per token and
        # address whether it succeeds or not (dashboard.web.ratelimit, the pages' form counts there too).
        wait = registration_wait(request._request, f"token:{token.pk}")
        if wait:
            raise TooManyRequests(
                wait,
                f"too many cluster registrations (limit {settings.CLUSTER_REGISTER_RATE_LIMIT} s)",
            )
        upload = request.FILES.get("kubeconfig")
        try:
            text = (
                upload.read(KUBECONFIG_MAX_BYTES + 1).decode("utf-8")
                if upload
                else request.POST.get("kubeconfig", "")
            )
        except UnicodeDecodeError as exc:
            raise ApiError(400, "kubeconfig: the file is not UTF-8 text") from exc
        vendor = token.vendor if token.role == "vendor" else None
        try:
            cluster = register_cluster(
                data=request.POST,
                kubeconfig=text,
                owner=vendor,
                allowed_plugin_ids=set(vendor.plugins.values_list("id", flat=True))
                if vendor
                else None,
                actor=str(vendor or token.user),
            )
        except ClusterError as exc:
            raise ApiError(
                exc.status,
                exc.message,
                field=exc.field,
                url=request.build_absolute_uri(exc.url) if exc.url else None,
            ) from exc
        cluster = Cluster.objects.select_related("plugin", "owner").get(pk=cluster.pk)
        return Response(sz.ClusterSerializer(cluster).data, status=201)


class ClusterEditView(ApiView):
    permission_classes = [ClusterOwnerOrMaintainer]

    @extend_schema(
        summary="Change a cluster (owner or maintainer token; audited with old and new values)",
        description="Fields left out keep their values; a kubeconfig left out keeps the stored "
        "one. A vendor's change of plugin or server withdraws the approval; a maintainer's "
        "change approves. Registering a taken name is refused (409): this is how to change it.",
        request={"multipart/form-data": sz.ClusterEditSerializer},
        responses={200: sz.ClusterEditedSerializer, **post_errors(401, 403, 404, 429)},
    )
    def patch(self, request: Request, name: str) -> Response:
        token = token_of(request)
        cluster = Cluster.objects.select_related("plugin", "owner").filter(name=name).first()
        if cluster is None:
            raise ApiError(404, f"no cluster named {name!r}")
        self.check_object_permissions(request, cluster)
        upload = request.FILES.get("kubeconfig")
        body = request.data
        if not hasattr(body, "get"):
            raise ApiError(400, "the body must be an object of fields")
        try:
            text = (
                upload.read(KUBECONFIG_MAX_BYTES + 1).decode("utf-8")
                if upload
                else str(body.get("kubeconfig", "") or "")
            )
        except UnicodeDecodeError as exc:
            raise ApiError(400, "kubeconfig: the file is not UTF-8 text") from exc
        if text.strip():  # a new kubeconfig makes the dashboard contact a server: counted
            wait = registration_wait(request._request, f"token:{token.pk}")
            if wait:
                raise TooManyRequests(
                    wait,
                    f"too many cluster registrations (limit {settings.CLUSTER_REGISTER_RATE_LIMIT} s)",
                )
        data = {k: v for k, v in shown(cluster).items() if k != "server"}
        data.update({k: body.get(k) for k in data if k in body})
        vendor = token.vendor if token.role == "vendor" else None
        try:
            edit = update_cluster(
                cluster,
                data=data,
                kubeconfig=text,
                allowed_plugin_ids=set(vendor.plugins.values_list("id", flat=True))
                if vendor
                else None,
                actor=str(vendor or token.user),
            )
        except ClusterError as exc:
            raise ApiError(exc.status, exc.message, field=exc.field) from exc
        cluster = Cluster.objects.select_related("plugin", "owner").get(pk=cluster.pk)
        return Response({**sz.ClusterSerializer(cluster).data, "changes": edit.changes}, status=200)


class ClusterRunsView(ApiView):
    permission_classes = [ClusterOwnerOrMaintainer]

    @extend_schema(
        summary="Request a battery run (owner or maintainer token)",
        request=sz.RunRequestSerializer,
        responses={202: sz.RunQueuedSerializer, **post_errors(401, 403, 404, 409, 429)},
    )
    def post(self, request: Request, name: str) -> Response:
        token = token_of(request)
        cluster = Cluster.objects.filter(name=name).first()
        if cluster is None:
            raise ApiError(404, f"no cluster named {name!r}")
        self.check_object_permissions(request, cluster)
        try:
            body = request.data
        except exceptions.ParseError as exc:
            raise ApiError(400, "the body is not valid JSON") from exc
        battery = (body.get("battery") if hasattr(body, "get") else None) or "all"
        try:
            run = request_run(cluster, str(battery), trigger=Run.Trigger.API, user=token.user)
        except RunRequestError as exc:
            raise ApiError(exc.status, exc.message) from exc
        return Response(
            {"run": run.id, "url": run.get_absolute_url(), "state": run.state}, status=202
        )


class ClusterApproveView(ApiView):
    permission_classes = [MaintainerToken]

    @extend_schema(
        summary="Approve a cluster: its runs count from now on (maintainer token; audited)",
        request=None,
        responses={200: sz.ApprovedSerializer, **post_errors(401, 403, 404, 409, 429)},
    )
    def post(self, request: Request, name: str) -> Response:
        token = token_of(request)
        cluster = Cluster.objects.select_related("plugin").filter(name=name).first()
        if cluster is None:
            raise ApiError(404, f"no cluster named {name!r}")
        try:
            cluster = approve_cluster(cluster, token.user or "maintainer token")
        except TrustError as exc:
            raise ApiError(exc.status, exc.message) from exc
        return Response({"name": cluster.name, "approved": cluster.approved})


@extend_schema(exclude=True)
class ClusterApproveSlashView(ClusterApproveView):
    """`…/approve/`: the same call; the schema names the contract's form only."""


class ClusterModeView(ApiView):
    permission_classes = [MaintainerToken]

    @extend_schema(
        summary="Change how a cluster is tested: by the workers (kubeconfig) or by its agent "
        "(maintainer token; audited with a reason; clears the approval)",
        request=sz.ModeRequestSerializer,
        responses={200: sz.ModeSerializer, **post_errors(401, 403, 404, 409, 429)},
    )
    def post(self, request: Request, name: str) -> Response:
        token = token_of(request)
        cluster = Cluster.objects.filter(name=name).first()
        if cluster is None:
            raise ApiError(404, f"no cluster named {name!r}")
        data = request.data if isinstance(request.data, dict) else {}
        try:
            cluster = set_mode(
                cluster,
                str(data.get("mode") or ""),
                token.user or "maintainer token",
                str(data.get("reason") or ""),
            )
        except TrustError as exc:
            raise ApiError(exc.status, exc.message) from exc
        return Response({"name": cluster.name, "mode": cluster.mode, "approved": cluster.approved})


class RunVerifyView(ApiView):
    permission_classes = [MaintainerToken]

    @extend_schema(
        summary="Verify a self-reported (agent) run: only then may it count (maintainer token; "
        "audited)",
        request=sz.ReasonSerializer,
        responses={200: sz.RunVerifiedSerializer, **post_errors(401, 403, 404, 409, 429)},
    )
    def post(self, request: Request, pk: int) -> Response:
        token = token_of(request)
        run = Run.objects.select_related("cluster").filter(pk=pk).first()
        if run is None:
            raise ApiError(404, f"no run {pk}")
        data = request.data if isinstance(request.data, dict) else {}
        try:
            run = verify_agent_run(
                run, token.user or "maintainer token", str(data.get("reason") or "")
            )
        except TrustError as exc:
            raise ApiError(exc.status, exc.message) from exc
        return Response(
            {
                "run": run.pk,
                "trust": "self-reported",
                "verified_at": run.agent_verified_at.isoformat() if run.agent_verified_at else None,
            }
        )


class RunDetailView(ApiView, generics.RetrieveAPIView):
    queryset = Run.objects.select_related("cluster", "plugin")
    serializer_class = sz.RunSerializer

    @extend_schema(
        summary="A run with state, timings, fingerprint and per-test results",
        responses={200: sz.RunSerializer, **errors(404)},
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)


# --- submissions ------------------------------------------------------------------------------------


class SubmissionFilter(django_filters.FilterSet):
    plugin = django_filters.CharFilter(field_name="plugin__slug", help_text="a plugin's slug")
    status = django_filters.ChoiceFilter(choices=Submission.Status.choices)

    class Meta:
        model = Submission
        fields = ["plugin", "status"]


class SubmissionPages(BasePagination):
    """The contract's `{"count","next","previous","results"}`: `page` from 1, `page_size` at most
    100 (`limit` is its older name); a page past the end is empty, not an error."""

    max_page_size = 100

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> list[Any]:
        params = request.query_params
        try:
            self.size = min(
                max(int(params.get("page_size") or params.get("limit") or 100), 1),
                self.max_page_size,
            )
            self.page = max(int(params.get("page", 1)), 1)
        except ValueError as exc:
            raise ApiError(400, "page and page_size must be numbers") from exc
        self.request = request
        self.total = queryset.count()
        start = (self.page - 1) * self.size
        if start >= self.total:
            return []  # past the end: no query (an OFFSET past 2**63 is a database error, a 500)
        return list(queryset[start : start + self.size])

    def link(self, number: int) -> str | None:
        if number < 1 or (number - 1) * self.size >= self.total:
            return None
        query = self.request.query_params.copy()
        query["page"], query["page_size"] = str(number), str(self.size)
        query.pop("limit", None)
        return self.request.build_absolute_uri(f"{self.request.path}?{query.urlencode()}")

    def get_paginated_response(self, data: Any) -> Response:
        return Response(
            {
                "count": self.total,
                "next": self.link(self.page + 1),
                "previous": self.link(self.page - 1),
                "results": data,
            }
        )

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        link = {"type": "string", "nullable": True, "format": "uri"}
        return {
            "type": "object",
            "required": ["count", "next", "previous", "results"],
            "properties": {
                "count": {"type": "integer"},
                "next": link,
                "previous": link,
                "results": schema,
            },
        }

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        number = {"type": "integer", "minimum": 1}
        return [
            {
                "name": "page",
                "in": "query",
                "required": False,
                "schema": number,
                "description": "from 1",
            },
            {
                "name": "page_size",
                "in": "query",
                "required": False,
                "schema": {**number, "maximum": self.max_page_size},
                "description": "at most 100 (default)",
            },
            {
                "name": "limit",
                "in": "query",
                "required": False,
                "schema": {**number, "maximum": self.max_page_size},
                "description": "the older name of page_size",
            },
        ]


class SubmissionsView(GetOpenPostNeeds, generics.ListAPIView):
    post_permission = VendorToken
    serializer_class = sz.SubmissionListItemSerializer
    pagination_class = SubmissionPages
    filterset_class = SubmissionFilter

    def get_queryset(self) -> QuerySet[Submission]:
        return (
            Submission.objects.without_content()
            .defer("report", "warnings")  # results: the policy's qualifying answer reads them
            .select_related("plugin", "vendor")
            .order_by("-created", "-id")
        )

    @extend_schema(
        summary="Submissions, newest first (list items omit per-test details)",
        responses={200: sz.SubmissionListItemSerializer(many=True), **errors(400)},
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        status = request.query_params.get("status")
        if status and status not in Submission.Status.values:
            raise ApiError(
                400,
                f"unknown status {status!r}: expected one of {', '.join(Submission.Status.values)}",
            )
        return super().get(request, *args, **kwargs)

    @extend_schema(
        summary="Submit a result file (vendor token for that plugin)",
        request={"multipart/form-data": sz.SubmissionUploadSerializer},
        responses={201: sz.SubmissionSerializer, **post_errors(401, 403, 409, 422, 429)},
    )
    def post(self, request: Request) -> Response:
        token = token_of(request)
        vendor = token.vendor
        if vendor is None:  # the permission class admits vendor tokens only
            raise ApiError(403, "only a vendor token may submit results")
        upload = request.FILES.get("file")
        try:
            sub = create_submission(
                vendor=vendor,
                allowed_plugin_ids=set(vendor.plugins.values_list("id", flat=True)),
                plugin=request.POST.get("plugin"),
                plugin_version=request.POST.get("plugin_version"),
                kubernetes_version=request.POST.get("kubernetes_version"),
                proxier=request.POST.get("proxier"),
                cluster=request.POST.get("cluster"),
                fileobj=upload,
                filename=(upload.name or "") if upload else "",
                uploaded_by=f"{vendor.name} (token {token.hint})",
            )
        except SubmissionError as exc:
            raise ApiError(exc.status, exc.message, **exc.extra) from exc
        return Response(sz.SubmissionSerializer(sub).data, status=201)


class SubmissionDetailView(ApiView, generics.RetrieveAPIView):
    queryset = Submission.objects.without_content().select_related(
        "plugin", "vendor", "reviewed_by"
    )
    serializer_class = sz.SubmissionSerializer

    @extend_schema(
        summary="One submission, with its current status",
        responses={200: sz.SubmissionSerializer, **errors(404)},
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)


class SubmissionReviewView(ApiView):
    permission_classes = [MaintainerToken]
    verify = True

    def post(self, request: Request, pk: int) -> Response:
        token = token_of(request)
        sub = (
            Submission.objects.without_content()
            .select_related("plugin", "vendor")
            .filter(pk=pk)
            .first()
        )
        if sub is None:
            raise ApiError(404, f"no submission {pk}")
        try:
            body = request.data
        except exceptions.ParseError:
            body = {}
        reason = str(body.get("reason", "")) if hasattr(body, "get") else ""
        run_date = str(body.get("run_date") or "") if hasattr(body, "get") else ""
        try:
            review(
                sub,
                user=token.user,
                verify=self.verify,
                reason=reason,
                actor=f"{token.role} token {token.hint}",
                run_date=run_date,
            )
        except SubmissionError as exc:
            raise ApiError(exc.status, exc.message) from exc
        return Response(sz.SubmissionSerializer(sub).data)


REVIEW_SCHEMA: dict[str, Any] = {
    "request": sz.ReviewRequestSerializer,
    "responses": {200: sz.SubmissionSerializer, **post_errors(401, 403, 404, 429)},
}


@extend_schema(summary="Verify a submission (maintainer token)", **REVIEW_SCHEMA)
class SubmissionVerifyView(SubmissionReviewView):
    verify = True


@extend_schema(summary="Reject a submission with a reason (maintainer token)", **REVIEW_SCHEMA)
class SubmissionRejectView(SubmissionReviewView):
    verify = False


@extend_schema(exclude=True)
class SubmissionVerifySlashView(SubmissionVerifyView):
    """`…/verify/`: the same call; the schema names the contract's form only."""


@extend_schema(exclude=True)
class SubmissionRejectSlashView(SubmissionRejectView):
    pass


# --- runs posted by the in-cluster agent --------------------------------------------------------


class AgentRunsView(ApiView):
    """POST agent-runs/: a run made by the in-cluster agent (domain logic: dashboard/domain/agent_runs.py)."""

    permission_classes = [VendorToken]

    @extend_schema(
        summary="A run made by the in-cluster agent (vendor token of the cluster's plugin); the "
        "cluster is registered on first contact, unapproved",
        request={"application/json": OpenApiTypes.OBJECT},
        responses={
            201: inline_serializer(
                "AgentRunStored",
                {
                    "run": drf_fields.IntegerField(),
                    "url": drf_fields.CharField(),
                    "state": drf_fields.CharField(),
                    "cluster": drf_fields.CharField(),
                    "cluster_approved": drf_fields.BooleanField(),
                    "emulated": drf_fields.BooleanField(),
                },
            ),
            **post_errors(401, 403, 409, 422, 429),
        },
    )
    def post(self, request: Request) -> Response:

        token = token_of(request)
        vendor = token.vendor
        if vendor is None:  # the permission class admits vendor tokens only
            raise ApiError(403, "only a vendor token may send agent runs")
        # The raw bytes, bounded (the body guard refused a larger Content-Length unread).
        raw = request._request.read(max_bytes() + 1)
        try:
            run = accept(raw, vendor, actor=str(vendor), key=request.META.get(KEY_HEADER, "") or "")
        except AgentRunError as exc:
            raise ApiError(exc.status, exc.message) from exc
        return Response(
            {
                "run": run.pk,
                "url": run.get_absolute_url(),
                "state": run.state,
                "cluster": run.cluster.name,
                "cluster_approved": run.cluster.approved,
                "emulated": run.emulated,
            },
            status=201,
        )
