from django.http import HttpRequest, JsonResponse
from django.urls import path, re_path
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.renderers import (
    OpenApiJsonRenderer,
    OpenApiJsonRenderer2,
    OpenApiYamlRenderer,
    OpenApiYamlRenderer2,
)
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from dashboard.web.api import views


class SchemaView(SpectacularAPIView):
    """The OpenAPI 3 schema generated from the views; JSON unless YAML is asked for. Plain
    `application/json` (what most HTTP libraries send for JSON APIs) gets the JSON too."""

    renderer_classes = [
        OpenApiJsonRenderer,
        OpenApiJsonRenderer2,
        OpenApiYamlRenderer,
        OpenApiYamlRenderer2,
    ]


@csrf_exempt
def not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    """Anything else under /api/v1/ (an unknown path, a name no cluster can have): JSON too."""
    return JsonResponse({"error": "not found"}, status=404)


urlpatterns = [
    path("catalog/", views.CatalogView.as_view(), name="api-catalog"),
    path("readiness/", views.ReadinessView.as_view(), name="api-readiness"),
    path("schema/", SchemaView.as_view(), name="api-schema"),
    # Swagger UI from local static files (drf-spectacular-sidecar), its initializer a script
    # file of its own: nothing inline, nothing from a CDN.
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("clusters/", views.ClustersView.as_view(), name="api-clusters"),
    path("clusters/<slug:name>/", views.ClusterEditView.as_view(), name="api-cluster"),
    path("clusters/<slug:name>/runs/", views.ClusterRunsView.as_view(), name="api-cluster-runs"),
    path("clusters/<slug:name>/approve", views.ClusterApproveView.as_view()),
    path(
        "clusters/<slug:name>/approve/",
        views.ClusterApproveSlashView.as_view(),
        name="api-cluster-approve",
    ),
    path("clusters/<slug:name>/mode", views.ClusterModeView.as_view(), name="api-cluster-mode"),
    path("runs/<int:pk>/", views.RunDetailView.as_view(), name="api-run"),
    path("runs/<int:pk>/verify", views.RunVerifyView.as_view(), name="api-run-verify"),
    path("agent-runs/", views.AgentRunsView.as_view(), name="api-agent-runs"),
    path("submissions/", views.SubmissionsView.as_view(), name="api-submissions"),
    path("submissions/<int:pk>/", views.SubmissionDetailView.as_view(), name="api-submission"),
    path("submissions/<int:pk>/verify", views.SubmissionVerifyView.as_view()),
    path(
        "submissions/<int:pk>/verify/",
        views.SubmissionVerifySlashView.as_view(),
        name="api-submission-verify",
    ),
    path("submissions/<int:pk>/reject", views.SubmissionRejectView.as_view()),
    path(
        "submissions/<int:pk>/reject/",
        views.SubmissionRejectSlashView.as_view(),
        name="api-submission-reject",
    ),
    re_path(r"^(?P<rest>[\s\S]*)$", not_found),  # newlines too: a name may carry any byte
]
