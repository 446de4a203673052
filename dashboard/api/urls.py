from django.urls import path

from . import views

urlpatterns = [
    path("catalog/", views.catalog, name="api-catalog"),
    path("readiness/", views.readiness_view, name="api-readiness"),
    path("schema/", views.schema, name="api-schema"),
    path("clusters/", views.clusters, name="api-clusters"),
    path("clusters/<slug:name>/runs/", views.cluster_runs, name="api-cluster-runs"),
    path("clusters/<slug:name>/approve", views.cluster_approve),
    path("clusters/<slug:name>/approve/", views.cluster_approve, name="api-cluster-approve"),
    path("runs/<int:run_id>/", views.run_detail, name="api-run"),
    path("agent-runs/", views.agent_runs, name="api-agent-runs"),
    path("submissions/", views.submissions, name="api-submissions"),
    path("submissions/<int:sub_id>/", views.submission_detail, name="api-submission"),
    path("submissions/<int:sub_id>/verify", views.submission_verify),
    path("submissions/<int:sub_id>/verify/", views.submission_verify, name="api-submission-verify"),
    path("submissions/<int:sub_id>/reject", views.submission_reject),
    path("submissions/<int:sub_id>/reject/", views.submission_reject, name="api-submission-reject"),
]
