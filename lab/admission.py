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


WEBHOOK = "pod-policy.example.com"


def admission_refusal(profile: dict[str, Any], name: str, spec: dict[str, Any]) -> ApiError | None:
    """How admission refuses a privileged pod (`admission.privileged_pods`), or None.

    forbid: Pod Security admission (403 Forbidden, its own words); webhook-deny: a validating
    webhook (400 BadRequest, the apiserver's `admission webhook ... denied the request`).
    """
    mode = profile["admission"]["privileged_pods"]
    if mode == "allow":
        return None
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
