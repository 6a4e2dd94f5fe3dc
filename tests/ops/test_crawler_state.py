"""Health that tells the truth (issue 36): a crawler at its tip is "following", one behind whose cursor moves is
"catching up", one behind whose cursor has stood still for minutes is "stuck"; /health, the metric and the
critical alert's expression say the same, and only "stuck" fires the alert."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
import yaml
from django.core.cache import cache
from django.utils import timezone
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from crawlers.models import LATEST, LastBlock
from crawlers.runs.jobs import run_crawler
from crawlers.runs.progress import tip_note
from donations.models import DonationStats
from dws_project.metrics_collectors import DATABASE_CACHE_KEY, scrape_registry
from tests.chain import ROOT

# Committed rows: a scrape reads the database from a thread of its own (and closes that thread's connection).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("crawl_config", "eth_prices")]

RULES = yaml.safe_load((ROOT / "deploy" / "prometheus/alerts.yml").read_text())["groups"][0]["rules"]


def scraped_states() -> dict[tuple[str, str, str], float]:
    cache.delete(DATABASE_CACHE_KEY)  # the database gauges are shared for 10 s; read them now
    with ThreadPoolExecutor(max_workers=1) as scraper:  # as the metrics server's thread scrapes
        text = scraper.submit(lambda: generate_latest(scrape_registry()).decode()).result()
    return {
        (s.labels["chain"], s.labels["crawler"], s.labels["state"]): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "dws_crawler_state"
    }


def firing(rule: dict, states: dict[tuple[str, str, str], float]) -> set[tuple[str, str]]:
    """Evaluate the rule's expression (`max by (chain, crawler) (dws_crawler_state{state="S"}) == 1`) on the
    scraped series, as Prometheus would for one target: the (chain, crawler) pairs it fires for."""
    match = re.fullmatch(
        r'max by \(chain, crawler\) \(dws_crawler_state\{state="([a-z ]+)"\}\) == (\d+)', rule["expr"].strip()
    )
    assert match, f"the alert reads the state metric: {rule['expr']}"
    wanted, threshold = match.group(1), float(match.group(2))
    return {(chain, crawler) for (chain, crawler, state), v in states.items() if state == wanted and v == threshold}


def crawler_alerts() -> list[dict]:
    return [r for r in RULES if "dws_crawler_" in r["expr"] and "overdue" not in r["expr"] and "held" not in r["expr"]]


def test_following_catching_up_and_stuck_are_told_apart_by_health_the_metric_and_the_alert(client, node):
    DonationStats.objects.get_or_create()  # a transactional test's flush takes the migrated row with it
    (stuck_alert,) = crawler_alerts()  # the only alert on a crawler's position: nothing fires on a catch-up
    assert stuck_alert["labels"]["severity"] == "critical"

    run_crawler(LATEST)  # at the head
    health = client.get("/health").json()["crawlers"]["latest"]
    states = scraped_states()
    assert health["state"] == "following"
    assert states[("eth", LATEST, "following")] == 1
    assert firing(stuck_alert, states) == set()

    node.mine(40)  # the chain moves on; the follower has seen the head, the cursor moved moments ago
    tip_note("eth", LATEST, node.head())
    health = client.get("/health").json()["crawlers"]["latest"]
    states = scraped_states()
    assert (health["state"], health["stuck"], health["lag_blocks"]) == ("catching up", False, 40)
    assert states[("eth", LATEST, "catching up")] == 1
    assert firing(stuck_alert, states) == set()

    # minutes later the cursor has not moved: stuck (the runbook's modified_at says since when)
    LastBlock.objects.filter(label=LATEST).update(modified_at=timezone.now() - timedelta(minutes=6))
    body = client.get("/health").json()
    states = scraped_states()
    assert (body["crawlers"]["latest"]["state"], body["crawlers"]["latest"]["stuck"]) == ("stuck", True)
    assert body["status"] == "degraded"
    assert states[("eth", LATEST, "stuck")] == 1
    assert states[("eth", LATEST, "following")] == states[("eth", LATEST, "catching up")] == 0
    assert firing(stuck_alert, states) == {("eth", LATEST)}

    run_crawler(LATEST)  # it moves again and reaches the head: following, the alert resolves
    states = scraped_states()
    assert client.get("/health").json()["crawlers"]["latest"]["state"] == "following"
    assert firing(stuck_alert, states) == set()
