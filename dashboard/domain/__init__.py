"""The domain (Django app label `dashboard`): models, the evidence policy, the readiness
engine, runs bookkeeping, ingest, submissions and audit. It imports the kernel, never the web
and never the Celery app: work goes to the task layer through `tasks_port`."""
