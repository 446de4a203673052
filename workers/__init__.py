"""The task layer: the Celery tasks (`workers.tasks`), the runner that executes one run while it
holds its cluster's lease, and the commands that run a battery in this process. The Celery app
itself is the project's (`dashboard/celery.py`); the battery is the kernel's (`kernel/`)."""
