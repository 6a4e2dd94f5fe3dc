"""Nothing dws reads from Redis is executable: the cache is JSON, Celery is JSON only.

Redis is shared by every process; whoever can write a key there must not be able to run code in the web
process by it. /health (public, not rate limited) reads its report from the cache.
"""

from __future__ import annotations

import os
import pickle
import uuid
from pathlib import Path

import pytest
import requests
from django.conf import settings
from django.core.cache import cache

from donations.models import DonationStats
from dws_project.celery import app
from dws_project.health import REPORT_KEY
from dws_project.redis_client import get_redis
from tests.web_server import gunicorn

pytestmark = [pytest.mark.django_db(transaction=True)]


class _Command:
    """A pickle that runs `touch <marker>` when it is loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_a_pickle_planted_in_the_health_cache_is_never_run(tmp_path):
    DonationStats.objects.get_or_create()
    marker = tmp_path / f"pwned-{uuid.uuid4().hex}"
    key = cache.make_key(REPORT_KEY)
    get_redis().set(key, pickle.dumps(_Command(marker)), ex=60)
    try:
        with gunicorn(workers=1, env={"TEST_HEALTH_CACHE_SECONDS": "30"}) as base:
            answer = requests.get(f"{base}/health", timeout=20)
    finally:
        get_redis().delete(key)

    assert not marker.exists()
    assert answer.status_code == 200
    assert answer.json()["status"] in ("ok", "degraded")  # a fresh report, computed instead


def test_the_cache_stores_json_and_integers_stay_countable():
    cache.set("dws-test-json", {"status": "ok", "n": [1, 2]}, 30)
    raw = get_redis().get(cache.make_key("dws-test-json"))
    assert raw == b'{"status":"ok","n":[1,2]}'
    assert cache.get("dws-test-json") == {"status": "ok", "n": [1, 2]}
    # django-ratelimit counts with INCR: an integer must stay a plain Redis integer.
    cache.set("dws-test-count", 1, 30)
    assert cache.incr("dws-test-count") == 2
    cache.delete_many(["dws-test-json", "dws-test-count"])


def test_celery_accepts_and_sends_json_only():
    assert settings.CACHES["default"]["OPTIONS"]["serializer"] == "dws_project.cache.JSONSerializer"
    assert app.conf.task_serializer == "json"
    assert app.conf.accept_content == ["json"]
    assert app.conf.result_serializer == "json"
    assert app.conf.result_accept_content == ["json"]
    assert app.conf.event_serializer == "json"
