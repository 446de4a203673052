"""Maintainers' pages for periodic schedules and notification channels (/schedules/…).

Session login only: these pages never read an API token. Anonymous visitors go to the login
page; signed-in users who are not maintainers get 403. Every change is a POST with CSRF and
ends in a redirect.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django import forms
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.validators import URLValidator, validate_email
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from dashboard.domain import notify, trust
from dashboard.domain import schedules as ops
from dashboard.domain.catalog import Battery
from dashboard.domain.models import (
    AuditEvent,
    Cluster,
    NotificationChannel,
    NotificationLog,
    Schedule,
)
from dashboard.domain.roles import is_maintainer
from dashboard.web.views.access import forbidden


def maintainer_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Anonymous visitors log in; others get the styled 403 page (a refusal, not an exception)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not is_maintainer(request.user):
            return forbidden(request, "Only maintainers manage schedules.")
        return view(request, *args, **kwargs)

    return wrapper


class ScheduleForm(forms.Form):
    cluster = forms.ModelChoiceField(
        queryset=Cluster.objects.order_by("name"), to_field_name="name"
    )
    battery = forms.ChoiceField(choices=Battery.choices, initial=Battery.BASIC)
    interval_minutes = forms.IntegerField(
        min_value=5,
        max_value=31 * 24 * 60,
        initial=24 * 60,
        help_text="How often the scheduler starts the battery",
    )
    grace_minutes = forms.IntegerField(
        min_value=0,
        max_value=7 * 24 * 60,
        initial=60,
        help_text="How long past the interval before it counts as down",
    )


class ChannelForm(forms.Form):
    kind = forms.ChoiceField(choices=NotificationChannel.Kind.choices)
    target = forms.CharField(
        max_length=500, help_text="https://… for a webhook, an address for e-mail"
    )
    secret = forms.CharField(
        max_length=200, required=False, help_text="Webhooks: HMAC-SHA256 key for X-Signature"
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        target = data.get("target", "")
        if data.get("kind") == NotificationChannel.Kind.WEBHOOK:
            try:
                URLValidator(schemes=["http", "https"])(target)
            except forms.ValidationError:
                self.add_error("target", "Enter an http:// or https:// URL.")
            else:
                self._guard(target)
        elif data.get("kind") == NotificationChannel.Kind.EMAIL:
            try:
                validate_email(target)
            except forms.ValidationError:
                self.add_error("target", "Enter a valid e-mail address.")
        return data

    def _guard(self, target: str) -> None:
        """The webhook guard (dashboard.domain.notify.check_webhook): a URL whose host resolves to a
        loopback, private, link-local… address is refused here already; one whose host does
        not resolve yet is kept (delivery checks again, every time)."""
        try:
            notify.check_webhook(target)
        except notify.WebhookRefused as exc:
            self._forget_credentials(target)
            if "does not resolve" not in str(exc) and "did not resolve" not in str(exc):
                self.add_error("target", f"{str(exc)[0].upper()}{str(exc)[1:]}.")

    def _forget_credentials(self, target: str) -> None:
        """A refused URL is shown back to its author without the user name and password it
        carried: a secret typed into the wrong field is never rendered into a page."""
        parts = urlsplit(target)
        if parts.username is None and parts.password is None:
            return
        data = dict(self.data.items())
        host = parts.netloc.rpartition("@")[2]  # host and port, without the user information
        data["target"] = urlunsplit(parts._replace(netloc=host))
        self.data = data


def _list(request: HttpRequest, cluster: Cluster | None) -> HttpResponse:
    qs = Schedule.objects.filter(cluster=cluster) if cluster else Schedule.objects.all()
    rows = ops.statuses(qs)
    form = ScheduleForm(initial={"cluster": cluster.name} if cluster else None)
    # One warning per cluster whose periodic basic job is spoilt by connectivity runs (trust.py).
    clusters = {row.schedule.cluster_id: row.schedule.cluster for row in rows}
    conflicts = [
        {"cluster": c.name, "text": text}
        for c in clusters.values()
        if (text := trust.periodic_conflict(c))
    ]
    return render(
        request,
        "schedules/list.html",
        {
            "rows": rows,
            "form": form,
            "cluster": cluster,
            "conflicts": conflicts,
            "channels": NotificationChannel.objects.all(),
        },
    )


@maintainer_required
@require_http_methods(["GET", "HEAD"])
def schedule_list(request: HttpRequest) -> HttpResponse:
    return _list(request, None)


@maintainer_required
@require_http_methods(["GET", "HEAD"])
def cluster_schedules(request: HttpRequest, name: str) -> HttpResponse:
    return _list(request, get_object_or_404(Cluster, name=name))


def _create(request: HttpRequest, cluster: Cluster | None) -> HttpResponse:
    data = request.POST.copy() if request.method == "POST" else None
    if data is not None and cluster is not None:
        data["cluster"] = cluster.name
    form = ScheduleForm(data, initial={"cluster": cluster.name} if cluster else None)
    if request.method == "POST" and form.is_valid():
        try:
            schedule = ops.create_schedule(
                form.cleaned_data["cluster"],
                battery=form.cleaned_data["battery"],
                interval_minutes=form.cleaned_data["interval_minutes"],
                grace_minutes=form.cleaned_data["grace_minutes"],
                user=request.user,
            )
        except ops.ScheduleError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Scheduled: {schedule}.")
            return redirect(
                f"/clusters/{schedule.cluster.name}/schedules/" if cluster else "/schedules/"
            )
    return render(
        request,
        "schedules/form.html",
        {"form": form, "cluster": cluster, "schedule": None},
        status=400 if request.method == "POST" else 200,
    )


@maintainer_required
@require_http_methods(["GET", "HEAD", "POST"])
def schedule_new(request: HttpRequest) -> HttpResponse:
    return _create(request, None)


@maintainer_required
@require_http_methods(["GET", "HEAD", "POST"])
def cluster_schedule_new(request: HttpRequest, name: str) -> HttpResponse:
    return _create(request, get_object_or_404(Cluster, name=name))


@maintainer_required
@require_http_methods(["GET", "HEAD", "POST"])
def schedule_edit(request: HttpRequest, schedule_id: int) -> HttpResponse:
    schedule = get_object_or_404(Schedule.objects.select_related("cluster"), pk=schedule_id)
    data = request.POST.copy() if request.method == "POST" else None
    if data is not None:
        data["cluster"] = schedule.cluster.name  # a schedule stays on its cluster
    form = ScheduleForm(
        data,
        initial={
            "cluster": schedule.cluster.name,
            "battery": schedule.battery,
            "interval_minutes": schedule.interval_minutes,
            "grace_minutes": schedule.grace_minutes,
        },
    )
    form.fields["cluster"].disabled = True
    if request.method == "POST" and form.is_valid():
        try:
            ops.update_schedule(
                schedule,
                battery=form.cleaned_data["battery"],
                interval_minutes=form.cleaned_data["interval_minutes"],
                grace_minutes=form.cleaned_data["grace_minutes"],
                user=request.user,
            )
        except ops.ScheduleError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Saved: {schedule}.")
            return redirect("/schedules/")
    return render(
        request,
        "schedules/form.html",
        {"form": form, "cluster": schedule.cluster, "schedule": schedule},
        status=400 if request.method == "POST" else 200,
    )


@maintainer_required
@require_POST
def schedule_pause(request: HttpRequest, schedule_id: int) -> HttpResponse:
    schedule = get_object_or_404(Schedule.objects.select_related("cluster"), pk=schedule_id)
    ops.pause_schedule(schedule, user=request.user)
    messages.success(request, f"Paused: {schedule}.")
    return redirect(_back(request))


@maintainer_required
@require_POST
def schedule_resume(request: HttpRequest, schedule_id: int) -> HttpResponse:
    schedule = get_object_or_404(Schedule.objects.select_related("cluster"), pk=schedule_id)
    ops.resume_schedule(schedule, user=request.user)
    messages.success(request, f"Resumed: {schedule}.")
    return redirect(_back(request))


@maintainer_required
@require_http_methods(["GET", "HEAD", "POST"])
def schedule_delete(request: HttpRequest, schedule_id: int) -> HttpResponse:
    schedule = get_object_or_404(Schedule.objects.select_related("cluster"), pk=schedule_id)
    if request.method == "POST":
        label = str(schedule)
        ops.delete_schedule(schedule, user=request.user)
        messages.success(request, f"Deleted: {label}.")
        return redirect("/schedules/")
    return render(request, "schedules/confirm_delete.html", {"schedule": schedule})


def _back(request: HttpRequest) -> str:
    """Back to the list the button was on; only our own paths, never an open redirect."""
    target = request.POST.get("next", "")
    if target.startswith("/schedules/") or (target.startswith("/clusters/") and "//" not in target):
        return target
    return "/schedules/"


# --- Notification channels ------------------------------------------------------------------


@maintainer_required
@require_http_methods(["GET", "HEAD", "POST"])
def channels(request: HttpRequest) -> HttpResponse:
    form = ChannelForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        channel = NotificationChannel.objects.create(**form.cleaned_data)
        AuditEvent.record(request.user, "notify.channel.create", channel, kind=channel.kind)
        messages.success(
            request, f"Added the {channel.get_kind_display()} channel {channel.target}."
        )
        return redirect("/schedules/channels/")
    return render(
        request,
        "schedules/channels.html",
        {
            "form": form,
            "channels": NotificationChannel.objects.all(),
            "log": NotificationLog.objects.select_related("channel")[:50],
        },
        status=400 if request.method == "POST" else 200,
    )


@maintainer_required
@require_POST
def channel_toggle(request: HttpRequest, channel_id: int) -> HttpResponse:
    channel = get_object_or_404(NotificationChannel, pk=channel_id)
    channel.enabled = not channel.enabled
    channel.save(update_fields=["enabled"])
    AuditEvent.record(
        request.user,
        "notify.channel.enable" if channel.enabled else "notify.channel.disable",
        channel,
    )
    return redirect("/schedules/channels/")


@maintainer_required
@require_POST
def channel_delete(request: HttpRequest, channel_id: int) -> HttpResponse:
    channel = get_object_or_404(NotificationChannel, pk=channel_id)
    label = str(channel)
    channel.delete()
    AuditEvent.record(request.user, "notify.channel.delete", label)
    messages.success(request, f"Deleted the channel {label}.")
    return redirect("/schedules/channels/")
