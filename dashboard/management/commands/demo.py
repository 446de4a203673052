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

        return bool(
            redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=0.5).ping()
        )
    except Exception:
        return False


class Command(BaseCommand):
    help = "Run the whole product locally against the lab's emulated clusters."

    def add_arguments(self, parser):
        parser.add_argument("--no-web", action="store_true")
        parser.add_argument("--setup-only", action="store_true", help="set up, start nothing")

    def handle(self, *args, **opts):
        env = os.environ.copy()
        # The lab listens on the loopback, where cluster servers are otherwise refused
        # (workers/netguard.py): the demo allows exactly that, for every process it starts.
        allowed = [n for n in (env.get("CLUSTER_ALLOWED_NETWORKS") or "").split(",") if n.strip()]
        if "127.0.0.0/8" not in allowed:
            allowed.append("127.0.0.0/8")
        env["CLUSTER_ALLOWED_NETWORKS"] = settings.CLUSTER_ALLOWED_NETWORKS = ",".join(allowed)
        embedded = settings.EMBEDDED_BROKER
        if not embedded and not redis_reachable(settings.CELERY_BROKER_URL):
            embedded = True
            env["CELERY_BROKER_URL"] = "filesystem://"
        broker = (
            "embedded broker (no Redis found)"
            if embedded
            else f"Redis at {settings.CELERY_BROKER_URL}"
        )
        call_command("migrate", verbosity=0)
        self.ensure_users()
        if opts["setup_only"]:
            return
        py, manage = sys.executable, str(settings.BASE_DIR / "manage.py")
        self.serve_like_production(env)
        # DEBUG=false hashes static file names: collect them with the children's settings.
        subprocess.run(
            [py, manage, "collectstatic", "--noinput", "-v", "0"],
            env=env,
            cwd=settings.BASE_DIR,
            check=True,
        )
        procs: dict[str, tuple[list[str], subprocess.Popen]] = {}
        restarts: dict[str, int] = {}

        def start(name: str, argv: list[str]) -> None:
            procs[name] = (argv, subprocess.Popen(argv, env=env, cwd=settings.BASE_DIR))

        # The web first: the first page should not wait for the lab and the workers to boot.
        if not opts["no_web"]:
            start("web", [py, manage, "runserver", WEB, "--noreload"])
        start(
            "lab",
            [
                py,
                manage,
                "lab",
                "--profiles",
                str(settings.BASE_DIR / "lab" / "profiles"),
                "--port",
                str(LAB_PORT),
                "--register",
                "--kickoff",
                "--kubeconfig",
                str(settings.VAR_DIR / "lab" / "kubeconfig"),
            ],
        )
        celery = [py, "-m", "celery", "-A", "workers"]
        start("worker", [*celery, "worker", "-l", "warning", "--concurrency", "4", "-n", "demo@%h"])
        start(
            "beat",
            [*celery, "beat", "-l", "warning", "-s", str(settings.VAR_DIR / "celerybeat-schedule")],
        )
        # Two vendor submissions made from the lab's own runs once they finish (emulated: never counted).
        threading.Thread(target=self.seed_submissions, name="demo-seed", daemon=True).start()
        self.stdout.write(
            self.style.SUCCESS(f"\nSCTP readiness dashboard: http://{WEB}/  ({broker})")
        )
        self.stdout.write(
            "Log in as maintainer / maintainer-demo, calico-vendor / calico-demo, "
            "cilium-vendor / cilium-demo; the Django admin (/admin/) as admin / admin-demo. "
            "Ctrl-C stops everything.\n"
        )
        self.stdout.write(
            "Look inside the lab: KUBECONFIG=var/lab/kubeconfig kubectl get pods -A "
            "--context calico-iptables\n"
        )
        stop = False

        def on_signal(signum, frame):
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
                        self.stderr.write(
                            f"{name} keeps exiting (status {proc.returncode}); stopping the demo"
                        )
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

    @staticmethod
    def serve_like_production(env: dict[str, str]) -> None:
        """The demo is seen by visitors: no debug pages (a 404 would list every URL pattern).
        Plain HTTP on a local port, so no HTTPS redirect and no secure-only cookies; the
        operator's own DEBUG / ALLOWED_HOSTS win when set."""
        env.setdefault("DEBUG", "false")
        env.setdefault("SECURE_SSL_REDIRECT", "false")
        env.setdefault("SECURE_COOKIES", "false")
        host = WEB.rsplit(":", 1)[0].strip("[]")
        if "ALLOWED_HOSTS" not in env:
            env["ALLOWED_HOSTS"] = (
                "*" if host in ("0.0.0.0", "::", "") else f"{host},127.0.0.1,localhost"
            )

    def seed_submissions(self) -> None:
        from django.db import connection

        from dashboard.demo_seed import seed_submissions

        try:
            made = seed_submissions()
            if made:
                self.stdout.write(
                    f"demo: {len(made)} vendor submissions made from the lab's runs "
                    f"({', '.join(f'/submissions/{s.id}/' for s in made)})"
                )
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
