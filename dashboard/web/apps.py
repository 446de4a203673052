from __future__ import annotations

from django.apps import AppConfig


class WebConfig(AppConfig):
    """Pages, API, template tags and static files; its models are the domain's."""

    name = "dashboard.web"
    label = "web"
