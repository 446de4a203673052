from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from dashboard.web.ratelimit import LockoutAdminAuthenticationForm
from dashboard.web.views import front
from dashboard.web.views import register as register_views
from dashboard.web.views import schedules as schedule_views
from dashboard.web.views.login import LoginPage, admin_login_page

admin.site.login_form = LockoutAdminAuthenticationForm

urlpatterns = [
    path("", front.index, name="readiness"),
    path("favicon.ico", front.favicon, name="favicon"),
    path("robots.txt", front.robots, name="robots"),
    # Django's LoginView, refusing a user name + address after LOGIN_RATE_LIMIT failures.
    # It says why the visitor was sent there, and shows no form to a logged-in user.
    path("login/", LoginPage.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/", include("dashboard.web.api.urls")),
    # Periodic schedules and notification channels (maintainers).
    path("schedules/", schedule_views.schedule_list, name="schedules"),
    path("schedules/new/", schedule_views.schedule_new, name="schedule-new"),
    path("schedules/<int:schedule_id>/edit/", schedule_views.schedule_edit, name="schedule-edit"),
    path(
        "schedules/<int:schedule_id>/pause/", schedule_views.schedule_pause, name="schedule-pause"
    ),
    path(
        "schedules/<int:schedule_id>/resume/",
        schedule_views.schedule_resume,
        name="schedule-resume",
    ),
    path(
        "schedules/<int:schedule_id>/delete/",
        schedule_views.schedule_delete,
        name="schedule-delete",
    ),
    path("schedules/channels/", schedule_views.channels, name="notify-channels"),
    path(
        "schedules/channels/<int:channel_id>/toggle/",
        schedule_views.channel_toggle,
        name="notify-channel-toggle",
    ),
    path(
        "schedules/channels/<int:channel_id>/delete/",
        schedule_views.channel_delete,
        name="notify-channel-delete",
    ),
    path(
        "clusters/<slug:name>/schedules/",
        schedule_views.cluster_schedules,
        name="cluster-schedules",
    ),
    path(
        "clusters/<slug:name>/schedules/new/",
        schedule_views.cluster_schedule_new,
        name="cluster-schedule-new",
    ),
    path("clusters/new/", register_views.register, name="cluster-register"),
    path(
        "", include("dashboard.web.views.urls")
    ),  # the pages: matrix, clusters, runs, submissions, review
    # The admin's log-in under the same lockout as /login/ (dashboard.web.ratelimit).
    # Logged-in users who are not staff get the dashboard's styled refusal there.
    path("admin/login/", admin_login_page, name="admin-login"),
    path("admin/", admin.site.urls),
]
