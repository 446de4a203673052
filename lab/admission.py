"""API-side checks on objects that name protocols or host access: SCTP, PodSecurity admission."""

from __future__ import annotations

from typing import Any

from lab.errors import ApiError


def protocol_causes(
    profile: dict[str, Any], protocol: str, field: str
) -> list[tuple[str, str, str]]:
    """The 422 cause a real apiserver gives for a protocol (SCTP only with the feature gate)."""
    allowed = ["TCP", "UDP"] + (["SCTP"] if profile["sctp_feature_gate"] else [])
    if protocol in allowed:
        return []
    supported = ", ".join(f'"{p}"' for p in allowed)
    return [
        (
            field,
            "FieldValueNotSupported",
            f'Unsupported value: "{protocol}": supported values: {supported}',
        )
    ]


def has_sctp_port(kind: str, spec: dict[str, Any]) -> bool:
    if kind == "pods":
        ports = [p for c in spec.get("containers") or [] for p in c.get("ports") or []]
    elif kind == "services":
        ports = spec.get("ports") or []
    else:
        ports = [
            p
            for d in ("ingress", "egress")
            for r in spec.get(d) or []
            for p in r.get("ports") or []
        ]
    return any(p.get("protocol") == "SCTP" for p in ports)


def pod_security_violations(spec: dict[str, Any]) -> list[str]:
    """What the PodSecurity `baseline` level rejects, worded like the admission plugin.

    In its checks' order (by check ID: hostNamespaces, hostPathVolumes, hostPorts,
    privileged), as `violates PodSecurity "baseline:latest": host namespaces (…), …` lists them.
    """
    out: list[str] = []
    host = [f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k)]
    if host:
        out.append(f"host namespaces ({', '.join(host)})")
    volumes = [v["name"] for v in spec.get("volumes") or [] if "hostPath" in v]
    if volumes:
        quoted = ", ".join(f'"{n}"' for n in volumes)
        word = "volume" if len(volumes) == 1 else "volumes"
        out.append(f"hostPath volumes ({word} {quoted})")
    host_ports = [
        (c["name"], p["hostPort"])
        for c in spec.get("containers") or []
        for p in c.get("ports") or []
        if p.get("hostPort")
    ]
    if host_ports:
        names = sorted({f'"{n}"' for n, _p in host_ports})
        ports = ", ".join(str(p) for _n, p in host_ports)
        if len(host_ports) == 1:
            out.append(f"hostPort (container {names[0]} uses hostPort {ports})")
        else:
            word = "container" if len(names) == 1 else "containers"
            verb = "uses" if len(names) == 1 else "use"
            out.append(f"hostPort ({word} {', '.join(names)} {verb} hostPorts {ports})")
    privileged = [
        c["name"]
        for c in spec.get("containers") or []
        if (c.get("securityContext") or {}).get("privileged")
    ]
    if privileged:
        quoted = ", ".join(f'"{n}"' for n in privileged)
        word = "container" if len(privileged) == 1 else "containers"
        out.append(f"privileged ({word} {quoted} must not set securityContext.privileged=true)")
    return out


def _containers(names: list[str]) -> str:
    quoted = ", ".join(f'"{n}"' for n in names)
    return f"container {quoted}" if len(names) == 1 else f"containers {quoted}"


def _must(names: list[str], what: str, pod: bool = False) -> str:
    return f"{'pod or ' if pod else ''}{_containers(names)} must set {what}"


# The volume types the restricted level allows (pod-security-admission's restrictedVolumes).
_RESTRICTED_OK_VOLUMES = (
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
)


def restricted_violations(spec: dict[str, Any]) -> list[str]:
    """What the `restricted` level rejects beyond `baseline`, worded as
    k8s.io/pod-security-admission's policy checks at v1.36 (check_allowPrivilegeEscalation.go,
    check_capabilities_restricted.go, check_restrictedVolumes.go, check_runAsNonRoot.go,
    check_seccompProfile_restricted.go), in that order. Only the containers' forms the battery
    and kubectl send are covered: capabilities added, runAsUser and init containers are not."""
    containers = spec.get("containers") or []
    pod_sc = spec.get("securityContext") or {}

    def sc(c: dict[str, Any]) -> dict[str, Any]:
        return c.get("securityContext") or {}

    out: list[str] = []
    escalating = [
        c["name"] for c in containers if sc(c).get("allowPrivilegeEscalation") is not False
    ]
    if escalating:
        out.append(
            "allowPrivilegeEscalation != false "
            f"({_must(escalating, 'securityContext.allowPrivilegeEscalation=false')})"
        )
    no_drop = [
        c["name"]
        for c in containers
        if "ALL" not in ((sc(c).get("capabilities") or {}).get("drop") or [])
    ]
    if no_drop:
        drop = 'securityContext.capabilities.drop=["ALL"]'
        out.append(f"unrestricted capabilities ({_must(no_drop, drop)})")
    bad = [
        (v["name"], next((k for k in v if k != "name"), ""))
        for v in spec.get("volumes") or []
        if not any(k in v for k in _RESTRICTED_OK_VOLUMES)
    ]
    if bad:
        names = ", ".join(f'"{n}"' for n, _t in bad)
        types = ", ".join(sorted({f'"{t}"' for _n, t in bad}))
        if len(bad) == 1:
            out.append(
                f"restricted volume types (volume {names} uses restricted volume type {types})"
            )
        else:
            word = "type" if len(types.split(", ")) == 1 else "types"
            out.append(
                f"restricted volume types (volumes {names} use restricted volume {word} {types})"
            )
    if pod_sc.get("runAsNonRoot") is not True:
        unset = [c["name"] for c in containers if sc(c).get("runAsNonRoot") is not True]
        if unset:
            out.append(
                f"runAsNonRoot != true ({_must(unset, 'securityContext.runAsNonRoot=true', pod=True)})"
            )
    if not (pod_sc.get("seccompProfile") or {}).get("type"):
        unset = [
            c["name"] for c in containers if not (sc(c).get("seccompProfile") or {}).get("type")
        ]
        if unset:
            what = 'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"'
            out.append(f"seccompProfile ({_must(unset, what, pod=True)})")
    return out


ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"


def namespace_refusal(
    name: str, spec: dict[str, Any], labels: dict[str, Any] | None
) -> ApiError | None:
    """Pod Security admission as the namespace's `pod-security.kubernetes.io/enforce` label
    asks (`baseline` or `restricted`; `privileged` or no label: nothing is checked)."""
    level = str((labels or {}).get(ENFORCE_LABEL) or "")
    if level not in ("baseline", "restricted"):
        return None
    violations = pod_security_violations(spec)
    if level == "restricted":
        # restricted's restrictedVolumes check replaces baseline's hostPathVolumes.
        extra = restricted_violations(spec)
        violations = [v for v in violations if not v.startswith("hostPath volumes")]
        violations = violations + extra
    if not violations:
        return None
    version = str((labels or {}).get(f"{ENFORCE_LABEL}-version") or "latest")
    return ApiError(
        403,
        f'pods "{name}" is forbidden: violates PodSecurity "{level}:{version}": '
        f"{', '.join(violations)}",
        details={"name": name, "kind": "pods"},
    )


WEBHOOK = "pod-policy.example.com"


def admission_refusal(
    profile: dict[str, Any],
    name: str,
    spec: dict[str, Any],
    namespace_labels: dict[str, Any] | None = None,
) -> ApiError | None:
    """How admission refuses a privileged pod (`admission.privileged_pods`, then the
    namespace's Pod Security label), or None.

    forbid: Pod Security admission (403 Forbidden, its own words); webhook-deny: a validating
    webhook (400 BadRequest, the apiserver's `admission webhook ... denied the request`).
    """
    mode = profile["admission"]["privileged_pods"]
    if mode == "allow":
        return namespace_refusal(name, spec, namespace_labels)
    violations = pod_security_violations(spec)
    if not violations:
        return None
    if mode == "webhook-deny":
        return ApiError(
            400,
            f'admission webhook "{WEBHOOK}" denied the request: privileged '
            "pods, host namespaces and hostPath volumes are not allowed",
            reason="BadRequest",
        )
    return ApiError(
        403,
        f'pods "{name}" is forbidden: violates PodSecurity '
        f'"baseline:latest": {", ".join(violations)}',
        details={"name": name, "kind": "pods"},
    )
