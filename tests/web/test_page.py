"""GET / serves the donation page: widget first, every asset it references served by the web process."""

from __future__ import annotations

import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin

import pytest
from django.test import Client

from tests.configs import configured

ROOT = Path(__file__).resolve().parents[2]
VENDOR = ROOT / "web" / "static" / "web" / "vendor"
JS_MIME = ("text/javascript", "application/javascript")
IMPORT_RE = re.compile(r"""^\s*(?:import|export)\s[^;]*?from\s+["']([^"']+)["']""", re.MULTILINE)


class Outline(HTMLParser):
    """The page's element tree as (tag, id, depth) in document order, and every referenced URL."""

    VOID = {"meta", "link", "img", "input", "br", "hr", "source"}

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, str | None, int, dict[str, str | None]]] = []
        self.urls: list[str] = []
        self.depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        self.elements.append((tag, attributes.get("id"), self.depth, attributes))
        for name in ("src", "href"):
            value = attributes.get(name)
            if value and value.startswith("/static/"):
                self.urls.append(value)
        if tag not in self.VOID:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.VOID:
            self.depth -= 1


@pytest.fixture
def page(client: Client) -> tuple[object, Outline]:
    response = client.get("/")
    outline = Outline()
    outline.feed(response.content.decode())
    return response, outline


def children_of(outline: Outline, element_id: str | None, tag: str | None = None) -> list[tuple[str, str | None]]:
    """Direct element children of the first element with that id (or that tag), in order."""
    elements = outline.elements
    start = next(i for i, e in enumerate(elements) if (e[1] == element_id if element_id else e[0] == tag))
    depth = elements[start][2]
    found = []
    for tag_, id_, d, _ in elements[start + 1 :]:
        if d <= depth:
            break
        if d == depth + 1:
            found.append((tag_, id_))
    return found


def test_the_page_opens_with_the_donation_widget(page) -> None:
    response, outline = page
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    # The first thing in <main> is the hero, and the first thing in the hero is the widget.
    assert children_of(outline, None, tag="main")[0] == ("section", "buy")
    assert children_of(outline, "buy")[0] == ("div", "widget")
    widget_ids = [id_ for _, id_ in _descendant_ids(outline, "widget")]
    for needed in ("sale-status", "raised", "tokens-sold", "sale-cap", "tier", "token-price", "amount", "estimate"):
        assert needed in widget_ids, needed
    assert widget_ids.index("connect") < widget_ids.index("donate") < widget_ids.index("tx-hash")
    assets = [a.get("value") for tag, _, _, a in outline.elements if tag == "input" and a.get("name") == "asset"]
    assert assets == ["eth", "usdt", "usdc"]


def _descendant_ids(outline: Outline, element_id: str) -> list[tuple[str, str]]:
    elements = outline.elements
    start = next(i for i, e in enumerate(elements) if e[1] == element_id)
    depth = elements[start][2]
    found = []
    for tag, id_, d, _ in elements[start + 1 :]:
        if d <= depth:
            break
        if id_:
            found.append((tag, id_))
    return found


def test_the_page_carries_the_rest_of_the_presale_site_below_the_widget(page) -> None:
    _, outline = page
    sections = [id_ for tag, id_ in children_of(outline, None, tag="main") if tag == "section"]
    assert sections == ["buy", "account", "how", "tiers", "faq"]
    body = page[0].content.decode()
    # The tiers table comes from DWS_SALE_PARAMS (deploy/env.local: three tiers up to 500M tokens).
    assert re.findall(r'<tr data-tier="(\d)">', body) == ["1", "2", "3"]
    assert "<td>250,000,001 \N{EN DASH} 500,000,000</td>" in body
    assert "$0.0015" in body


def test_the_tiers_section_says_a_donation_is_priced_when_first_recorded(page) -> None:
    # DESIGN.md "Crediting": the tier is fixed when the donation is first recorded (shown as pending);
    # confirmation never re-prices it, so the page must not promise the tier of the confirmation.
    body = page[0].content.decode()
    tiers = re.search(r'<section class="section" id="tiers".*?</section>', body, flags=re.DOTALL).group(0)
    assert "priced at the tier in force when it is first recorded" in tiers
    assert "when it is confirmed" not in tiers


def test_the_page_tells_its_scripts_which_chain_to_expect(page, settings, client: Client) -> None:
    response, _ = page
    config = json.loads(
        re.search(r'<script id="dws-config" type="application/json">(.*?)</script>', response.content.decode()).group(1)
    )
    assert config == {
        # deploy/env.local's sale address and coins, checksummed as a wallet shows them
        "donationAddress": "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720",
        "stableCoins": [
            {"asset": "usdt", "contract": "0x5FbDB2315678afecb367f032d93F642f64180aa3", "decimals": 6},
            {"asset": "usdc", "contract": "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512", "decimals": 6},
        ],
        # deploy/env.local's DWS_CHAIN_ID (required since issue 21): the local dev chain
        "chainId": 31337,
        "chainName": "local dev chain (anvil)",
        "devChain": True,
        "pageSize": 10,
        "pendingRefreshSeconds": 15,
        "explorers": {},  # no DWS_EXPLORER_URL
    }
    settings.CONFIG = configured(settings.CONFIG, chain_id=1, explorer_url="https://etherscan.io/tx/{tx}")
    body = client.get("/").content.decode()
    mainnet = json.loads(re.search(r'<script id="dws-config" type="application/json">(.*?)</script>', body).group(1))
    assert (mainnet["chainId"], mainnet["chainName"], mainnet["devChain"]) == (1, "Ethereum mainnet", False)
    assert mainnet["explorers"] == {"eth": "https://etherscan.io/tx/{tx}"}


def test_the_widget_shows_the_sale_address_and_what_to_check_in_the_wallet(page) -> None:
    response, outline = page
    body = response.content.decode()
    widget_ids = [id_ for _, id_ in _descendant_ids(outline, "widget")]
    assert widget_ids.index("donation-address") < widget_ids.index("copy-address") < widget_ids.index("donate")
    assert '<code id="donation-address">0xa0Ee7A142d267C1f36714E4a8F75612F20a79720</code>' in body
    checks = re.findall(r'<li data-asset="(\w+)">(.*?)</li>', body, flags=re.DOTALL)
    assert [asset for asset, _ in checks] == ["eth", "usdt", "usdc"]
    eth, usdt, usdc = (text for _, text in checks)
    assert "the recipient is <strong>0xa0Ee7A142d267C1f36714E4a8F75612F20a79720</strong>" in eth
    assert "the token contract is <strong>0x5FbDB2315678afecb367f032d93F642f64180aa3</strong>" in usdt
    assert "the token contract is <strong>0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512</strong>" in usdc
    assert "the recipient is <strong>0xa0Ee7A142d267C1f36714E4a8F75612F20a79720</strong> (not the contract)" in usdc


def test_the_sale_address_comes_from_the_server_configuration(client: Client, settings) -> None:

    settings.CONFIG = configured(settings.CONFIG, donation_address="0x" + "ab" * 20)
    body = client.get("/").content.decode()

    assert '<code id="donation-address">0xABaBaBaBABabABabAbAbABAbABabababaBaBABaB</code>' in body
    assert '"donationAddress": "0xABaBaBaBABabABabAbAbABAbABabababaBaBABaB"' in body


def test_a_dev_chain_is_announced_as_such(client: Client, settings) -> None:

    settings.CONFIG = configured(settings.CONFIG, chain_id=31337)
    body = client.get("/").content.decode()
    assert '"chainId": 31337' in body
    assert '"devChain": true' in body
    assert "local dev chain (anvil) · chain id 31337" in body


def test_the_page_may_load_nothing_from_another_origin(page) -> None:
    response, outline = page
    policy = response["Content-Security-Policy"]
    assert "default-src 'self'" in policy
    assert "script-src 'self'" in policy
    assert "connect-src 'self'" in policy
    for tag, _, _, attributes in outline.elements:
        if tag == "script" and not attributes.get("src"):
            assert attributes.get("type") == "application/json", "no inline code: only the JSON page config"
        for name in ("src", "href"):
            value = attributes.get(name)
            if tag in ("script", "link", "img") and value:
                assert value.startswith("/static/"), f"<{tag} {name}={value}> must be served by us"


def test_every_static_file_the_page_references_is_served(client: Client, page) -> None:
    """The stylesheet, images and every ES module reachable from main.mjs (imports followed)."""
    _, outline = page
    pending = list(dict.fromkeys(outline.urls))
    seen: set[str] = set()
    while pending:
        url = pending.pop()
        if url in seen:
            continue
        seen.add(url)
        response = client.get(url)
        assert response.status_code == 200, url
        body = b"".join(response)  # a response iterates its content, streamed (WhiteNoise's files) or not
        assert body, url
        if url.endswith(".mjs"):
            assert response["Content-Type"].split(";")[0] in JS_MIME, url
            pending += [urljoin(url, target) for target in IMPORT_RE.findall(body.decode())]
        elif url.endswith(".css"):
            assert response["Content-Type"].startswith("text/css"), url
    expected_modules = {
        "main.mjs",
        "page.mjs",
        "campaign.mjs",
        "widget.mjs",
        "tokens.mjs",
        "staking.mjs",
        "referrals.mjs",
        "api.mjs",
        "wallet.mjs",
        "money.mjs",
        "eth.mjs",
        "big.mjs",
        "discovery.mjs",
        "chooser.mjs",
        "phone.mjs",
        "payment.mjs",
        "uqr.mjs",
    }
    assert expected_modules <= {url.rsplit("/", 1)[-1] for url in seen}


def test_the_vendored_files_are_exactly_the_pinned_npm_packages() -> None:
    manifest = json.loads((VENDOR / "manifest.json").read_text())
    pins = json.loads((ROOT / "package.json").read_text())["dependencies"]
    assert manifest["packages"] == {name: pins[name] for name in manifest["packages"]}
    lock = json.loads((ROOT / "package-lock.json").read_text())["packages"]
    for name, version in manifest["packages"].items():
        assert lock[f"node_modules/{name}"]["version"] == version
    for file, digest in manifest["files"].items():
        assert hashlib.sha256((VENDOR / file).read_bytes()).hexdigest() == digest, file
    # and the copy is the installed package's file, byte for byte
    assert (VENDOR / "big.mjs").read_bytes() == (ROOT / "node_modules" / "big.js" / "big.mjs").read_bytes()
    assert (VENDOR / "uqr.mjs").read_bytes() == (ROOT / "node_modules" / "uqr" / "dist" / "index.mjs").read_bytes()


def test_the_page_is_only_for_reading(client: Client) -> None:
    assert client.post("/").status_code == 405
