"""The Celery app: Redis broker, tasks from every installed app, schedule from settings."""

from __future__ import annotations

import logging.config
import os

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dws_project.settings")

app = Celery("dws_project")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.setup_logging.connect
def use_django_logging(**_: object) -> None:
    """Celery logs through our redacting formatter instead of configuring its own handlers."""
    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)


@signals.worker_init.connect
def check_worker_database(**_: object) -> None:
    from dws_project.startup import check_database, check_redis_eviction

    check_database("celery worker")
    check_redis_eviction("celery worker")


@signals.beat_init.connect
def check_beat_database(**_: object) -> None:
    from dws_project.startup import check_database, check_redis_eviction

    check_database("celery beat")
    check_redis_eviction("celery beat")
