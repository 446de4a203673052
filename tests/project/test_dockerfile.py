"""The image carries an e2e.test for every release the project has a wrapper module for.

Static, read from the Dockerfile (there is no Docker engine where the tests run: the image build
itself is not run here). For each deploy/e2e/v1.<minor>/go.mod: a stage `e2e-v1.<minor>` that
runs the project's build script for that minor and checks the binary says the exact tag the
module requires, and a COPY of its output into the final image at the image's E2E_DIR.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
E2E = REPO / "deploy" / "e2e"
_FROM = re.compile(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?\s*$", re.IGNORECASE)


def _modules() -> dict[int, str]:
    """minor -> the k8s.io/kubernetes tag its wrapper module requires."""
    found = {}
    for go_mod in sorted(E2E.glob("v1.*/go.mod")):
        minor = int(go_mod.parent.name.split(".")[1])
        tag = re.search(
            r"^\s*(?:require\s+)?k8s\.io/kubernetes (v1\.\d+\.\d+)\s*$", go_mod.read_text(), re.M
        )
        assert tag, f"{go_mod} requires no k8s.io/kubernetes"
        found[minor] = tag.group(1)
    return found


def _go_directive(minor: int) -> tuple[int, ...]:
    text = (E2E / f"v1.{minor}" / "go.mod").read_text()
    found = re.search(r"^go (\d+(?:\.\d+)*)$", text, re.M)
    assert found
    return tuple(int(p) for p in found.group(1).split("."))


def _stages() -> list[tuple[str, str | None, str]]:
    """(base, name, body) per stage; body is the stage's instructions, continuations joined."""
    text = (REPO / "Dockerfile").read_text().replace("\\\n", " ")
    stages: list[tuple[str, str | None, list[str]]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if m := _FROM.match(line):
            stages.append((m.group(1), m.group(2), []))
        elif stages:
            stages[-1][2].append(line)
    return [(base, name, "\n".join(body)) for base, name, body in stages]


def test_there_are_modules_for_the_supported_minors():
    assert set(_modules()) >= {34, 35, 36, 37}


def test_each_modules_minor_has_its_build_stage_pinned_to_its_tag():
    stages = {name: (base, body) for base, name, body in _stages() if name}
    for minor, tag in _modules().items():
        stage = f"e2e-v1.{minor}"
        assert stage in stages, f"the Dockerfile has no stage {stage} for deploy/e2e/v1.{minor}/"
        _, body = stages[stage]
        assert f"E2E_MINORS={minor} " in body and "deploy/e2e/build-binaries.sh" in body, stage
        assert f'test "$(/out/v1.{minor}/e2e.test --version)" = {tag}' in body, (
            f"{stage} does not check the binary is {tag} (the tag deploy/e2e/v1.{minor}/go.mod "
            "requires)"
        )
    # No stage for a minor without a module.
    built = {int(n.split(".")[1]) for n in stages if n.startswith("e2e-v1.")}
    assert built == set(_modules())


def test_the_build_stages_run_one_at_a_time_from_the_copied_scripts():
    stages = _stages()
    names = [name for _, name, _ in stages]
    minors = sorted(_modules())
    previous = "e2e-build"
    base_stage = next(body for _, name, body in stages if name == previous)
    assert "COPY deploy/e2e/ deploy/e2e/" in base_stage
    for minor in minors:
        base, name, _ = stages[names.index(f"e2e-v1.{minor}")]
        assert base == previous, f"{name} builds FROM {base}, not after {previous}"
        previous = name


def test_the_builder_go_is_new_enough_for_every_module_with_the_local_toolchain():
    base, _, body = next(s for s in _stages() if s[1] == "e2e-build")
    found = re.fullmatch(r"golang:(\d+)\.(\d+)\.(\d+)-\w+", base)
    assert found, f"the Go image is not pinned to a patch release: {base}"
    go = tuple(int(p) for p in found.groups())
    assert "GOTOOLCHAIN=local" in body
    for minor in _modules():
        assert _go_directive(minor) <= go, f"deploy/e2e/v1.{minor} needs a newer Go than {base}"


def test_the_final_image_carries_each_binary_at_its_e2e_dir():
    base, name, body = _stages()[-1]
    assert name is None and base.startswith("python:")
    assert "ENV E2E_DIR=/opt/sctp-e2e" in body
    for minor in _modules():
        line = f"COPY --from=e2e-v1.{minor} /out/v1.{minor}/ /opt/sctp-e2e/v1.{minor}/"
        assert line in body, f"the image does not carry 1.{minor}'s e2e.test"
    # E2E_DIR is outside VAR_DIR, which deploy/base mounts a volume over.
    configmap = (REPO / "deploy" / "base" / "configmap.yaml").read_text()
    var_dir = re.search(r"VAR_DIR: (\S+)", configmap)
    assert var_dir and not "/opt/sctp-e2e".startswith(var_dir.group(1))
    assert "E2E_DIR" not in configmap


def test_local_state_and_binaries_stay_out_of_the_build_context():
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".git", ".venv", "var"} <= set(ignored)
