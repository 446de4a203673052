"""Creates a vendor (and any unknown plugin) or a maintainer, and prints a new API token last."""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from dashboard.domain.models import ApiToken, AuditEvent, Plugin, Vendor
from dashboard.domain.roles import maintainers_group

SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,59}$")


class Command(BaseCommand):
    help = "Issue an API token for a vendor (--vendor NAME --plugins a,b) or a maintainer (--maintainer NAME)."

    def add_arguments(self, parser: CommandParser) -> None:
        who = parser.add_mutually_exclusive_group(required=True)
        who.add_argument("--vendor", help="vendor name (created when unknown)")
        who.add_argument("--maintainer", help="maintainer user name (created when unknown)")
        parser.add_argument("--plugins", help="comma-separated plugin slugs the vendor acts for")

    @transaction.atomic
    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["vendor"]:
            name = opts["vendor"].strip()
            if not name:
                raise CommandError("--vendor needs a name")
            slugs = [s.strip() for s in (opts["plugins"] or "").split(",") if s.strip()]
            if not slugs:
                raise CommandError("--vendor needs --plugins SLUG[,SLUG…]")
            for slug in slugs:
                if not SLUG_RE.match(slug):
                    raise CommandError(
                        f"invalid plugin slug {slug!r}: lowercase letters, digits and dashes"
                    )
            vendor, _ = Vendor.objects.get_or_create(name=name)
            for slug in slugs:
                plugin, created = Plugin.objects.get_or_create(
                    slug=slug,
                    defaults={"name": slug, "in_tree": False, "implements_network_policy": True},
                )
                if created:
                    self.stderr.write(
                        f"created plugin {slug} (out-of-tree, implements NetworkPolicy)"
                    )
                vendor.plugins.add(plugin)
            _, token = ApiToken.issue(role=ApiToken.Role.VENDOR, vendor=vendor)
            AuditEvent.record("manage.py", "token.issue", f"vendor {name}", plugins=slugs)
            self.stderr.write(
                f"vendor {name} acts for: {', '.join(sorted(vendor.plugins.values_list('slug', flat=True)))}"
            )
        else:
            name = opts["maintainer"].strip()
            if not name:
                raise CommandError("--maintainer needs a name")
            if opts["plugins"]:
                raise CommandError("--plugins is for vendors")
            user, _ = get_user_model().objects.get_or_create(username=name)
            user.groups.add(maintainers_group())
            _, token = ApiToken.issue(role=ApiToken.Role.MAINTAINER, user=user)
            AuditEvent.record("manage.py", "token.issue", f"maintainer {name}")
        self.stdout.write(token)
