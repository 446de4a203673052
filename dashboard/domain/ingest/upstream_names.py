"""Upstream e2e test names that feed the catalog, per Kubernetes release (v1.19 on).

This module is data plus the one normalisation function everything else uses.

The names are the ginkgo full texts (describe + context + it, joined with spaces) as
they appear in a JUnit report, without the ``[It] `` prefix and with XML entities
decoded. Where each release's names were checked is in :data:`CHECKED` (one line per
release): a real result file beats the source, the source at the release's tag beats a
published list, and what was inferred says so. Matching does not depend on it: names are
matched on their core text with every bracketed tag removed, so a tag that came or went,
or a release boundary placed one release off, still maps to the same catalog key. Only the
reported ``release`` guess (and the release range a declared version is checked against,
which only applies when every SCTP name of a file is exactly one of a release's) depends on
the exact names.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping

from kernel.vocabulary import ALL_KEYS, Key
from kernel.vocabulary import CONNECTIVITY_KEYS as vocab_connectivity

DECLARE = Key.DECLARE_SCTP_PORTS
HOSTPORT = Key.HOSTPORT_KUBENET
IPTABLES = Key.SERVICE_IPTABLES_RULES
NETPOL_BLOCKS = Key.NETPOL_SCTP_BLOCKS_TCP_UDP
POD_TO_POD = Key.POD_TO_POD
POD_TO_SERVICE = Key.POD_TO_SERVICE
POD_TO_LB = Key.POD_TO_LOADBALANCER
NETPOL_ALLOW_DENY = Key.NETPOL_ALLOW_DENY

CATALOG_KEYS: tuple[str, ...] = ALL_KEYS
CONNECTIVITY_KEYS: tuple[str, ...] = vocab_connectivity

_SN = "[sig-network]"

# --- eras: blocks of names shared by consecutive releases -----------------------------

# v1.19: everything still in test/e2e/network; connectivity tests are [Disruptive].
_BASIC_FEATURE_SCTP = {
    f"{_SN} SCTP [Feature:SCTP] [LinuxOnly] should allow creating a basic SCTP service with pod and endpoints": DECLARE,
    f"{_SN} SCTP [Feature:SCTP] [LinuxOnly] should create a Pod with SCTP HostPort": HOSTPORT,
    f"{_SN} SCTP [Feature:SCTP] [LinuxOnly] should create a ClusterIP Service with SCTP ports": IPTABLES,
}
# v1.21-v1.22: [Feature:SCTP] dropped now that SCTP is GA.
_BASIC_SCTP_LINUXONLY = {
    f"{_SN} SCTP [LinuxOnly] should allow creating a basic SCTP service with pod and endpoints": DECLARE,
    f"{_SN} SCTP [LinuxOnly] should create a Pod with SCTP HostPort": HOSTPORT,
    f"{_SN} SCTP [LinuxOnly] should create a ClusterIP Service with SCTP ports": IPTABLES,
}
# v1.23 on: moved under Services / Networking, [Serial] because they must not run
# beside the connectivity tests (which may load sctp.ko); the ClusterIP test is gone.
_BASIC_MOVED = {
    f"{_SN} Services should allow creating a basic SCTP service with pod and endpoints [LinuxOnly] [Serial]": DECLARE,
    f"{_SN} Networking should allow creating a Pod with an SCTP HostPort [LinuxOnly] [Serial]": HOSTPORT,
}

# v1.19: test/e2e/network/networking.go at a v1.19-era commit writes "[Disruptive]"; the names
# of a real v1.19.16 result file have none. Both spellings are the release's.
_POD_POD_119 = {
    f"{_SN} Networking should function for pod-pod: sctp [Feature:SCTPConnectivity][Disruptive]": POD_TO_POD,
    f"{_SN} Networking Granular Checks: Services should function for pod-Service: sctp [Feature:SCTPConnectivity][Disruptive]": POD_TO_SERVICE,
    f"{_SN} Networking should function for pod-pod: sctp [Feature:SCTPConnectivity]": POD_TO_POD,
    f"{_SN} Networking Granular Checks: Services should function for pod-Service: sctp [Feature:SCTPConnectivity]": POD_TO_SERVICE,
}
_GRANULAR_DISRUPTIVE = {
    f"{_SN} Networking Granular Checks: Pods should function for intra-pod communication: sctp [LinuxOnly][Feature:SCTPConnectivity][Disruptive]": POD_TO_POD,
    f"{_SN} Networking Granular Checks: Pods should function for node-pod communication: sctp [LinuxOnly][Feature:SCTPConnectivity][Disruptive]": POD_TO_POD,
    f"{_SN} Networking Granular Checks: Services should function for pod-Service: sctp [Feature:SCTPConnectivity][Disruptive]": POD_TO_SERVICE,
    f"{_SN} Networking Granular Checks: Services should function for node-Service: sctp [Feature:SCTPConnectivity][Disruptive]": POD_TO_SERVICE,
    f"{_SN} Networking Granular Checks: Services should function for endpoint-Service: sctp [Feature:SCTPConnectivity][Disruptive]": POD_TO_SERVICE,
    f"{_SN} [Feature:IPv6DualStack] Granular Checks: Services Secondary IP Family [LinuxOnly] should function for pod-Service: sctp [Feature:SCTPConnectivity][Disruptive]": POD_TO_SERVICE,
}
# v1.21-v1.28: tags written into the text as in the source, no [Disruptive].
_GRANULAR_TEXT_TAGS = {
    f"{_SN} Networking Granular Checks: Pods should function for intra-pod communication: sctp [LinuxOnly][Feature:SCTPConnectivity]": POD_TO_POD,
    f"{_SN} Networking Granular Checks: Pods should function for node-pod communication: sctp [LinuxOnly][Feature:SCTPConnectivity]": POD_TO_POD,
    f"{_SN} Networking Granular Checks: Services should function for pod-Service: sctp [Feature:SCTPConnectivity]": POD_TO_SERVICE,
    f"{_SN} Networking Granular Checks: Services should function for node-Service: sctp [Feature:SCTPConnectivity]": POD_TO_SERVICE,
    f"{_SN} Networking Granular Checks: Services should function for endpoint-Service: sctp [Feature:SCTPConnectivity]": POD_TO_SERVICE,
    f"{_SN} [Feature:IPv6DualStack] Granular Checks: Services Secondary IP Family [LinuxOnly] should function for pod-Service: sctp [Feature:SCTPConnectivity]": POD_TO_SERVICE,
}
# v1.29 on: features are framework labels rendered as " [Feature:X]" after the text.
_GRANULAR_LABELS = {
    f"{_SN} Networking Granular Checks: Pods should function for intra-pod communication: sctp [LinuxOnly] [Feature:SCTPConnectivity]": POD_TO_POD,
    f"{_SN} Networking Granular Checks: Pods should function for node-pod communication: sctp [LinuxOnly] [Feature:SCTPConnectivity]": POD_TO_POD,
    f"{_SN} Networking Granular Checks: Services should function for pod-Service: sctp [Feature:SCTPConnectivity]": POD_TO_SERVICE,
    f"{_SN} Networking Granular Checks: Services should function for node-Service: sctp [Feature:SCTPConnectivity]": POD_TO_SERVICE,
    f"{_SN} Networking Granular Checks: Services should function for endpoint-Service: sctp [Feature:SCTPConnectivity]": POD_TO_SERVICE,
    f"{_SN} [Feature:IPv6DualStack] Granular Checks: Services Secondary IP Family [LinuxOnly] should function for pod-Service: sctp [Feature:SCTPConnectivity]": POD_TO_SERVICE,
}

_SCTP_POLICY_TESTS = (
    "should enforce policy based on Ports [Feature:NetworkPolicy]",
    "should enforce policy to allow traffic only from a pod in a different namespace based on PodSelector and NamespaceSelector [Feature:NetworkPolicy]",
)


def _sctp_policy(describe: str, default_deny: str) -> dict[str, str]:
    prefix = f"{_SN} {describe} NetworkPolicy between server and client using SCTP"
    names: dict[str, str] = {
        f"{prefix} should support a '{default_deny}' policy [Feature:NetworkPolicy]": NETPOL_ALLOW_DENY
    }
    names.update({f"{prefix} {test}": NETPOL_ALLOW_DENY for test in _SCTP_POLICY_TESTS})
    return names


_TCP_ONLY_SCTP = "should not allow access by TCP when a policy specifies only SCTP"
# v1.19: test/e2e/network/network_policy.go. The "using SCTP" policy tests are not in it: a
# real v1.19.16 result file has none of them (they came with v1.20).
_NETPOL_119 = {
    f"{_SN} NetworkPolicy [LinuxOnly] NetworkPolicy between server and client {_TCP_ONLY_SCTP} [Feature:NetworkPolicy] [Feature:SCTP]": NETPOL_BLOCKS,
}
# v1.20-v1.25: the old file lives on as NetworkPolicyLegacy beside the new netpol package.
_NETPOL_LEGACY_120 = {
    f"{_SN} NetworkPolicyLegacy [LinuxOnly] NetworkPolicy between server and client {_TCP_ONLY_SCTP} [Feature:NetworkPolicy] [Feature:SCTP]": NETPOL_BLOCKS,
    **_sctp_policy(
        "NetworkPolicy [Feature:SCTPConnectivity][LinuxOnly][Disruptive]", "default-deny"
    ),
}
_NETPOL_LEGACY_121 = {
    f"{_SN} NetworkPolicyLegacy [LinuxOnly] NetworkPolicy between server and client {_TCP_ONLY_SCTP} [Feature:NetworkPolicy]": NETPOL_BLOCKS,
    **_sctp_policy(
        "NetworkPolicy [Feature:SCTPConnectivity][LinuxOnly][Disruptive]", "default-deny"
    ),
}
_NETPOL_120 = {
    f"{_SN} Netpol [LinuxOnly] NetworkPolicy between server and client {_TCP_ONLY_SCTP} [Feature:NetworkPolicy] [Feature:SCTP]": NETPOL_BLOCKS,
    **_sctp_policy(
        "Netpol [Feature:SCTPConnectivity][LinuxOnly][Disruptive]", "default-deny-ingress"
    ),
}
_ISOLATE = "should properly isolate pods that are selected by a policy allowing SCTP, even if the plugin doesn't support SCTP [Feature:NetworkPolicy]"
_NOT_AS_TCP = "should not mistakenly treat 'protocol: SCTP' as 'protocol: TCP', even if the plugin doesn't support SCTP [Feature:NetworkPolicy]"


def _netpol_tcp(describe: str) -> dict[str, str]:
    prefix = f"{_SN} {describe} NetworkPolicy between server and client"
    return {f"{prefix} {_ISOLATE}": NETPOL_BLOCKS, f"{prefix} {_NOT_AS_TCP}": NETPOL_BLOCKS}


# v1.21, from a real v1.21.1 result file (Sonobuoy's test data, tests/fixtures/sonobuoy): the
# [Feature:SCTP] basic describe, [Disruptive] connectivity tests, "NetworkPolicy" (not yet
# "NetworkPolicyLegacy") beside "Netpol", and the dual-stack test's [LinuxOnly] moved.
_V121_REAL = {
    **_BASIC_FEATURE_SCTP,
    **{n: k for n, k in _GRANULAR_DISRUPTIVE.items() if "IPv6DualStack" not in n},
    f"{_SN} [Feature:IPv6DualStack] [LinuxOnly] Granular Checks: Services Secondary IP Family should function for pod-Service: sctp [Feature:SCTPConnectivity][Disruptive]": POD_TO_SERVICE,
    f"{_SN} NetworkPolicy [LinuxOnly] NetworkPolicy between server and client {_TCP_ONLY_SCTP} [Feature:NetworkPolicy] [Feature:SCTP]": NETPOL_BLOCKS,
    **_sctp_policy(
        "NetworkPolicy [Feature:SCTPConnectivity][LinuxOnly][Disruptive]", "default-deny"
    ),
    f"{_SN} Netpol [LinuxOnly] NetworkPolicy between server and client {_TCP_ONLY_SCTP} [Feature:NetworkPolicy] [Feature:SCTP]": NETPOL_BLOCKS,
    **_sctp_policy(
        "Netpol [Feature:SCTPConnectivity][LinuxOnly][Disruptive]", "default-deny-ingress"
    ),
}
_NETPOL_121 = {
    **_netpol_tcp("Netpol [LinuxOnly]"),
    **_sctp_policy("Netpol [Feature:SCTPConnectivity][LinuxOnly]", "default-deny-ingress"),
}
_NETPOL_123 = {
    **_netpol_tcp("Netpol"),
    **_sctp_policy("Netpol [Feature:SCTPConnectivity][LinuxOnly]", "default-deny-ingress"),
}
_NETPOL_129 = {
    **_netpol_tcp("Netpol"),
    **_sctp_policy("Netpol [Feature:SCTPConnectivity] [LinuxOnly]", "default-deny-ingress"),
}

# --- the per-release table -------------------------------------------------------------

_V119 = {**_BASIC_FEATURE_SCTP, **_POD_POD_119, **_NETPOL_119}
_V120 = {**_BASIC_FEATURE_SCTP, **_GRANULAR_DISRUPTIVE, **_NETPOL_120, **_NETPOL_LEGACY_120}
_V122 = {**_BASIC_SCTP_LINUXONLY, **_GRANULAR_TEXT_TAGS, **_NETPOL_121, **_NETPOL_LEGACY_121}
_V123 = {**_BASIC_MOVED, **_GRANULAR_TEXT_TAGS, **_NETPOL_123, **_NETPOL_LEGACY_121}
_V126 = {**_BASIC_MOVED, **_GRANULAR_TEXT_TAGS, **_NETPOL_123}
_V129 = {**_BASIC_MOVED, **_GRANULAR_LABELS, **_NETPOL_129}

RELEASE_NAMES: Mapping[str, Mapping[str, str]] = {
    "v1.19": _V119,
    "v1.20": _V120,
    "v1.21": _V121_REAL,
    "v1.22": _V122,
    "v1.23": _V123,
    "v1.24": _V123,
    "v1.25": _V123,
    "v1.26": _V126,
    "v1.27": _V126,
    "v1.28": _V126,
    "v1.29": _V129,
    "v1.30": _V129,
    "v1.31": _V129,
    "v1.32": _V129,
    "v1.33": _V129,
    "v1.34": _V129,
    "v1.35": _V129,
    "v1.36": _V129,
    "v1.37": _V129,
}
RELEASES: tuple[str, ...] = tuple(RELEASE_NAMES)


def fed_keys(kubernetes_version: str | None) -> frozenset[str]:
    """The catalog tests upstream's specs feed at the release (the newest known release's for
    a newer or unknown one): upstream's e2e.test has no outcome for any other key (never
    pod-to-loadbalancer; service-iptables-rules only while its ClusterIP spec existed)."""
    parts = (kubernetes_version or "").lstrip("v").split(".")
    minor = f"v{parts[0]}.{parts[1]}" if len(parts) >= 2 else ""
    names = RELEASE_NAMES.get(minor) or RELEASE_NAMES[RELEASES[-1]]
    return frozenset(str(key) for key in names.values())


# Where upstream writes each SCTP spec at the tags read (test/e2e/ in the Go module cache's
# k8s.io/kubernetes@<tag>): (file, text on the line) in SPEC_SOURCES' order, the line per tag in
# SOURCE_LINES. The "using SCTP" line is the ginkgo.Context of the three policy tests that follow.
# tests/domain/ingest/test_upstream_names.py checks every line against the trees the cache holds.
SPEC_SOURCES: tuple[tuple[str, str], ...] = (
    ("network/service.go", "should allow creating a basic SCTP service with pod and endpoints"),
    ("network/networking.go", "should allow creating a Pod with an SCTP HostPort"),
    ("network/networking.go", '"should function for pod-Service: sctp"'),
    ("network/networking.go", '"should function for node-Service: sctp"'),
    ("network/networking.go", '"should function for endpoint-Service: sctp"'),
    ("common/network/networking.go", "should function for intra-pod communication: sctp"),
    ("common/network/networking.go", "should function for node-pod communication: sctp"),
    ("network/dual_stack.go", '"should function for pod-Service: sctp"'),
    ("network/netpol/network_policy.go", "should not mistakenly treat 'protocol: SCTP'"),
    ("network/netpol/network_policy.go", "selected by a policy allowing SCTP, even if"),
    ("network/netpol/network_policy.go", "NetworkPolicy between server and client using SCTP"),
    ("network/netpol/network_policy.go", "should support a 'default-deny-ingress' policy"),
    ("network/netpol/network_policy.go", "should enforce policy based on Ports"),
    ("network/netpol/network_policy.go", "based on PodSelector and NamespaceSelector"),
)
SOURCE_LINES: Mapping[str, tuple[int, ...]] = {
    "v1.34.4": (3936, 635, 177, 219, 263, 135, 140, 454, 1137, 1163, 1336, 1338, 1352, 1376),
    "v1.35.4": (3753, 635, 177, 219, 263, 135, 140, 454, 1137, 1163, 1336, 1338, 1352, 1376),
    "v1.36.3": (3776, 635, 177, 219, 263, 135, 140, 469, 1176, 1204, 1403, 1405, 1423, 1452),
    "v1.37.2": (3783, 634, 177, 219, 263, 135, 140, 469, 1200, 1228, 1427, 1429, 1447, 1476),
}


def source_lines(tag: str) -> str:
    """The cited lines of a tag, by file: "test/e2e/network/service.go:3936, …"."""
    by_file: dict[str, list[str]] = {}
    for (path, _), line in zip(SPEC_SOURCES, SOURCE_LINES[tag], strict=True):
        by_file.setdefault(path, []).append(str(line))
    return ", ".join(f"test/e2e/{path}:{'/'.join(lines)}" for path, lines in by_file.items())


# Where each release's name set was checked (the module doc says how to read this).
_INFERRED = "inferred from the neighbouring releases (domain.md §4); not checked against a file"
CHECKED: Mapping[str, str] = {
    "v1.19": "a real v1.19.16 result file (no [Disruptive], no 'using SCTP' policy tests) and "
    "test/e2e/network/networking.go and network_policy.go at a v1.19-era commit",
    "v1.20": "test/e2e/network/networking.go, network_policy.go and netpol/ at v1.20-era "
    "commits; not checked against a result file",
    "v1.21": "a real v1.21.1 result file: tests/fixtures/sonobuoy/results-4-e2e-failures.tar.gz "
    "(all 17 SCTP names)",
    "v1.22": _INFERRED,
    **{f"v1.{m}": _INFERRED for m in range(23, 29)},
    "v1.29": "the v1.30 file's names (labels rendered after the text), " + _INFERRED,
    "v1.30": "a real v1.30 conformance JUnit: tests/fixtures/e2e-junit (all 13 SCTP names)",
    **{f"v1.{m}": "the same names as v1.30 and master; " + _INFERRED for m in range(31, 34)},
    **{
        f"v1.{m}": f"a real Ginkgo dry run of upstream's e2e.test {tag} with the upstream "
        "battery's focus (tests/fixtures/e2e-junit/dry-run-*: the same 13 names, and no other "
        "SCTP spec in the binary) and test/e2e/network/*.go and test/e2e/common/network at the "
        "tag (" + source_lines(tag) + ")"
        for m, tag in ((34, "v1.34.4"), (35, "v1.35.4"), (36, "v1.36.3"), (37, "v1.37.2"))
    },
}
# Releases whose names were read from a real file or the source (CHECKED says which).
VERIFIED_FROM_SOURCE: frozenset[str] = frozenset(
    {"v1.19", "v1.21", "v1.30", "v1.34", "v1.35", "v1.36", "v1.37"}
)

# --- normalisation and matching --------------------------------------------------------

_IT_PREFIX = re.compile(r"^\s*\[It\]\s+")
_TAG = re.compile(r"\[[^\[\]]*\]")
_SPACES = re.compile(r"\s+")
# The describe text of the NetworkPolicy tests changed over the years (NetworkPolicy,
# Netpol, NetworkPolicyLegacy); matching ignores which one a file uses.
_NETPOL_DESCRIBE = re.compile(r"\b(?:netpol|networkpolicylegacy)\b")


def _strip_label_list(text: str) -> str:
    """Drop a ginkgo v2 label list appended by the JUnit reporter: " [A, B]" at the very end.

    Only a bracket that holds a comma-separated list counts; "[LinuxOnly] [Serial]" are
    two tags and stay. Written without a regex: the pattern it replaces
    (``\\s+\\[[^\\[\\]]*,\\s[^\\[\\]]*\\]\\s*$``) backtracks quadratically on
    "sctp [" followed by many ", " and no closing bracket. Every step here is linear.
    """
    end = len(text.rstrip())
    if end == 0 or text[end - 1] != "]":
        return text
    start = text.rfind("[", 0, end - 1)
    if start <= 0 or not text[start - 1].isspace():
        return text
    inner = text[start + 1 : end - 1]
    if "]" in inner or not re.search(r",\s", inner):
        return text
    return text[:start].rstrip()


def normalise(name: str) -> str:
    """The one canonical form: entities decoded, no ``[It] ``, no label list, single spaces.

    Linear in the length of ``name``; callers bound that length (Limits.max_name_chars).
    """
    text = html.unescape(name) if "&" in name else name
    text = _SPACES.sub(" ", text).strip()
    text = _IT_PREFIX.sub("", text)
    text = _strip_label_list(text)
    return text.strip()


def core(name: str) -> str:
    """A normalised name with every bracketed tag removed: stable across tag churn.

    Tags in any order or spacing, OpenShift's ``[Suite:openshift/conformance/parallel]
    [Suite:k8s]`` (and ``[Skipped:…]``) suffixes, and the NetworkPolicy describe's
    spelling all vanish here. A trailing single-label list (`` [Feature:X]``) is
    indistinguishable from a tag, and removing tags makes that ambiguity harmless.
    """
    text = _TAG.sub(" ", normalise(name))
    text = _SPACES.sub(" ", text).strip().casefold()
    return _NETPOL_DESCRIBE.sub("networkpolicy", text)


# Names this project's own JUnit export writes for catalog tests that have no upstream
# e2e test (dashboard/domain/ingest/export.py), so that an exported run reads back the same.
EXPORT_NAMES: Mapping[str, str] = {
    POD_TO_LB: "[sig-network] [sctp-dashboard] Battery should connect a pod to another pod "
    "through a LoadBalancer Service: sctp [Feature:SCTPConnectivity]",
}


def _build_core_index(releases: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    index: dict[str, str] = {}
    for names in releases.values():
        for name, key in names.items():
            previous = index.setdefault(core(name), key)
            if previous != key:  # the data would be ambiguous: fail at import, not at runtime
                raise ValueError(f"{name!r} maps to {key} and {previous}")
    return index


CORE_INDEX: dict[str, str] = _build_core_index(
    {**RELEASE_NAMES, "export": {name: key for key, name in EXPORT_NAMES.items()}}
)
_EXACT_BY_RELEASE: dict[str, frozenset[str]] = {
    release: frozenset(normalise(n) for n in names) for release, names in RELEASE_NAMES.items()
}


def catalog_key(name: str) -> str | None:
    """The catalog key an upstream test name feeds, or None."""
    return CORE_INDEX.get(core(name))


def guess_release(normalised_names: Iterable[str], prefer: str | None = None) -> str | None:
    """The release whose exact names match the most of these.

    Several releases share identical names (v1.29 to v1.37, for instance); then
    ``prefer`` (a "v1.30"-style release from e2e.log or the declared version) wins if
    it is among them, otherwise the answer is the range, "v1.29-v1.37".
    """
    found = set(normalised_names)
    scores = {release: len(found & _EXACT_BY_RELEASE[release]) for release in RELEASES}
    top = max(scores.values(), default=0)
    if top == 0:
        return None
    tied = [release for release in RELEASES if scores[release] == top]
    if prefer in tied:
        return prefer
    return tied[0] if len(tied) == 1 else f"{tied[0]}-{tied[-1]}"
