import pytest

from donations.models import DonationStats
from tests.web.browser import anvil_node, browser, plain_page, wallet_page, wallets_page
from tests.web.pages import dev_chain, eth_price, rollup_node, two_chains

__all__ = [
    "anvil_node",
    "browser",
    "campaign_row",
    "dev_chain",
    "eth_price",
    "plain_page",
    "rollup_node",
    "two_chains",
    "wallet_page",
    "wallets_page",
]


@pytest.fixture
def campaign_row(transactional_db) -> None:
    """The one donation_stats row migration 0002 creates: a transactional test before this one
    flushed the tables (rows made by migrations included), so make it again as the migration does."""
    if not DonationStats.objects.exists():
        DonationStats.objects.create()
