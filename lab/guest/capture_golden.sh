#!/bin/sh
# Regenerates tests/fixtures/node/ from a real kernel: boots the guest, runs the batch of
# SCTP checks (which print iptables-save, ipvsadm -Ln, nft list ruleset and lsmod for
# kube-proxy-style SCTP service rules) and copies out/golden/* over the fixtures.
# Needs what lab/guest/install-host-deps.sh installs; builds the image on first use.
set -eu
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-.venv/bin/python}
exec "$PYTHON" -m lab.guest.golden "$@"
