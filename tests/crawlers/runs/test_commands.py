"""The operator's commands and the Celery tasks around the crawlers."""

from __future__ import annotations

import logging

import pytest
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command

from crawlers.models import CHAIN, FINALIZED, LATEST
from crawlers.record.cursors import cursor_get
from crawlers.runs.crawl import crawl
from crawlers.runs.operator import job_name
from crawlers.tasks import crawl_finalized, crawl_latest, follow_head_task
from donations.models import Donation
from dws_project.locks import exclusive_run
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.configs import configured

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]


def test_a_first_run_starts_at_dws_start_block(node, settings, capsys):
    node.mine(5)
    settings.CONFIG = configured(settings.CONFIG, start_block=3)
    call_command("crawl", "latest", "--once")
    assert "crawl latest on eth: cursor 2 -> " in capsys.readouterr().out
    assert cursor_get(chain=CHAIN, label=LATEST).value == node.head()


def test_without_dws_start_block_a_first_run_starts_at_the_head(node, settings):
    node.mine(5)
    node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)  # before the head: not the crawler's business
    settings.CONFIG = configured(settings.CONFIG, start_block=None)
    head = node.mine(1)
    call_command("crawl", "latest", "--once")
    assert cursor_get(chain=CHAIN, label=LATEST).value == head
    assert not Donation.objects.exists()


def test_a_fresh_installs_finalized_crawler_waits_for_the_tag_to_reach_its_start_without_a_warning(
    node, settings, caplog
):
    """Issue 36: without DWS_START_BLOCK both crawlers start at the head, and the finalized tag reaches it only
    ~13 minutes later (64 blocks on Ethereum). Until then the finalized crawler has nothing to do: no hold, no
    WARNING (it warned "behind our cursor" on every run); a node that falls behind a block we crawled still
    warns."""
    settings.CONFIG = configured(settings.CONFIG, start_block=None)
    node.mine(5)
    caplog.set_level(logging.INFO, logger="dws.crawlers")

    first, second = crawl(FINALIZED), crawl(FINALIZED)

    assert (first.held, second.held) == (None, None)
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.head() - 1
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert "waiting for the finalized block to reach" in caplog.text

    node.mine(3)  # the tag passes the start: crawled as usual
    assert crawl(FINALIZED).cursor == node.finalized()


def test_set_cursor_moves_only_the_named_crawler(node, capsys):
    node.mine(4)
    call_command("crawl", "latest", "--once")
    call_command("crawl", "finalized", "--once")
    finalized = cursor_get(chain=CHAIN, label=FINALIZED).value

    call_command("set_cursor", "latest", "2")

    assert cursor_get(chain=CHAIN, label=LATEST).value == 2
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == finalized
    assert "the next run starts at block 3" in capsys.readouterr().out


def test_single_block_recrawls_without_touching_the_cursor(node):
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    block = int(node.receipt(tx)["blockNumber"], 16)
    node.mine(3)
    call_command("set_cursor", "latest", str(block))  # the operator skipped the block

    call_command("crawl", "latest", "--single-block", str(block))

    assert Donation.objects.get().tx_hash == tx
    assert cursor_get(chain=CHAIN, label=LATEST).value == block


def test_single_block_refuses_a_block_that_is_not_finalized_yet(node):
    head = node.mine(1)
    with pytest.raises(CommandError, match="beyond the provider's finalized block"):
        call_command("crawl", "finalized", "--single-block", str(head))


def test_old_unconfirmed_has_no_single_block_mode():
    with pytest.raises(CommandError, match="re-crawl with 'finalized'"):
        call_command("crawl", "old-unconfirmed", "--single-block", "5")


def test_a_task_that_finds_the_previous_run_still_going_skips(node):
    node.mine(2)
    with exclusive_run(job_name(LATEST, "eth")) as held:
        assert held
        crawl_latest()
    assert cursor_get(chain=CHAIN, label=LATEST) is None
    crawl_latest()
    crawl_finalized()
    assert cursor_get(chain=CHAIN, label=LATEST).value == node.head()
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()


def test_beat_runs_old_unconfirmed_every_15_minutes_and_reconcile_daily():
    schedule = django_settings.CELERY_BEAT_SCHEDULE
    assert schedule["every-15m-crawl-old-unconfirmed-eth"]["task"] == "crawlers.crawl_old_unconfirmed"
    assert schedule["every-15m-crawl-old-unconfirmed-eth"]["schedule"] == 900.0
    assert schedule["every-15m-crawl-old-unconfirmed-eth"]["options"]["expires"] <= 900
    assert schedule["every-1d-reconcile-eth"]["task"] == "crawlers.reconcile_last_day"
    assert schedule["every-1d-reconcile-eth"]["kwargs"] == {"chain": "eth"}


def test_beat_restarts_the_head_follower_every_5_seconds_and_runs_finalized_every_minute():
    schedule = django_settings.CELERY_BEAT_SCHEDULE
    assert schedule["every-5s-follow-head-eth"]["task"] == follow_head_task.name
    assert schedule["every-5s-follow-head-eth"]["schedule"] == 5.0
    assert schedule["every-5s-follow-head-eth"]["options"]["expires"] <= 5
    # DESIGN's latest crawler entry stays, the safety net of a worker without room for a follower
    assert schedule["every-12s-crawl-latest-eth"]["task"] == crawl_latest.name
    assert schedule["every-12s-crawl-latest-eth"]["options"]["expires"] <= 12
    assert schedule["every-60s-crawl-finalized-eth"]["task"] == crawl_finalized.name
    assert schedule["every-60s-crawl-finalized-eth"]["options"]["expires"] <= 60


def test_the_debug_data_store_keeps_the_raw_blocks_and_receipts(node, settings, tmp_path):
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    block = int(node.receipt(tx)["blockNumber"], 16)
    settings.CONFIG = configured(settings.CONFIG, debug_data_store=str(tmp_path / "debug"))

    call_command("crawl", "latest", "--once")

    assert (tmp_path / "debug" / "eth" / f"latest-{block}.json").exists()
    assert (tmp_path / "debug" / "eth" / f"txr-{tx}.json").exists()
    assert Donation.objects.get().tx_hash == tx


def test_follow_is_the_latest_crawlers_alone():
    with pytest.raises(CommandError, match="--follow is the latest crawler's"):
        call_command("crawl", "finalized", "--follow")
    with pytest.raises(CommandError):
        call_command("crawl", "latest", "--follow", "--once")  # one mode at a time
