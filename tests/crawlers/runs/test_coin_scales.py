"""A coin's configured scale must be its contract's decimals(): read at a worker's start, and every crawler
run of that chain holds with a CRITICAL line naming the variable until it is (like a chain id mismatch).

USDC at scale 18 instead of 6 (the configuration's 2..18 accepts it) would write a 50 USDC donation as
0.00000000005 USDC: dust, credited to nobody."""

from __future__ import annotations

import dataclasses
import logging

import pytest

from crawlers.models import FINALIZED, LATEST
from crawlers.runs.coin_scales import check_coin_scales
from crawlers.runs.crawl import crawl, crawl_single_block
from donations.models import Donation
from tests.chain import ACCOUNTS, DONATION_ADDRESS
from tests.configs import configured

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

USDC = 10**6


def with_usdc_scale(config, scale: int):
    coins = tuple(
        dataclasses.replace(c, scale=scale) if c.asset == "usdc" else c for c in config.first_chain.stable_coins
    )
    return configured(config, stable_coins=coins)


def critical_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.CRITICAL]


def test_a_scale_that_is_not_the_contracts_decimals_holds_every_run_with_a_critical_line(node, settings, caplog):
    settings.CONFIG = with_usdc_scale(settings.CONFIG, 18)
    usdc = node.coins["usdc"]
    node.mint(usdc, ACCOUNTS[2], 50 * USDC)
    node.transfer_token(usdc, ACCOUNTS[2], DONATION_ADDRESS, 50 * USDC)
    node.mine(3)
    said = (
        f"the usdc contract {usdc} on eth says 6 decimals, DWS_STABLE_COINS gives it scale 18; holding, nothing is "
        "recorded until DWS_STABLE_COINS gives each coin its contract's decimals"
    )

    with caplog.at_level(logging.INFO):
        agreed = check_coin_scales("celery worker", settings.CONFIG)
        latest, final = crawl(LATEST), crawl(FINALIZED)
        single = crawl_single_block(FINALIZED, node.finalized())

    assert agreed is False
    assert f"celery worker: {said}" in critical_lines(caplog)
    for result in (latest, final, single):
        assert result.held == said
    assert sum(said in line for line in critical_lines(caplog)) == 4
    assert not Donation.objects.exists()

    settings.CONFIG = with_usdc_scale(settings.CONFIG, 6)  # the operator corrects it and restarts
    assert check_coin_scales("celery worker", settings.CONFIG) is True
    assert crawl(FINALIZED).held is None
    assert Donation.objects.get().amount == 50


def test_the_right_scales_say_nothing_and_hold_nothing(node, settings, caplog):
    with caplog.at_level(logging.INFO):
        agreed = check_coin_scales("celery worker", settings.CONFIG)
        held = crawl(LATEST).held

    assert agreed is True
    assert held is None
    assert not critical_lines(caplog)
