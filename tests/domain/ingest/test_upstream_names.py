from __future__ import annotations

import os
import subprocess
from pathlib import Path
from xml.sax.saxutils import escape

import pytest

from dashboard.domain.ingest.upstream_names import (
    CATALOG_KEYS,
    CHECKED,
    RELEASE_NAMES,
    RELEASES,
    SOURCE_LINES,
    SPEC_SOURCES,
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


def test_every_release_from_v1_19_to_v1_37_has_names():
    assert RELEASES == tuple(f"v1.{minor}" for minor in range(19, 38))
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


def _module_tree(tag: str) -> Path | None:
    cache = os.environ.get("GOMODCACHE")
    if not cache:
        try:
            cache = subprocess.run(
                ["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None
    tree = Path(cache) / "k8s.io" / f"kubernetes@{tag}" / "test" / "e2e"
    return tree if tree.is_dir() else None


@pytest.mark.parametrize("tag", sorted(SOURCE_LINES))
def test_each_cited_source_line_holds_its_spec_at_the_tag(tag):
    assert len(SOURCE_LINES[tag]) == len(SPEC_SOURCES) == 14  # 13 specs and the SCTP Context
    tree = _module_tree(tag)
    if tree is None:
        pytest.skip(f"the Go module cache holds no k8s.io/kubernetes@{tag}")
    cited = list(zip(SPEC_SOURCES, SOURCE_LINES[tag], strict=True))
    for (path, text), line in cited:
        lines = (tree / path).read_text().splitlines()
        assert text in lines[line - 1], f"{tag} test/e2e/{path}:{line}: {lines[line - 1]!r}"
    # The first eleven texts are each in one place of their file; the last three (TCP and UDP
    # have the same tests) are the ones in the "using SCTP" Context, with no other in between.
    for (path, text), _ in cited[:11]:
        assert (tree / path).read_text().count(text) == 1, (tag, path, text)
    netpol = (tree / "network/netpol/network_policy.go").read_text().splitlines()
    context = cited[10][1]
    for _, line in cited[11:]:
        assert context < line
        assert not any("ginkgo.Context(" in ln for ln in netpol[context : line - 1]), (tag, line)


def test_the_newest_releases_cite_their_source_and_their_dry_run():
    for release, tag in (("v1.36", "v1.36.3"), ("v1.37", "v1.37.2")):
        assert RELEASE_NAMES[release] == RELEASE_NAMES["v1.35"]
        assert tag in CHECKED[release] and "dry run" in CHECKED[release]
        assert "network/service.go:" in CHECKED[release]


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
    assert guess_release(names) == "v1.29-v1.37"
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
