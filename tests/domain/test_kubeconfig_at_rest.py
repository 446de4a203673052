from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.db import connection

from dashboard.domain.models import Cluster
from tests import factories as f

pytestmark = pytest.mark.django_db

SECRET = "super-secret-bearer-token-1234567890"
KUBECONFIG = f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "https://10.0.0.1:6443"}}}}]
users: [{{name: u, user: {{token: {SECRET}}}}}]
contexts: [{{name: ctx, context: {{cluster: c, user: u}}}}]
current-context: ctx
"""


def raw_column(cluster_id: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT kubeconfig FROM dashboard_cluster WHERE id = %s", [cluster_id])
        return cursor.fetchone()[0]


def test_the_kubeconfig_is_stored_encrypted_and_read_back_in_clear():
    c = f.cluster(kubeconfig=KUBECONFIG)
    raw = raw_column(c.id)
    assert SECRET not in raw and "current-context" not in raw
    assert raw.startswith("gAAAA")  # a Fernet token
    assert Cluster.objects.get(pk=c.pk).kubeconfig == KUBECONFIG


def test_key_rotation_keeps_old_rows_readable(settings):
    old = Fernet.generate_key().decode()
    settings.FIELD_ENCRYPTION_KEY = old
    c = f.cluster(kubeconfig=KUBECONFIG)
    new = Fernet.generate_key().decode()
    settings.FIELD_ENCRYPTION_KEY = f"{new},{old}"
    assert Cluster.objects.get(pk=c.pk).kubeconfig == KUBECONFIG
    from django.core.management import call_command

    call_command("rotate_encryption_key", verbosity=0)
    settings.FIELD_ENCRYPTION_KEY = new
    assert Cluster.objects.get(pk=c.pk).kubeconfig == KUBECONFIG


def test_the_kubeconfig_is_never_in_api_answers(client):
    c = f.cluster(kubeconfig=KUBECONFIG)
    body = client.get("/api/v1/clusters/").content.decode()
    assert c.name in body and SECRET not in body and "kubeconfig" not in body


def test_the_admin_never_renders_the_kubeconfig(admin_client):
    c = f.cluster(kubeconfig=KUBECONFIG)
    page = admin_client.get(f"/admin/dashboard/cluster/{c.pk}/change/").content.decode()
    assert SECRET not in page
    listing = admin_client.get("/admin/dashboard/cluster/").content.decode()
    assert SECRET not in listing


def test_saving_the_admin_form_with_an_empty_kubeconfig_keeps_the_stored_one(admin_client):
    c = f.cluster(kubeconfig=KUBECONFIG)
    page = admin_client.get(f"/admin/dashboard/cluster/{c.pk}/change/")
    form = page.context["adminform"].form
    data = {
        k: v for k, v in form.initial.items() if v is not None and not isinstance(v, (list, dict))
    }
    data.update(
        {
            "name": c.name,
            "plugin": c.plugin_id,
            "proxier": "iptables",
            "kubeconfig": "",
            "timeouts": "{}",
            "created_0": "2026-01-01",
            "created_1": "00:00:00",
            "enabled": "on",
            "node_access": "on",
        }
    )
    resp = admin_client.post(f"/admin/dashboard/cluster/{c.pk}/change/", data)
    assert resp.status_code == 302, resp.content.decode()[:2000]
    assert Cluster.objects.get(pk=c.pk).kubeconfig == KUBECONFIG
