"""The slow suites with real parts (the kernel guest, the failure drills and Chromium: markers
each of their modules sets, wherever it lives in the tree) each run on one xdist worker, in a
group of their own, while the other workers share the rest (`make test`: --dist loadgroup).
Registered by tests/conftest.py when xdist is loaded; free of Django, so that
tests/project/test_xdist_groups.py runs it on a tree of its own."""

from __future__ import annotations

from collections.abc import Generator

import pytest
from _pytest.nodeid import NodeId

SLOW_SUITES = ("guest", "guestproxy", "drills", "browser", "realcluster")


class SlowSuiteGroups:
    @pytest.hookimpl(wrapper=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> Generator[None]:
        # Before xdist's worker hook reads the groups: one group per slow suite.
        for item in items:
            suite = next((s for s in SLOW_SUITES if item.get_closest_marker(s)), None)
            if suite is not None:
                item.add_marker(pytest.mark.xdist_group(suite))
        yield
        # After it: pytest-xdist 3.8 names an item's group by setting `item._nodeid` to
        # "<nodeid>@<group>", which the controller's loadgroup scheduler splits on. pytest 9
        # derives `nodeid` from the structured `item._id` and ignores `_nodeid`, so without this
        # every test was a group of its own: each worker booted its own kernel guest and
        # Chromium, and the drills ran beside each other.
        for item in items:
            suffixed = getattr(item, "_nodeid", None)
            if isinstance(suffixed, str) and "@" in suffixed and suffixed != item.nodeid:
                item._id = NodeId.parse(suffixed)
