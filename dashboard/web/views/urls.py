"""The pages' routes (contract §Pages); included from dashboard/urls.py."""

from __future__ import annotations

from django.urls import path

from dashboard.web.views import (
    audit,
    cluster_edit,
    clusters,
    matrix,
    plugins,
    review,
    runs,
    submissions,
)

urlpatterns = [
    path("matrix/", matrix.matrix, name="matrix"),
    path("clusters/", clusters.cluster_list, name="clusters"),
    path("clusters/<slug:name>/", clusters.cluster_detail, name="cluster"),
    path("clusters/<slug:name>/edit/", cluster_edit.cluster_edit, name="cluster-edit"),
    path("clusters/<slug:name>/run/", clusters.run_now, name="cluster-run-now"),
    path("clusters/<slug:name>/approve/", clusters.approve, name="cluster-approve"),
    path("clusters/<slug:name>/basic-only/", clusters.basic_only, name="cluster-basic-only"),
    path("clusters/<slug:name>/mode/", clusters.mode, name="cluster-mode"),
    path(
        "clusters/<slug:name>/agent-key/reset/",
        clusters.agent_key_reset,
        name="cluster-agent-key-reset",
    ),
    path(
        "plugins/<slug:slug>/netpol-exemption/",
        plugins.netpol_exemption,
        name="plugin-netpol-exemption",
    ),
    path("runs/<int:run_id>/", runs.run_detail, name="run"),
    path("runs/<int:run_id>/progress/", runs.run_progress, name="run-progress"),
    path("runs/<int:run_id>/verify/", runs.run_verify, name="run-verify"),
    path("runs/<int:run_id>/junit.xml", runs.run_junit, name="run-junit"),
    path("plugins/<slug:slug>/", plugins.plugin_detail, name="plugin"),
    path("badge/stage.svg", plugins.stage_badge, name="stage-badge"),
    path("badge/<slug:slug>.svg", plugins.badge, name="badge"),
    path("submissions/", submissions.submission_list, name="submissions"),
    path("submissions/new/", submissions.submission_new, name="submission-new"),
    path("submissions/<int:sub_id>/", submissions.submission_detail, name="submission"),
    path(
        "submissions/<int:sub_id>/download/",
        submissions.submission_download,
        name="submission-download",
    ),
    path(
        "submissions/<int:sub_id>/review/", submissions.submission_review, name="submission-review"
    ),
    path("review/", review.review_page, name="review"),
    path("review/signoff/", review.sign_off, name="signoff"),
    path("review/signoffs/<uuid:uuid>/", review.signoff_detail, name="signoff-detail"),
    path("review/report/", review.report_page, name="report-page"),
    path("review/report.md", review.report_md, name="report"),
    path("audit/", audit.audit_list, name="audit"),
]
