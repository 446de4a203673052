"""`make demo`: the lab, a worker, beat and the web, supervised until Ctrl-C.

Uses Redis at REDIS_URL when it answers; otherwise the embedded broker (kombu's filesystem
transport under var/) and database leases, so nothing but Python is needed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand

from dashboard.roles import maintainers_group

LAB_PORT = int(os.environ.get("LAB_PORT", "8070"))
WEB = os.environ.get("DEMO_ADDR", "127.0.0.1:8000")
DEMO_USERS = [
    # (user name, password, vendor or None for a maintainer, plugin slugs)
    ("maintainer", "maintainer-demo", None, []),
    ("calico-vendor", "calico-demo", "Tigera (Calico)", ["calico"]),
    ("cilium-vendor", "cilium-demo", "Isovalent (Cilium)", ["cilium"]),
]


def redis_reachable(url: str) -> bool:
    try:
        import redis

        return bool(redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=0.5).ping())
    except Exception:
        return False


class Command(BaseCommand):
    help = "Run the whole product locally against the lab's emulated clusters."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("--no-web", action="store_true")
        parser.add_argument("--setup-only", action="store_true", help="set up, start nothing")

    def handle(self, *args, **opts):  # type: ignore[no-untyped-def]
        env = os.environ.copy()
        embedded = settings.EMBEDDED_BROKER
        if not embedded and not redis_reachable(settings.CELERY_BROKER_URL):
            embedded = True
            env["CELERY_BROKER_URL"] = "filesystem://"
        broker = "embedded broker (no Redis found)" if embedded else f"Redis at {settings.CELERY_BROKER_URL}"
        call_command("migrate", verbosity=0)
        self.ensure_users()
        if opts["setup_only"]:
            return
        py, manage = sys.executable, str(settings.BASE_DIR / "manage.py")
        procs: dict[str, tuple[list[str], subprocess.Popen]] = {}
        restarts: dict[str, int] = {}

        def start(name: str, argv: list[str]) -> None:
            procs[name] = (argv, subprocess.Popen(argv, env=env, cwd=settings.BASE_DIR))

        start("lab", [py, manage, "lab", "--profiles", str(settings.BASE_DIR / "lab" / "profiles"),
                      "--port", str(LAB_PORT), "--register", "--kickoff"])
        celery = [py, "-m", "celery", "-A", "workers"]
        start("worker", celery + ["worker", "-l", "warning", "--concurrency", "4", "-n", "demo@%h"])
        start("beat", celery + ["beat", "-l", "warning", "-s", str(settings.VAR_DIR / "celerybeat-schedule")])
        if not opts["no_web"]:
            start("web", [py, manage, "runserver", WEB, "--noreload"])
        # Two vendor submissions made from the lab's own runs once they finish (emulated: never counted).
        threading.Thread(target=self.seed_submissions, name="demo-seed", daemon=True).start()
        self.stdout.write(self.style.SUCCESS(f"\nSCTP readiness dashboard: http://{WEB}/  ({broker})"))
        self.stdout.write("Log in as maintainer / maintainer-demo, calico-vendor / calico-demo, "
                          "cilium-vendor / cilium-demo. Ctrl-C stops everything.\n")
        stop = False

        def on_signal(signum, frame):  # type: ignore[no-untyped-def]
            nonlocal stop
            stop = True

        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGTERM, on_signal)
        try:
            while not stop:
                for name, (argv, proc) in list(procs.items()):
                    if proc.poll() is None:
                        continue
                    # A crashed child is restarted a few times; then the demo stops and says why.
                    restarts[name] = restarts.get(name, 0) + 1
                    if restarts[name] > 3:
                        self.stderr.write(f"{name} keeps exiting (status {proc.returncode}); stopping the demo")
                        stop = True
                        break
                    self.stderr.write(f"{name} exited with status {proc.returncode}; restarting it")
                    start(name, argv)
                time.sleep(0.5)
        finally:
            for _, proc in procs.values():
                if proc.poll() is None:
                    proc.terminate()
            for _, proc in procs.values():
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()

    def seed_submissions(self) -> None:
        from django.db import connection

        from dashboard.demo_seed import seed_submissions

        try:
            made = seed_submissions()
            if made:
                self.stdout.write(f"demo: {len(made)} vendor submissions made from the lab's runs "
                                  f"({', '.join(f'/submissions/{s.id}/' for s in made)})")
        except Exception as exc:  # the demo goes on without them
            self.stderr.write(f"demo: could not seed vendor submissions: {exc}")
        finally:
            connection.close()

    def ensure_users(self) -> None:
        from dashboard.models import Plugin, Vendor

        User = get_user_model()
        if not User.objects.filter(username="admin").exists():
            User.objects.create_superuser("admin", "admin@example.invalid", "admin-demo")
        for username, password, vendor_name, slugs in DEMO_USERS:
            user, created = User.objects.get_or_create(username=username)
            if created:
                user.set_password(password)
                user.save()
            if vendor_name is None:
                user.groups.add(maintainers_group())
            else:
                vendor, _ = Vendor.objects.get_or_create(name=vendor_name)
                vendor.members.add(user)
                for plugin in Plugin.objects.filter(slug__in=slugs):
                    vendor.plugins.add(plugin)

