"""One module per graduation criterion, registered here in display order."""

from __future__ import annotations

from dashboard.domain.readiness.criteria import (
    iptables_and_ipvs,
    periodic_basic_passing,
    tests_written,
    two_out_of_tree_plugins,
)

CRITERIA = {
    module.KEY: module
    for module in (
        tests_written,
        periodic_basic_passing,
        two_out_of_tree_plugins,
        iptables_and_ipvs,
    )
}
