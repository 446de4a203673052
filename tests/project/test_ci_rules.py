"""What keeps CI honest: a missing dependency fails under CI=true, Redis tests are marked so the
embedded pass leaves them out, and .ci/run stops when it cannot install what tests need."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.need import unavailable

ROOT = Path(__file__).resolve().parent.parent.parent


def test_a_missing_dependency_skips_on_a_laptop_and_fails_under_ci(monkeypatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no Chromium"):
        unavailable("no Chromium")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"no Chromium .CI=true"):
        unavailable("no Chromium")


def test_every_test_module_that_starts_a_redis_worker_is_marked_redis() -> None:
    unmarked = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        text = path.read_text()
        starts_worker = (
            re.search(r"celery_worker\((?![^)]*embedded_dir)", text) or "private_redis()" in text
        )
        if starts_worker and "pytest.mark.redis" not in text:
            unmarked.append(str(path.relative_to(ROOT)))
    assert unmarked == []


def test_ci_stops_when_it_cannot_install_what_the_tests_need_and_runs_the_embedded_pass() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    assert "export CI=true" in script
    assert not re.search(r"\|\|\s*echo", script)  # no "install || echo, and carry on"
    assert "make test-embedded" in script
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"test-embedded:.*\n(.*\n)*?.*CELERY_BROKER_URL=filesystem://", makefile)
    # the real-cluster suite needs `make cluster`, which neither the embedded pass nor CI starts
    assert '-m "not redis and not browser and not guest and not realcluster"' in makefile
    assert "-m 'not realcluster'" in script
