from __future__ import annotations

from xml.sax.saxutils import escape

import pytest

from dashboard.domain.ingest.upstream_names import (
    CATALOG_KEYS,
    RELEASE_NAMES,
    RELEASES,
    catalog_key,
    core,
    guess_release,
    normalise,
)

CASES = [
    pytest.param(release, name, key, id=f"{release}:{key}:{i}")
    for release in RELEASES
    for i, (name, key) in enumerate(RELEASE_NAMES[release].items())
]


def test_every_release_from_v1_19_to_v1_35_has_names():
    assert RELEASES == tuple(f"v1.{minor}" for minor in range(19, 36))
    for release in RELEASES:
        keys = set(RELEASE_NAMES[release].values())
        assert keys <= set(CATALOG_KEYS)
        # Every release since v1.19 has the basic, pod-to-pod, pod-to-service and policy tests;
        # the "using SCTP" policy tests (netpol-allow-deny) came with v1.20 (a real v1.19.16
        # file has none).
        assert {
            "declare-sctp-ports",
            "hostport-kubenet",
            "pod-to-pod",
            "pod-to-service",
            "netpol-sctp-blocks-tcp-udp",
        } <= keys, release
        assert ("netpol-allow-deny" in keys) == (release != "v1.19"), release
        assert "pod-to-loadbalancer" not in keys


@pytest.mark.parametrize(("release", "name", "key"), CASES)
def test_each_release_name_maps_to_its_key_in_every_spelling(release, name, key):
    assert catalog_key(name) == key
    assert catalog_key(f"[It] {name}") == key
    assert catalog_key(f"[It] {name} [Feature:SCTPConnectivity, LinuxOnly]") == key
    escaped = escape(name, {"'": "&#39;", '"': "&quot;"})
    assert catalog_key(f"[It] {escaped}") == key
    assert catalog_key("  [It]   " + name.replace(" ", "  ") + "\n") == key


@pytest.mark.parametrize(("release", "name", "key"), CASES)
def test_each_release_name_maps_with_tags_added_or_dropped(release, name, key):
    assert catalog_key(f"{name} [Disruptive]") == key
    assert catalog_key(f"{name} [Feature:SCTP] [Serial]") == key
    stripped = name.replace(" [LinuxOnly]", "").replace("[LinuxOnly]", "")
    assert catalog_key(stripped) == key


def test_normalise_strips_a_label_list_but_keeps_tags():
    name = "[It] [sig-network] Networking should allow creating a Pod with an SCTP HostPort [LinuxOnly] [Serial]"
    assert normalise(name) == name.removeprefix("[It] ")
    assert normalise(name + " [LinuxOnly, Serial]") == name.removeprefix("[It] ")
    assert normalise("a &#39;b&#39; &amp; c") == "a 'b' & c"


def test_core_names_do_not_collide_with_tcp_or_udp_tests():
    assert (
        catalog_key(
            "[sig-network] Netpol [LinuxOnly] NetworkPolicy between server and client using UDP should enforce policy based on Ports [Feature:NetworkPolicy]"
        )
        is None
    )
    assert (
        catalog_key(
            "[sig-network] Networking Granular Checks: Services should function for pod-Service: udp"
        )
        is None
    )
    assert (
        catalog_key(
            "[sig-network] Services should be able to create a functioning NodePort service [Conformance]"
        )
        is None
    )


def test_release_guess_prefers_the_detected_minor_among_identical_releases():
    names = [normalise(n) for n in RELEASE_NAMES["v1.30"]]
    assert guess_release(names) == "v1.29-v1.35"
    assert guess_release(names, prefer="v1.30") == "v1.30"
    assert guess_release([normalise(n) for n in RELEASE_NAMES["v1.19"]]) == "v1.19"
    assert guess_release([]) is None


def test_core_removes_every_tag():
    assert (
        core(
            "[It] [sig-network] SCTP [Feature:SCTP] [LinuxOnly] should create a Pod with SCTP HostPort"
        )
        == "sctp should create a pod with sctp hostport"
    )
