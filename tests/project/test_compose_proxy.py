"""Issue 22, finding 8: docker compose exposed gunicorn's sync workers directly (six slow
sockets held requests for 55 s). Now nginx, a buffering reverse proxy with client timeouts, is
the only way in, as the ingress is in deploy/. (No Docker engine here: the files are read.)"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def nginx_directives(text: str) -> list[tuple[tuple[str, ...], str, list[str]]]:
    """(enclosing blocks, name, arguments) of every directive; fails on unbalanced braces or a
    directive without its semicolon, as `nginx -t` would."""
    tokens = re.findall(r'"[^"]*"|[{};]|[^\s{};"]+', re.sub(r"#[^\n]*", "", text))
    out: list[tuple[tuple[str, ...], str, list[str]]] = []
    stack: list[str] = []
    current: list[str] = []
    for token in tokens:
        if token == "{":
            stack.append(" ".join(current))
            current = []
        elif token == "}":
            assert not current, f"directive without ';': {current}"
            stack.pop()
        elif token == ";":
            out.append((tuple(stack), current[0], current[1:]))
            current = []
        else:
            current.append(token.strip('"'))
    assert not stack and not current, "unbalanced nginx.conf"
    return out


def seconds(value: str) -> int:
    match = re.fullmatch(r"(\d+)([sm]?)", value)
    assert match, value
    number, unit = match.groups()
    return int(number) * (60 if unit == "m" else 1)


def test_only_the_proxy_is_published_and_it_waits_for_the_web() -> None:
    services = compose()["services"]
    assert "ports" not in services["web"]  # gunicorn is reachable inside the network only
    proxy = services["proxy"]
    assert proxy["image"].startswith("nginx:")
    assert any(p.startswith("8000:") for p in proxy["ports"])
    assert proxy["depends_on"]["web"]["condition"] == "service_healthy"
    assert "healthcheck" in proxy
    for name, service in services.items():
        if name != "proxy":
            assert not service.get("ports"), f"{name} is published past the proxy"


def test_the_proxy_buffers_and_times_out_slow_clients() -> None:
    proxy = compose()["services"]["proxy"]
    mount = next(v for v in proxy["volumes"] if v.endswith(":/etc/nginx/nginx.conf:ro"))
    conf = ROOT / mount.split(":")[0]
    found = nginx_directives(conf.read_text())
    values = {name: args for _, name, args in found}
    for timeout in ("client_header_timeout", "client_body_timeout", "send_timeout"):
        assert seconds(values[timeout][0]) <= 30, timeout
    assert values["proxy_request_buffering"] == ["on"] and values["proxy_buffering"] == ["on"]
    upstream = [
        args for blocks, name, args in found if name == "server" and "upstream web" in blocks
    ]
    assert upstream == [["web:8000"]]
    assert any(name == "proxy_pass" and args == ["http://web"] for _, name, args in found)
    forwarded = [args for _, name, args in found if name == "proxy_set_header"]
    # what the proxy saw replaces the client's claim; appending it would keep the spoofed hops
    assert ["X-Forwarded-For", "$remote_addr"] in forwarded
    size = re.fullmatch(r"(\d+)([km]?)", values["client_max_body_size"][0])
    assert size
    number, unit = size.groups()
    limit = int(number) * {"": 1, "k": 1024, "m": 1024 * 1024}[unit]
    assert limit >= 50 * 1024 * 1024  # SUBMISSION_MAX_BYTES fits


def test_the_nginx_parser_refuses_what_nginx_would() -> None:
    import pytest

    with pytest.raises(AssertionError):
        nginx_directives("http { server { listen 8080 } }")
    with pytest.raises(AssertionError):
        nginx_directives("http { server { listen 8080; }")
