"""The readiness page (/): stage track, a card per criterion, evidence, changes since the sign-off."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.domain import readiness
from dashboard.domain.models import SignOff
from tests import factories
from tests.web.views.page_data import grow_history, grow_submissions, queries

pytestmark = pytest.mark.django_db


def sign_off_beta(maintainer) -> SignOff:
    """alpha → beta, with the evaluation of the moment as its snapshot."""
    return SignOff.objects.create(
        from_stage="alpha",
        to_stage="beta",
        maintainer=maintainer,
        comment="ok",
        snapshot=readiness.evaluate(),
    )


def test_it_shows_a_card_per_criterion_with_status_and_gap(client: Client) -> None:
    body = client.get("/").content.decode()
    for key in (
        "tests-written",
        "periodic-basic-passing",
        "two-out-of-tree-plugins",
        "iptables-and-ipvs",
    ):
        assert f'data-criterion="{key}"' in body
    assert "needs 2 more out-of-tree plugins" in body
    assert 'class="stage-track"' in body


def test_it_links_the_evidence_behind_a_met_criterion(client: Client) -> None:
    c1 = factories.cluster("calico-a")
    c2 = factories.cluster("cilium-b", plugin_slug="cilium", proxier="ipvs")
    r1, r2 = factories.run(c1), factories.run(c2)
    body = client.get("/").content.decode()
    assert 'data-criterion="two-out-of-tree-plugins" data-status="met"' in body
    assert f'href="/runs/{r1.id}/"' in body and f'href="/runs/{r2.id}/"' in body
    assert 'href="/plugins/cilium/"' in body


def test_it_says_what_changed_since_the_last_sign_off(client: Client, maintainer) -> None:
    sign_off_beta(maintainer)
    factories.run(factories.cluster("calico-a"))
    factories.run(factories.cluster("cilium-b", plugin_slug="cilium"))
    body = client.get("/").content.decode()
    assert "Changed since the last sign-off: was <strong>unmet</strong>" in body
    assert "Signed off alpha → beta by maria" in body


@pytest.mark.usefixtures("memory_cache")  # counts queries, whatever the cache backend
def test_its_query_count_does_not_grow_with_history(client: Client) -> None:
    c = factories.cluster("calico-a")
    factories.schedule(c)
    grow_history(c, 3)
    factories.submission("cilium")
    before = queries(client, "/")
    grow_history(c, 60)
    grow_submissions(20)
    # the publication's check; the body is rendered once per publication (sign-offs included)
    assert queries(client, "/") == before == 1


def test_its_body_is_rendered_once_per_publication_and_role(client: Client, maintainer) -> None:
    from django.test.signals import template_rendered

    rendered: list[str] = []

    def seen(sender, template, **kwargs) -> None:
        rendered.append(template.name)

    template_rendered.connect(seen)
    try:
        client.get("/")
        first = rendered.count("front/_readiness_body.html")
        body = client.get("/").content.decode()
        assert first == 1 and rendered.count("front/_readiness_body.html") == 1
        assert "Review and sign off" not in body

        client.force_login(maintainer)  # another role: its own body, with the maintainer's button
        assert "Review and sign off" in client.get("/").content.decode()
        client.logout()
        assert "Review and sign off" not in client.get("/").content.decode()
        assert rendered.count("front/_readiness_body.html") == 2

        # new evidence: a new publication, a new body that shows it
        run = factories.run(factories.cluster("calico-a"))
        body = client.get("/").content.decode()
        assert rendered.count("front/_readiness_body.html") == 3
        assert f'href="/runs/{run.id}/"' in body

        # a sign-off changes the page too (it bumps the publication)
        sign_off_beta(maintainer)
        assert "Signed off alpha → beta by maria" in client.get("/").content.decode()
    finally:
        template_rendered.disconnect(seen)


def test_visitors_without_a_session_share_one_page_and_signed_in_users_get_their_own(
    client: Client, vendor_user
) -> None:
    first, second = Client(), Client()
    a, b = first.get("/"), second.get("/")
    assert a.status_code == b.status_code == 200 and a.content == b.content
    assert a["Content-Type"] == "text/html; charset=utf-8"
    assert "Cookie" in a["Vary"]  # a shared cache must not hand it to a signed-in user
    assert "Log in" in a.content.decode() and "victor" not in a.content.decode()
    assert a.has_header("Content-Security-Policy")  # the middleware still answers for it

    client.force_login(vendor_user)
    mine = client.get("/").content.decode()
    assert "victor" in mine and "Log out" in mine and "Log in</a>" not in mine
    client.post("/logout/")
    assert "victor" not in client.get("/").content.decode()


def test_a_pending_message_is_shown_to_a_visitor(client: Client) -> None:
    from django.contrib.messages.storage.cookie import CookieStorage
    from django.http import HttpRequest, HttpResponse

    storage, carrier = CookieStorage(HttpRequest()), HttpResponse()
    storage.add(20, "Thanks for the upload")
    storage.update(carrier)  # as a redirect after a form would set it
    client.cookies[CookieStorage.cookie_name] = carrier.cookies[CookieStorage.cookie_name].value
    assert "Thanks for the upload" in client.get("/").content.decode()
    del client.cookies[CookieStorage.cookie_name]
    assert "Thanks for the upload" not in client.get("/").content.decode()


def test_a_large_fleet_shows_its_first_25_schedules_and_says_where_the_rest_are(
    client: Client,
) -> None:
    for i in range(27):
        c = factories.cluster(name=f"fleet-{i:02d}")
        s = factories.schedule(c)
        if i % 9 == 0:  # three passing schedules: listed first
            for d in (3, 2, 1):
                factories.run(c, battery="basic", days_ago=d / 24, trigger="periodic", schedule=s)
    body = client.get("/").content.decode()
    section = body[body.index("Periodic schedules (27)") :]
    section = section[: section.index("</table>")]
    assert section.count('<tr><td><a href="/clusters/') == 25
    assert "The first 25 of 27 schedules, passing ones first" in section
    assert '<a href="/api/v1/readiness/">readiness API</a>' in section
    assert '<a href="/schedules/">schedules page</a>' in section
    first = section.index("fleet-00"), section.index("fleet-09"), section.index("fleet-18")
    assert max(first) < section.index("fleet-01")  # the met ones come first
