"""/login/ that says why the visitor was sent there and never shows its form to someone who is
already logged in; and the admin's log-in, which refuses logged-in non-staff users with the
dashboard's own styled page instead of Django's."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.utils.http import url_has_allowed_host_and_scheme

from dashboard.domain.roles import is_maintainer, role_of
from dashboard.web.ratelimit import RateLimitedLoginView, admin_login
from dashboard.web.views.access import forbidden

# What a page behind the log-in is for, by the start of its path.
WHY = (
    ("/review/", "Review (sign-offs and verifying submissions) is for maintainers."),
    ("/audit/", "The audit trail is for maintainers."),
    ("/schedules/", "Periodic schedules are managed by maintainers."),
    ("/submissions/new/", "Uploading results is for plugin vendors."),
    ("/clusters/new/", "Registering a cluster is for plugin vendors and maintainers."),
    ("/admin/", "The Django admin is for operators."),
)


def why_for(next_url: str) -> str:
    if not next_url:
        return ""
    for prefix, why in WHY:
        if next_url.startswith(prefix):
            return f"Log in to continue to {next_url}. {why}"
    if next_url.endswith(("/edit/", "/run/", "/approve/", "/basic-only/")):
        return f"Log in to continue to {next_url}: changing a cluster or starting a run needs an account."
    if "/download/" in next_url:
        return f"Log in to continue to {next_url}: files are for maintainers and the vendor that uploaded them."
    return f"Log in to continue to {next_url}."


def closed_to(user: Any, next_url: str) -> bool:
    """Whether a logged-in user's role keeps them out of the page they were sent from (the
    page would answer 403): then the log-in page says so instead of linking back to it."""
    maintainer_only = ("/review/", "/audit/", "/schedules/")
    if next_url.startswith(maintainer_only):
        return not is_maintainer(user)
    if next_url.startswith("/submissions/new/"):
        return role_of(user) != "vendor"
    if next_url.startswith("/admin/"):
        return not user.is_staff
    return False


class LoginPage(RateLimitedLoginView):
    template_name = "accounts/login.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        nxt = self.request.GET.get("next") or self.request.POST.get("next") or ""
        if not url_has_allowed_host_and_scheme(nxt, allowed_hosts={self.request.get_host()}):
            nxt = ""
        user = self.request.user
        closed = bool(nxt) and user.is_authenticated and closed_to(user, nxt)
        context.update(
            why=why_for(nxt),
            next_safe="/" if closed else nxt or "/",
            closed=closed,
            closed_why=next((w for prefix, w in WHY if nxt.startswith(prefix)), "")
            if closed
            else "",
            next_url=nxt,
        )
        return context


def admin_login_page(
    request: HttpRequest, extra_context: dict[str, Any] | None = None
) -> HttpResponse:
    user = request.user
    if user.is_authenticated and not user.is_staff:
        who = "a maintainer" if is_maintainer(user) else f"a {role_of(user)}"
        return forbidden(
            request,
            f"The Django admin is for operators (staff accounts). You are logged in as {who}: "
            "everything you may do is on the dashboard's own pages"
            + (" (Review, Schedules, Audit)." if is_maintainer(user) else "."),
        )
    return admin_login(request, extra_context)
