from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from dashboard.views import front

urlpatterns = [
    path("", front.index, name="readiness"),
    path("login/", auth_views.LoginView.as_view(template_name="accounts/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/", include("dashboard.api.urls")),
    path("", include("dashboard.views.urls")),  # the pages: matrix, clusters, runs, submissions, review
    path("admin/", admin.site.urls),
]
