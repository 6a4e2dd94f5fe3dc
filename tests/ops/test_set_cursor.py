"""`manage.py set_cursor`: the same guarded `set_cursor` as the admin form."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from crawlers.models import CHAIN, LATEST
from crawlers.record.cursors import cursor_get
from crawlers.runs.crawl import crawl
from crawlers.runs.operator import job_name
from dws_project.locks import exclusive_run
from tests.configs import configured
from tests.rpc_proxy import RpcProxy

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]


def test_a_block_beyond_the_head_is_refused_and_the_cursor_stays(node):
    node.mine(3)
    crawl(LATEST)
    before = cursor_get(chain=CHAIN, label=LATEST).value

    with pytest.raises(CommandError, match=f"block {node.head() + 1} is beyond the chain head {node.head()}"):
        call_command("set_cursor", "latest", str(node.head() + 1))

    assert cursor_get(chain=CHAIN, label=LATEST).value == before


def test_the_head_itself_is_accepted(node, capsys):
    head = node.mine(2)
    call_command("set_cursor", "latest", str(head))
    assert cursor_get(chain=CHAIN, label=LATEST).value == head
    assert f"the next run starts at block {head + 1}" in capsys.readouterr().out


def test_without_an_answer_about_the_head_nothing_moves(node, settings):
    with RpcProxy(node.url) as proxy:
        settings.CONFIG = configured(settings.CONFIG, rpc_url=proxy.url())
        proxy.arm("eth_blockNumber", "error", count=None)
        with pytest.raises(CommandError, match="did not say where its head is"):
            call_command("set_cursor", "latest", "1")
    assert cursor_get(chain=CHAIN, label=LATEST) is None


def test_the_runbook_moves_the_latest_cursor_while_the_head_follower_holds_its_lease(node, capsys):
    """Issue 36: the head follower holds the chain's latest lock for minutes at a time, between its runs too;
    the stuck-block runbook's set_cursor must still move the cursor between two blocks (the PostgreSQL lock,
    held for each run, is what keeps it from writing beside one)."""
    crawl(LATEST)
    head = node.mine(2)
    with exclusive_run(job_name(LATEST, CHAIN)) as following:
        assert following
        call_command("set_cursor", "latest", str(head))
    assert cursor_get(chain=CHAIN, label=LATEST).value == head
