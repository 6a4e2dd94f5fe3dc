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
    from donations.webhook_delivery import check_secrets_key
    from dws_project.startup import check_database, check_redis_eviction

    check_database("celery worker")
    check_redis_eviction("celery worker")
    check_secrets_key("celery worker")


@signals.beat_init.connect
def check_beat_database(**_: object) -> None:
    from dws_project.startup import check_database, check_redis_eviction

    check_database("celery beat")
    check_redis_eviction("celery beat")
    _expect_crawler_runs("celery beat")


# --- operations: heartbeat, metrics, graceful shutdown (dws_project/heartbeat.py, metrics.py, shutdown.py)


def _add_heartbeat_step() -> None:
    from dws_project.heartbeat import WorkerHeartbeat

    app.steps["worker"].add(WorkerHeartbeat)


_add_heartbeat_step()


def _expect_crawler_runs(process: str) -> None:
    """From this start on, a crawler job that does not run is overdue (crawlers/runs/cadence.py)."""
    from django.conf import settings

    from crawlers.runs.cadence import expect_runs

    try:
        for chain in settings.CONFIG.chain_names:
            expect_runs(chain)
    except Exception as exc:  # noqa: BLE001 - the readiness probe reports a database it cannot read
        logging.getLogger("dws.startup").warning("%s: crawler runs not noted: %s", process, type(exc).__name__)


@signals.worker_ready.connect
def expect_crawler_runs(**_: object) -> None:
    """A worker that consumes the crawlers' queue restarts their overdue clock; a prices-only worker's start
    must not hide crawlers that never run."""
    from django.conf import settings

    if settings.CRAWLERS_QUEUE in set(app.amqp.queues.consume_from):
        _expect_crawler_runs("celery worker")


@signals.worker_ready.connect
def check_chains_at_start(**_: object) -> None:
    """A worker that consumes the crawlers' queue says at once (CRITICAL) when a provider serves another
    chain than its chain's id, or a donation address shared by several chains is a contract on one and
    nothing on another; its runs hold on it anyway (crawlers/runs/start_checks.py)."""
    from django.conf import settings

    if settings.CRAWLERS_QUEUE in set(app.amqp.queues.consume_from):
        from crawlers.runs.start_checks import check_chains_in_background

        check_chains_in_background("celery worker")


@signals.worker_ready.connect
def reconcile_at_start(**_: object) -> None:
    """A worker that consumes the crawlers' queue reconciles the window since the last clean reconcile, in a
    thread beside the pool: the first crawl never waits for it (crawlers/runs/reconcile_start.py)."""
    from django.conf import settings

    if settings.CRAWLERS_QUEUE in set(app.amqp.queues.consume_from):
        from crawlers.runs.reconcile_start import reconcile_at_start_in_background

        reconcile_at_start_in_background()


@signals.worker_ready.connect
def serve_worker_metrics(**_: object) -> None:
    from django.conf import settings

    from dws_project import metrics_server

    config = settings.CONFIG
    if config.metrics_port is not None:
        metrics_server.serve(config.metrics_port, config.metrics_host, config.metrics_token)


@signals.worker_process_init.connect
def mark_pool_process(**_: object) -> None:
    from dws_project.shutdown import pool_process_started

    pool_process_started()


@signals.task_prerun.connect
def note_sigterm_while_working(**_: object) -> None:
    from dws_project.shutdown import task_started

    task_started()


@signals.task_postrun.connect
def sigterm_stops_an_idle_process(**_: object) -> None:
    from dws_project.shutdown import task_finished

    task_finished()


@signals.worker_process_shutdown.connect
def forget_pool_process(pid: int | None = None, **_: object) -> None:
    from dws_project import metrics

    metrics.process_exited(pid or os.getpid())


@signals.worker_shutting_down.connect
def stop_pool_between_blocks(**_: object) -> None:
    from dws_project.shutdown import signal_pool_processes

    signal_pool_processes()
