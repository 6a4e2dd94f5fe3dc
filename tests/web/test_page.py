"""GET / serves the donation page: widget first, every asset it references served by the web process."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin

import pytest
from django.test import Client
from eth_utils import to_checksum_address

from crawlers.models import AddressMode
from crawlers.record.address_modes import address_mode_record
from crawlers.runs import address_code
from dws_project.config_values import StableCoin
from tests.configs import configured, with_chains

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


def page_config_of(body: str) -> dict:
    return json.loads(re.search(r'<script id="dws-config" type="application/json">(.*?)</script>', body).group(1))


def test_the_page_tells_its_scripts_which_chain_to_expect(page, settings, client: Client) -> None:
    response, _ = page
    body = response.content.decode()
    assert page_config_of(body) == {
        "chains": [
            {
                "chain": "eth",
                # deploy/env.local's DWS_CHAIN_ID (required since issue 21): the local dev chain
                "chainId": 31337,
                "label": "local dev chain (anvil)",
                "devChain": True,
                # deploy/env.local's sale address and coins, checksummed as a wallet shows them
                "donationAddress": "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720",
                "stableCoins": [
                    {"asset": "usdt", "contract": "0x5FbDB2315678afecb367f032d93F642f64180aa3", "decimals": 6},
                    {"asset": "usdc", "contract": "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512", "decimals": 6},
                ],
                "walletRpcUrl": None,  # no DWS_ETH_WALLET_RPC_URL
            }
        ],
        "chainLabels": {"eth": "local dev chain (anvil)"},
        "pageSize": 10,
        "pendingRefreshSeconds": 5,
        "sentRefreshSeconds": 1,
        "explorers": {},  # no DWS_EXPLORER_URL
    }
    # one chain: the page looks as before several chains, without a network choice or column
    assert 'id="network-choice"' not in body
    assert "<th>Network</th>" not in body
    assert "Presale live on local dev chain (anvil)" in body
    settings.CONFIG = configured(settings.CONFIG, chain_id=1, explorer_url="https://etherscan.io/tx/{tx}")
    mainnet = page_config_of(client.get("/").content.decode())
    [chain] = mainnet["chains"]
    assert (chain["chainId"], chain["label"], chain["devChain"]) == (1, "Ethereum mainnet", False)
    assert mainnet["explorers"] == {"eth": "https://etherscan.io/tx/{tx}"}


ROLLUP_USDC = "0x9fe46736679d2d9a65f0992f2272de9f3c7fa6e0"
PROVIDER_KEY = "provider-key-never-in-the-page"


@pytest.fixture
def three_chains(settings, db):
    """eth (the dev chain), a local rollup with a coin of its own and a public RPC URL, Base with ETH only and
    a provider URL holding a key; the same donation address on all three, read as plain on each."""
    eth = settings.CONFIG.first_chain
    rollup = dataclasses.replace(
        eth,
        name="rollup",
        chain_id=1337,
        rpc_url="http://127.0.0.1:8546",
        label="Local rollup",
        stable_coins=(StableCoin("usdc", ROLLUP_USDC, 6),),
        wallet_rpc_url="http://127.0.0.1:8546",
    )
    base = dataclasses.replace(
        eth,
        name="base",
        chain_id=8453,
        rpc_url=f"https://base.example-provider.io/v3/{PROVIDER_KEY}",
        rpc_check_url=f"https://base.example-second.io/{PROVIDER_KEY}",
        stable_coins=(),
        wallet_rpc_url="https://mainnet.base.org",
        explorer_url="https://basescan.org/tx/{tx}",
    )
    settings.CONFIG = with_chains(settings.CONFIG, eth, rollup, base)
    for chain in settings.CONFIG.chains:
        address_mode_record(chain=chain.name, address=chain.donation_address, mode=address_code.PLAIN)
    return settings


def test_several_chains_are_offered_in_order_each_with_its_own_address_and_coins(client: Client, three_chains) -> None:
    body = client.get("/").content.decode()
    config = page_config_of(body)
    assert [(c["chain"], c["chainId"], c["label"], c["devChain"]) for c in config["chains"]] == [
        ("eth", 31337, "local dev chain (anvil)", True),
        ("rollup", 1337, "Local rollup", True),
        ("base", 8453, "Base", False),
    ]
    eth, rollup, base = config["chains"]
    assert rollup["stableCoins"] == [{"asset": "usdc", "contract": to_checksum_address(ROLLUP_USDC), "decimals": 6}]
    assert base["stableCoins"] == []  # ETH only there
    assert {c["donationAddress"] for c in config["chains"]} == {"0xa0Ee7A142d267C1f36714E4a8F75612F20a79720"}
    # the public RPC URL a wallet may be given, never the provider's (nor its key, anywhere in the page)
    assert (eth["walletRpcUrl"], rollup["walletRpcUrl"], base["walletRpcUrl"]) == (
        None,
        "http://127.0.0.1:8546",
        "https://mainnet.base.org",
    )
    assert PROVIDER_KEY not in body
    assert config["explorers"] == {"base": "https://basescan.org/tx/{tx}"}
    # the choice, in DWS_CHAINS order, the first pressed; each network's checks with its own contracts
    assert re.findall(
        r'<button type="button" class="network-option" data-chain="(\w+)" aria-pressed="(\w+)">', body
    ) == [
        ("eth", "true"),
        ("rollup", "false"),
        ("base", "false"),
    ]
    checks = dict(
        re.findall(r'<ul class="wallet-checks fine" data-chain="(\w+)"[^>]*>(.*?)</ul>', body, flags=re.DOTALL)
    )
    assert list(checks) == ["eth", "rollup", "base"]
    assert "0x5FbDB2315678afecb367f032d93F642f64180aa3" in checks["eth"]
    assert to_checksum_address(ROLLUP_USDC) in checks["rollup"]
    assert re.findall(r'data-asset="(\w+)"', checks["base"]) == ["eth"]
    assert "<th>Network</th>" in body
    assert "Presale live on local dev chain (anvil), Local rollup and Base" in body


def test_a_chain_refused_for_its_donation_address_is_not_offered(client: Client, three_chains) -> None:
    """The donation address is a contract (a Safe) on eth and the rollup and nothing on base: base is not
    offered (its donations, if any, are still named in the donor's list)."""
    address = three_chains.CONFIG.first_chain.donation_address
    for chain in ("eth", "rollup"):
        address_mode_record(chain=chain, address=address, mode=address_code.CONTRACT)

    body = client.get("/").content.decode()

    config = page_config_of(body)
    assert [c["chain"] for c in config["chains"]] == ["eth", "rollup"]
    assert config["chainLabels"] == {"eth": "local dev chain (anvil)", "rollup": "Local rollup", "base": "Base"}
    assert 'data-chain="base"' not in body


def test_a_chain_sharing_its_address_with_one_whose_code_was_never_read_is_not_offered(
    client: Client, three_chains
) -> None:
    AddressMode.objects.filter(chain="base").delete()  # base's provider never answered

    config = page_config_of(client.get("/").content.decode())

    # base is unknown: not offered; eth and the rollup (plain) share the address with it: held too
    assert [c["chain"] for c in config["chains"]] == []


def test_a_label_is_shown_as_text_never_as_markup(client: Client, settings) -> None:
    """Labels are restricted when read (DWS_NAME_LABEL); were one to carry markup, it is still only text."""
    eth = settings.CONFIG.first_chain
    hostile = dataclasses.replace(
        eth,
        name="evil",
        chain_id=1337,
        label='<img src=x onerror="alert(1)">',
        stable_coins=(),
        donation_address="0x" + "ab" * 20,  # an address of its own: offered without any code read
    )
    settings.CONFIG = with_chains(settings.CONFIG, eth, hostile)
    body = client.get("/").content.decode()
    assert "<img src=x" not in body
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in body
    assert page_config_of(body)["chains"][1]["label"] == '<img src=x onerror="alert(1)">'


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
        "network.mjs",
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
