"""Issue 39: the Sonobuoy and Hydrophone commands the refusal page and the upload page give
(provenance.commands) are pinned to what the tools' own source says. Verified flags:

Sonobuoy (vmware-tanzu/sonobuoy; the CLI reference is cobra's output of the command's flags):
- `run --plugin/-p`: cmd/sonobuoy/app/args.go@1b626d7 AddPluginSetFlag (`flags.VarP(p,
  "plugin", "p", …)`); site/content/docs/main/cli/sonobuoy_run.md@1efd8d7:33
- `run --e2e-focus`, `--e2e-skip`: args.go@1b626d7 const e2eFocusFlag = "e2e-focus",
  e2eSkipFlag = "e2e-skip" (AddLegacyE2EFlags sets E2E_FOCUS / E2E_SKIP of the e2e plugin);
  sonobuoy_run.md@1efd8d7:18 ("Shorthand for --plugin-env=e2e.E2E_FOCUS=<string>") and :21
  (E2E_SKIP; its default `\\[Disruptive\\]|NoExecuteTaintManager` is replaced, not added to)
- `run --wait` without a value: args.go@1b626d7 AddRunWaitFlag, `NoOptDefVal = "1440"`
  (minutes); sonobuoy_run.md@1efd8d7:51 `--wait int[=1440]`
- `retrieve [path] --filename/-f`: site/content/docs/main/cli/sonobuoy_retrieve.md@7c25084:14
  ("-f, --filename string  Specify the name of the downloaded file"); the two older
  retrieve.go versions indexed (8249139, 0586df2) have no such flag, so it needs a Sonobuoy of
  the v0.56 line (the one documented there)

Hydrophone (kubernetes-sigs/hydrophone):
- `--focus`: cmd/root.go@ac8c7eb:76 (a regular expression; without it, `[Conformance]`)
- `--skip`: pkg/types/flags.go@9247938:34; `--output-dir`: flags.go@9247938:33 (root.go's
  action writes the run's files there: FetchFiles(ctx, config.OutputDir))
"""

from __future__ import annotations

import re
import shlex

import pytest

from dashboard.domain.ingest import provenance
from dashboard.domain.ingest.upstream_names import RELEASE_NAMES, RELEASES

SONOBUOY_FLAGS = {
    "run": {"--plugin", "--e2e-focus", "--e2e-skip", "--wait"},
    "retrieve": {"--filename"},
}
HYDROPHONE_FLAGS = {"--focus", "--skip", "--output-dir"}


@pytest.mark.parametrize("release", [None, *RELEASES])
def test_the_commands_are_the_verified_ones(release) -> None:
    steps = provenance.commands(release)["steps"]
    skip = (
        r"\[Flaky\]"
        if "[Disruptive]" in provenance.connectivity_tags(release)
        else r"\[Disruptive\]|\[Flaky\]"
    )
    assert steps == {
        "sonobuoy": [
            f"sonobuoy run --plugin e2e --e2e-focus 'SCTP' --e2e-skip '{skip}' --wait",
            "sonobuoy retrieve . --filename sctp-sonobuoy.tar.gz",
        ],
        "hydrophone": [
            f"hydrophone --focus 'SCTP' --skip '{skip}' --output-dir sctp-results",
            "tar -czf sctp-hydrophone.tar.gz -C sctp-results .",
        ],
    }
    # every flag is one of the verified ones, for its subcommand
    for line in steps["sonobuoy"]:
        words = shlex.split(line)
        flags = {w.split("=")[0] for w in words if w.startswith("--")}
        assert words[0] == "sonobuoy" and flags <= SONOBUOY_FLAGS[words[1]], line
    words = shlex.split(steps["hydrophone"][0])
    assert {w for w in words if w.startswith("--")} <= HYDROPHONE_FLAGS
    # the file written is the file packed
    assert words[words.index("--output-dir") + 1] == shlex.split(steps["hydrophone"][1])[4]


@pytest.mark.parametrize("release", RELEASES)
def test_focus_selects_every_sctp_spec_of_the_release_and_skip_none(release) -> None:
    """Ginkgo matches focus and skip as regular expressions against the spec's full name:
    the focus must select each SCTP spec the catalog maps, and the skip must drop none."""
    steps = provenance.commands(release)["steps"]
    words = shlex.split(steps["hydrophone"][0])
    focus = re.compile(words[words.index("--focus") + 1])
    skip = re.compile(words[words.index("--skip") + 1])
    names = [n for n in RELEASE_NAMES[release] if "sctp" in n.lower()]
    assert names, release
    for name in names:
        assert focus.search(name), (release, name)
        assert not skip.search(name), (release, name)
