# Two commands for a newcomer: `make demo` and `make test` (`make lint` before a commit).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SUM := $(shell cat pyproject.toml | cksum | cut -d' ' -f1)
# Two stamps: the demo installs only what it runs; the tests add the test extra on top.
RUNTIME_STAMP := $(VENV)/.runtime-$(SUM)
TEST_STAMP := $(VENV)/.test-$(SUM)

comma := ,
# uv (from the registry, when it can be had: it installs in seconds what pip takes a minute
# for, with or without a cache), else pip. $(1): the extras, space-separated ("" for none).
define pyinstall
	if $(VENV)/bin/pip install --quiet --disable-pip-version-check uv 2>/dev/null; then \
	  $(VENV)/bin/uv pip install --quiet --python $(VENV)/bin/python -r pyproject.toml \
	    $(addprefix --extra ,$(1)); \
	else \
	  $(VENV)/bin/pip install --quiet --disable-pip-version-check \
	    ".$(if $(strip $(1)),[$(subst $(eval) ,$(comma),$(strip $(1)))])"; \
	fi
endef

# The demo's: only what `make demo` runs (web, worker, lab on SQLite); the server extra
# (PostgreSQL driver, gunicorn, pysctp) comes with the tests' install and the container image.
$(RUNTIME_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(call pyinstall,)
	rm -f $(VENV)/.runtime-* $(VENV)/.installed-*
	touch $(RUNTIME_STAMP)

$(TEST_STAMP): $(RUNTIME_STAMP)
	$(call pyinstall,server test lint)
	rm -f $(VENV)/.test-*
	touch $(TEST_STAMP)

# PostgreSQL and Redis on loopback, installed from Debian's packages when missing (root), as CI
# starts them (.ci/services); `make test` with DATABASE_URL/REDIS_URL set uses them.
services:
	.ci/services

.PHONY: lab-replay lab-record services install demo test test-sqlite test-realcluster fuzz lint bench bench-smoke clean-demo screenshots \
	e2e-binaries cluster cluster-down cluster-proxy cluster-node guest-proxy

# Upstream's e2e.test of each release with a wrapper module in deploy/e2e/v1.<minor>/ (the newest
# patch the Go module proxy serves) into var/e2e/v1.<minor>/e2e.test, for the `upstream` battery
# (needs Go; out of tree, `go test -c`; cached by a stamp; E2E_MINORS="36" builds one, E2E_BUILD_P=1
# compiles one package at a time). `deploy/e2e/dry-run.py <minor>` dry-runs a built one.
e2e-binaries:
	deploy/e2e/build-binaries.sh

install: $(TEST_STAMP)

# Serves http://127.0.0.1:8000 with the lab's clusters registered and their first runs under way.
demo: $(RUNTIME_STAMP)
	$(PY) manage.py demo

# The suite runs on TEST_WORKERS pytest-xdist workers (each with its own test database, Redis
# prefix and ports): the slow suites with real parts (markers guest, drills, browser) each run
# on one worker (xdist groups: tests/conftest.py) while the others share the rest. More workers
# than cores: most tests wait on subprocesses, servers and timeouts. TEST_WORKERS=0: one process.
TEST_WORKERS ?= 4
XDIST = -n $(TEST_WORKERS) --dist loadgroup
# Bytecode is written (and pytest's rewritten test modules cached) even where the environment
# says PYTHONDONTWRITEBYTECODE: every worker and every process the tests start would compile
# the project again.
TEST_ENV = PYTHONDONTWRITEBYTECODE= DJANGO_ALLOW_ASYNC_UNSAFE=true

# The whole suite (DATABASE_URL selects PostgreSQL; SQLite otherwise), then its 15 slowest
# tests. COVERAGE=1 (CI sets it) adds the line coverage of kernel/, dashboard/, workers/ and
# lab/, combined over the xdist workers and the processes they start (config: pyproject.toml);
# measuring it costs about half as much time again, so the everyday run leaves it out.
COVERAGE ?=
COV_ARGS = $(if $(COVERAGE),--cov --cov-report=term,)
test: $(TEST_STAMP)
	rm -rf var/coverage && mkdir -p var/coverage
	$(TEST_ENV) $(PY) -m pytest -q $(XDIST) --durations=15 $(COV_ARGS) $(PYTEST_ARGS)

# The property-based tests at length (issue 36): the evidence state machine at 200 examples of 30
# steps (`make test` runs 10 of 12) and schemathesis at 100 examples per operation and role
# (`make test`: 15), on the database of DATABASE_URL like `make test`. SCTP_MACHINE_SEED=N draws
# another sequence of steps than the derandomized default.
FUZZ_MACHINE_EXAMPLES ?= 200
FUZZ_MACHINE_STEPS ?= 30
FUZZ_SCHEMA_EXAMPLES ?= 100
fuzz: $(TEST_STAMP)
	SCTP_MACHINE_EXAMPLES=$(FUZZ_MACHINE_EXAMPLES) SCTP_MACHINE_STEPS=$(FUZZ_MACHINE_STEPS) \
	  SCHEMA_FUZZ_EXAMPLES=$(FUZZ_SCHEMA_EXAMPLES) $(TEST_ENV) $(PY) -m pytest -q $(XDIST) \
	  tests/domain/test_evidence_machine.py tests/web/test_schema_conformance.py $(PYTEST_ARGS)

# The embedded mode (`make demo` without Redis): every test that does not need a Redis server,
# on the filesystem broker, database cache and database leases. REDIS_URL names a port where
# nothing listens, so whatever would still reach for Redis fails loudly instead of passing.
test-embedded: $(TEST_STAMP)
	DATABASE_URL= CACHE_URL= CELERY_BROKER_URL=filesystem:// REDIS_URL=redis://127.0.0.1:1/0 \
	  $(TEST_ENV) $(PY) -m pytest -q $(XDIST) -m "not redis and not browser and not guest and not realcluster" $(PYTEST_ARGS)

# The real-cluster suite (marker realcluster, tests/realcluster/) against the running cluster of
# `make cluster` (REALCLUSTER_KUBECONFIG names another kubeconfig), in one process: its tests
# share the one cluster. Without a cluster (or without Go to build one) its tests are skipped
# with the reason; under CI=true they fail. CI runs it between `make cluster` and
# `make cluster-down` (.ci/run).
test-realcluster: $(TEST_STAMP)
	$(TEST_ENV) $(PY) -m pytest -q -n 0 -m realcluster --durations=10 tests/realcluster $(PYTEST_ARGS)

# The database-facing tests again on the embedded SQLite, whatever DATABASE_URL says.
test-sqlite: $(TEST_STAMP)
	DATABASE_URL= $(TEST_ENV) $(PY) -m pytest -q $(XDIST) -m "not browser and not guest and not drills" tests/domain tests/web tests/tasks $(PYTEST_ARGS)

# The gate CI runs before the tests: lint, formatting, types (settings in pyproject.toml).
lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# Every benchmark at full size, one table each, exit 1 when one misses its target (needs
# PostgreSQL, Redis and wrk, as CI has them; sets everything else itself).
bench: $(TEST_STAMP)
	$(PY) bench/run.py

# The README's screenshots (docs/screenshots/), from the demo at SCREENSHOT_URL (started when
# nothing answers there, and stopped afterwards).
screenshots: $(TEST_STAMP)
	$(PY) bench/screenshots.py

# The same benchmarks and code paths at small sizes, every target judged (CI runs it).
bench-smoke: $(TEST_STAMP)
	$(PY) bench/run.py --smoke

clean-demo:
	rm -rf var/dashboard.sqlite3* var/broker

# A real single-node cluster from the upstream release pinned in cluster/release.env, in one
# command (cluster/cluster.sh, one progress line per step): builds once (cached, stamps keyed on
# release.env; needs Go 1.26, the first build takes minutes) the control plane, kube-proxy,
# kubelet, kubectl, containerd, runc, the CNI plugins, the pause and agnhost images and
# kube-network-policies, then starts the control plane on 127.0.0.1, the node (images
# imported, no pull), kube-proxy (KUBE_PROXY_MODE=iptables|nftables) and kube-network-policies
# (or says plainly why NetworkPolicy is not enforced). Says so when already up.
# Kubeconfig: var/cluster/kubeconfig.
cluster:
	cluster/cluster.sh

# The lab held against the real API server (lab/replay.py): replays the committed recording of
# kube-apiserver v1.36.3's answers (tests/fixtures/realcluster/api-recording.json) against a
# fresh lab and lists every difference, the known ones with their reason (exit 1 on another).
lab-replay: $(TEST_STAMP)
	$(PY) -m lab.replay replay -v

# Records it again from a running real cluster (`make cluster`; REALCLUSTER_KUBECONFIG and
# REALCLUSTER_KUBECTL name another one's kubeconfig and kubectl).
lab-record: $(TEST_STAMP)
	$(PY) manage.py lab_record --kubeconfig $${REALCLUSTER_KUBECONFIG:-var/cluster/kubeconfig} \
	  --kubectl $${REALCLUSTER_KUBECTL:-var/cluster/bin/kubectl}

# Stops it all (by pid files) and removes its state, keeping the built binaries; then checks
# that no process, link, mount, KUBE-*/CNI-* chain, nft table or listener of it is left.
cluster-down:
	cluster/down.sh

# kube-proxy alone (KUBE_PROXY_MODE=iptables|nftables, default iptables; `make cluster` starts
# it too; another mode replaces the running one). cluster/capture-proxy-rules.sh captures the
# rules it writes for an SCTP Service into tests/fixtures/realcluster/.
cluster-proxy: cluster
	cluster/kube-proxy.sh

# The node alone (`make cluster` starts it too): containerd, runc and the reference CNI plugins,
# the pause and agnhost images imported (no pull), the kubelet; waits for the node to be Ready.
cluster-node: cluster
	cluster/node.sh

# Upstream's kube-proxy (the release's binary, from cluster/build.sh) in the qemu guest, in
# iptables, ipvs and nftables mode, against a control plane of its own (lab/guest/
# control-plane.sh: var/cluster-guest, ports 26443, 22379/22380, 20257, 20259; nothing shared
# with `make cluster`), carrying a real SCTP association through an SCTP Service's ClusterIP:
# tests/kernel/test_guest_kube_proxy.py (marker guestproxy, opt-in), qemu at nice 10. The
# control plane is stopped and its state removed afterwards, whatever the outcome; exit 1 on any
# FAIL, and when qemu, the guest image or the binaries are missing (GUEST_PROXY_REQUIRED=1).
guest-proxy: $(TEST_STAMP)
	@rc=0; GUEST_PROXY_REQUIRED=1 $(TEST_ENV) nice -n 10 $(PY) -m pytest -q -n 0 -m guestproxy \
	  -p no:cacheprovider tests/kernel/test_guest_kube_proxy.py $(PYTEST_ARGS) || rc=$$?; \
	  lab/guest/control-plane.sh down || rc=1; exit $$rc
