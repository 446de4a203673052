from __future__ import annotations

from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """The domain app keeps the label `dashboard` (its tables, migrations and permissions)."""

    name = "dashboard.domain"
    label = "dashboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Django's idiom: models, signals and what hangs off them load once the registry is ready.
        from django.contrib.auth import get_user_model
        from django.db.models.signals import m2m_changed, post_delete, post_migrate, post_save
        from django.test.signals import setting_changed

        from dashboard.domain import (
            checks,  # noqa: F401  (checks registers itself)
            kernel_settings,
            notify,
            schedules,
        )

        # The kernel reads no Django settings: it is handed the ones it obeys, now and on change.
        kernel_settings.apply()
        setting_changed.connect(kernel_settings.on_setting_changed, dispatch_uid="kernel-settings")
        from dashboard.domain.history import EVALUATED, LISTENERS
        from dashboard.domain.models import Schedule

        # Every save of a Schedule (pages, admin, scripts) keeps its beat PeriodicTask in step.
        post_save.connect(
            schedules.on_schedule_saved, sender=Schedule, dispatch_uid="schedule-sync"
        )
        post_delete.connect(
            schedules.on_schedule_deleted, sender=Schedule, dispatch_uid="schedule-unsync"
        )
        # Tokens follow their holder: deactivation or leaving the maintainers revokes them.
        from dashboard.domain import tokens

        user_model = get_user_model()
        post_save.connect(tokens.on_user_saved, sender=user_model, dispatch_uid="token-revoke")
        m2m_changed.connect(
            tokens.on_groups_changed,
            sender=user_model.groups.through,
            dispatch_uid="token-revoke-groups",
        )
        # Any change to evidence drops the shared readiness evaluation.
        from dashboard.domain import models
        from dashboard.domain.publication import invalidate

        for model in (
            models.Run,
            models.TestResult,
            models.Submission,
            models.Schedule,
            models.SignOff,
            models.Plugin,
            models.CatalogTest,
            models.Cluster,
        ):
            post_save.connect(
                invalidate, sender=model, dispatch_uid=f"readiness-cache-save-{model.__name__}"
            )
            post_delete.connect(
                invalidate, sender=model, dispatch_uid=f"readiness-cache-delete-{model.__name__}"
            )
        # Evidence heads (the newest evidence of each cluster, plugin and schedule) follow every
        # save and delete of a run or submission, before the evaluation is dropped.
        from dashboard.domain import heads

        for model, receiver in (
            (models.Run, heads.on_run_changed),
            (models.Submission, heads.on_submission_changed),
        ):
            for name, signal in (("save", post_save), ("delete", post_delete)):
                signal.connect(
                    receiver, sender=model, dispatch_uid=f"evidence-heads-{name}-{model.__name__}"
                )
        # ...and are filled from the history after every migrate (a new table, an old history).
        post_migrate.connect(heads.on_migrated, sender=self, dispatch_uid="evidence-heads-migrate")
        # A criterion that stops being met is announced (importing notify also registers its tasks).
        if notify.on_readiness_change not in LISTENERS:
            LISTENERS.append(notify.on_readiness_change)
        if notify.on_watch_regressions not in EVALUATED:
            EVALUATED.append(notify.on_watch_regressions)
