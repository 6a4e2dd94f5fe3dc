"""Readiness of a worker or beat (`manage.py probe worker|beat --ready`): the services it needs answer and
the crawlers it is there for are not overdue. Liveness (the heartbeat) says the process turns; readiness
says the work gets done: a worker that consumes no crawler queue is alive and crawls nothing.

* database: one `SELECT 1` (redacted reason);
* Redis: one PING (the broker, the locks);
* provider, and every crawler job not overdue (crawlers/runs/cadence.py): for beat, and for a worker
  that consumes the crawlers' queue (`DWS_WORKER_QUEUES`, as `deploy/start-worker` reads it: unset means
  every queue). A dedicated prices or webhooks worker does not answer for the crawlers.
"""

from __future__ import annotations

from django.conf import settings
from django.db import connection

from crawlers.chain.clients import make_probe_client
from crawlers.chain.outcomes import NoEvidence
from crawlers.runs.cadence import overdue_jobs
from dws_project.redis_client import get_redis
from dws_project.startup import describe_database_error

BEAT = "beat"


def answers_for_crawlers(kind: str, worker_queues: str | None) -> bool:
    if kind == BEAT or not worker_queues:
        return True
    return settings.CRAWLERS_QUEUE in {q.strip() for q in worker_queues.split(",")}


def readiness_problems(kind: str, *, worker_queues: str | None = None) -> list[str]:
    """What keeps this process from doing its work; empty when it is ready."""
    problems: list[str] = []
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        database_up = True
    except Exception as exc:  # noqa: BLE001 - any failure means the same to the probe
        problems.append(f"database unavailable: {describe_database_error(exc)}")
        database_up = False
    finally:
        connection.close()
    try:
        get_redis().ping()
    except Exception as exc:  # noqa: BLE001
        problems.append(f"redis unavailable: {type(exc).__name__}")
    if not answers_for_crawlers(kind, worker_queues):
        return problems
    for chain in settings.CONFIG.chains:
        try:
            outcome = make_probe_client(chain).call("eth_blockNumber")
            if isinstance(outcome, NoEvidence):
                problems.append(f"provider {chain.rpc_origin} of chain {chain.name} gave no answer: {outcome.kind}")
        except Exception as exc:  # noqa: BLE001 - e.g. its back-off window could not be read from Redis
            problems.append(f"provider {chain.rpc_origin} of chain {chain.name} not asked: {type(exc).__name__}")
    if database_up:
        try:
            problems += [late.describe() for late in overdue_jobs()]
        finally:
            connection.close()
    return problems
