# syntax=docker/dockerfile:1
# One image for web, worker, beat and the lab (docker-compose.yml, deploy/base). The worker's
# `upstream` battery runs upstream's e2e.test of the cluster's minor from E2E_DIR: the stages
# below build one per wrapper module in deploy/e2e/v1.<minor>/ with the project's own script
# (deploy/e2e/build-binaries.sh, as `make e2e-binaries` does), each pinned to the exact tag its
# go.mod requires and checked with `e2e.test --version`. They are chained (each FROM the one
# before) so that BuildKit links one e2e.test at a time (about 1.6 GB of memory each), and share
# the Go module and build caches, so every minor after the first builds warm.
# tests/project/test_dockerfile.py checks that each committed module has its stage and its COPY.

FROM golang:1.26.8-bookworm AS e2e-build
ENV GOTOOLCHAIN=local CGO_ENABLED=0
WORKDIR /src
COPY deploy/e2e/ deploy/e2e/

FROM e2e-build AS e2e-v1.34
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    E2E_MINORS=34 E2E_DIR=/out deploy/e2e/build-binaries.sh \
    && test "$(/out/v1.34/e2e.test --version)" = v1.34.4

FROM e2e-v1.34 AS e2e-v1.35
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    E2E_MINORS=35 E2E_DIR=/out deploy/e2e/build-binaries.sh \
    && test "$(/out/v1.35/e2e.test --version)" = v1.35.4

FROM e2e-v1.35 AS e2e-v1.36
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    E2E_MINORS=36 E2E_DIR=/out deploy/e2e/build-binaries.sh \
    && test "$(/out/v1.36/e2e.test --version)" = v1.36.3

FROM e2e-v1.36 AS e2e-v1.37
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    E2E_MINORS=37 E2E_DIR=/out deploy/e2e/build-binaries.sh \
    && test "$(/out/v1.37/e2e.test --version)" = v1.37.2

FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /app
COPY pyproject.toml ./
RUN python -c 'import tomllib,subprocess,sys;p=tomllib.load(open("pyproject.toml","rb"))["project"];subprocess.check_call([sys.executable,"-m","pip","install","--no-cache-dir",*p["dependencies"],*p["optional-dependencies"]["server"]])'
# Outside VAR_DIR, which deployments mount a volume over (deploy/base: /var/lib/sctp-dashboard).
ENV E2E_DIR=/opt/sctp-e2e
COPY --from=e2e-v1.34 /out/v1.34/ /opt/sctp-e2e/v1.34/
COPY --from=e2e-v1.35 /out/v1.35/ /opt/sctp-e2e/v1.35/
COPY --from=e2e-v1.36 /out/v1.36/ /opt/sctp-e2e/v1.36/
COPY --from=e2e-v1.37 /out/v1.37/ /opt/sctp-e2e/v1.37/
COPY . .
RUN useradd --create-home app && mkdir -p /app/var && chown -R app /app/var
USER app
EXPOSE 8000
CMD ["gunicorn", "dashboard.wsgi:application", "--bind", "0.0.0.0:8000"]
