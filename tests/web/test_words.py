"""No word of the page's prose is broken across two lines, on a phone (390 px) and on a desktop: each
word's rendered line boxes (Range.getClientRects) lie on one line. Only addresses and hashes (0x…),
which cannot fit a phone's width, may wrap anywhere."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from tests.web.browser import DESKTOP, PHONE, assert_no_script_errors

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("campaign_row")]

# Every visible text node outside <code>, cut into words at spaces and the places a line may break
# between words (after a hyphen or a slash); a word whose boxes sit on more than one line was split.
SPLIT_WORDS = r"""
() => {
  const split = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!parent || parent.closest("code, script, style, noscript, [hidden]")) continue;
    for (const match of node.textContent.matchAll(/[^\s\-\u2010-\u2014/]+/g)) {
      if (/^\W*0x[0-9a-f]{8,}\W*$/i.test(match[0])) continue;
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      const lines = new Set(
        [...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.bottom))
      );
      if (lines.size > 1) split.push(`${match[0]} (in: ${node.textContent.trim().slice(0, 60)})`);
    }
  }
  return split;
}
"""


def split_words(page: Page) -> list[str]:
    return page.evaluate(SPLIT_WORDS)


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone-390", "desktop-1280"])
def test_no_word_is_split_across_lines(live_server, plain_page, viewport) -> None:
    page = plain_page(viewport)
    page.goto(live_server.url)
    page.wait_for_selector("#sale-status:not([data-status='loading'])")
    page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")

    for asset in ("eth", "usdt", "usdc"):  # each asset shows its own checks in the sale-address box
        page.check(f'input[name="asset"][value="{asset}"]')
        assert page.locator(f'#wallet-checks li[data-asset="{asset}"]').is_visible()
        assert split_words(page) == [], asset
    # the check itself can fail: a word forced to break is found
    page.evaluate("document.querySelector('.pitch h1').style.cssText = 'width: 4ch; word-break: break-all'")
    assert any(word.startswith("Truth") for word in split_words(page))
    assert_no_script_errors(page)
