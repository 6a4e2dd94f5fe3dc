"""DWS_DEBUG_DATA_STORE and DWS_BLOCK_CACHE on real directories (seed 000's two debug facilities)."""

from __future__ import annotations

import logging
import stat
from datetime import timedelta

import pytest
from django.utils import timezone

from crawlers.models import CHAIN, FINALIZED, LATEST
from crawlers.record.cursors import cursor_get, cursor_write
from crawlers.runs.crawl import crawl
from crawlers.runs.old_unconfirmed import crawl_old_unconfirmed
from donations.models import Donation
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.configs import configured

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]


def use(settings, **values) -> None:
    settings.CONFIG = configured(settings.CONFIG, **values)


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def unwritable_directory(tmp_path):
    """A directory nobody may create files in, even root: a regular file stands where it should be."""
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    return blocker / "store"


def test_the_debug_store_is_created_on_first_use_and_keeps_blocks_transactions_and_receipts_0600(
    node, settings, tmp_path
):
    store = tmp_path / "nested" / "debug"
    use(settings, debug_data_store=str(store))
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    block = int(node.receipt(tx)["blockNumber"], 16)
    crawl(LATEST)
    node.mine(3)
    cursor_write(
        chain=CHAIN, label=FINALIZED, value=node.finalized()
    )  # the judge looks it up, not the finalized crawler
    crawl_old_unconfirmed(now=timezone.now() + timedelta(minutes=31))

    chain_store = store / "eth"  # each chain's answers in a directory named after it
    names = {p.name for p in chain_store.iterdir()}
    assert {f"latest-{block}.json", f"old-unconfirmed-{block}.json", f"txs-{tx}.json", f"txr-{tx}.json"} <= names
    assert all(mode(p) == 0o600 for p in chain_store.iterdir())
    assert Donation.objects.get().status == "confirmed"


def test_a_debug_store_that_cannot_be_written_is_a_warning_and_the_crawl_goes_on(node, settings, tmp_path, caplog):
    use(settings, debug_data_store=str(unwritable_directory(tmp_path)))
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)

    with caplog.at_level(logging.WARNING):
        result = crawl(LATEST)

    assert result.held is None
    assert Donation.objects.get().tx_hash == tx
    assert "debug data store: could not write" in caplog.text
    assert all(r.levelno == logging.WARNING for r in caplog.records if "debug data store" in r.message)


def test_finalized_blocks_are_cached_0600_and_served_from_the_cache_afterwards(node, proxy, settings, tmp_path):
    cache = tmp_path / "blocks"
    use(settings, block_cache=str(cache))
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    block = int(node.receipt(tx)["blockNumber"], 16)
    node.mine(3)

    crawl(FINALIZED)
    cached = cache / "eth" / f"fb-{block}.json"  # block N of one chain is not block N of another
    assert cached.exists()
    assert mode(cached) == 0o600
    fetched = proxy.requests_for("eth_getBlockByNumber")

    cursor_write(
        chain=CHAIN, label=FINALIZED, value=block - 1
    )  # the same blocks again: from disk, not from the provider
    crawl(FINALIZED)
    # Only the "finalized" tag and the sparse range's two headers (start and end, without bodies).
    assert proxy.requests_for("eth_getBlockByNumber") == fetched + 3
    assert Donation.objects.get().status == "confirmed"


def test_the_latest_crawler_never_uses_the_cache(node, settings, tmp_path):
    use(settings, block_cache=str(tmp_path / "blocks"))
    node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    crawl(LATEST)
    assert not (tmp_path / "blocks").exists()


def test_a_corrupt_cached_block_is_discarded_and_fetched_again(node, proxy, settings, tmp_path):
    cache = tmp_path / "blocks"
    use(settings, block_cache=str(cache))
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    block = int(node.receipt(tx)["blockNumber"], 16)
    node.mine(3)
    cache = cache / "eth"
    cache.mkdir(parents=True)
    (cache / f"fb-{block}.json").write_text('{"number": "0x1", "hash"')  # half a file

    crawl(FINALIZED)

    assert Donation.objects.get().status == "confirmed"
    assert (cache / f"fb-{block}.json").read_text().startswith("{")
    assert f'"hash": "{node.block(block)["hash"]}"' in (cache / f"fb-{block}.json").read_text()


def test_a_block_that_cannot_be_cached_is_an_error_and_retried_next_run(node, settings, tmp_path, caplog):
    use(settings, block_cache=str(unwritable_directory(tmp_path)))
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    node.mine(3)
    before = node.finalized()
    cursor_write(chain=CHAIN, label=FINALIZED, value=before - 4)

    with caplog.at_level(logging.ERROR):
        result = crawl(FINALIZED)

    assert "DWS_BLOCK_CACHE: could not write the block" in result.held
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == before - 4
    assert not Donation.objects.filter(tx_hash=tx).exists()
    assert any(r.levelno == logging.ERROR and "block cache" in r.message for r in caplog.records)

    use(settings, block_cache=str(tmp_path / "fixed"))  # the operator fixes the volume
    assert crawl(FINALIZED).held is None
    assert Donation.objects.get(tx_hash=tx).status == "confirmed"
