"""Browser tests of the donation page: headless Debian Chromium through Playwright, and a wallet.

The wallet is an EIP-1193 provider injected into the page before its scripts run (`add_init_script`).
It behaves like MetaMask from the page's side (accounts, chain id, switch prompts, events, error 4001
on a rejected prompt) and forwards every other RPC call to a real JSON-RPC node (anvil) whose dev
accounts are unlocked, so transactions and personal_sign signatures are real. It models several chains
as MetaMask does: it is on one chain at a time and forwards to that chain's node; it knows some chains
(switching to another is error 4902) and learns one from `wallet_addEthereumChain` (after checking that
the RPC URL the page gave answers with that chain id, which it then uses), switching to it; the test can
switch it from the wallet's own side, with or without telling the page (`switch_wallet`). The forwarding runs in
the test process (`expose_function`), outside the page, as a wallet extension's would: the page's
Content-Security-Policy (connect-src 'self') applies to the page, not to its wallet.

Fixtures:
    browser          - a Chromium per test (see the fixture for why)
    anvil_node       - tests/chain.py's anvil (chain id 31337) on a free port in the test range, with
                       the test USDT/USDC deployed at deploy/env.local's addresses
    wallet_page      - factory: wallet_page(rpc_url=..., account=..., viewport=...) -> Page with the wallet
                       (other_nodes={chain id: url} and knows=(chain ids) for a wallet of several chains)
    plain_page       - factory: a Page without any wallet
    wallets_page     - factory: wallets_page(rpc_url=..., wallets=[AnnouncedWallet, ...]) -> Page in a
                       browser with several wallet extensions announcing themselves (EIP-6963)
Each page records uncaught script errors in `page.script_errors`; `assert_no_script_errors(page)`.
`ApiLog(page)` records the page's API requests; `refuse_api(page)` makes the API unreachable.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
from django.db import connections
from eth_account import Account
from eth_account.messages import _hash_eip191_message, encode_defunct
from playwright.sync_api import Browser, Page, Route, ViewportSize, sync_playwright

from tests.chain import PORT_RANGE as CHAIN_PORT_RANGE
from tests.chain import Anvil, deploy_stable_coins, free_port

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("DWS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# This checkout's share of TCP ports for servers the tests start (TEST_PORT_RANGE: see
# docs/development.md, "Crawler test infrastructure (reusable)").
PORT_RANGE = CHAIN_PORT_RANGE
DESKTOP: ViewportSize = {"width": 1280, "height": 900}
PHONE: ViewportSize = {"width": 390, "height": 844}
# Test artifacts, outside the tracked tree: `make test` never rewrites docs/screenshots/, whose copies
# are refreshed by hand (see docs/page.md).
SCREENSHOTS = Path(os.environ.get("DWS_SCREENSHOT_DIR", ROOT / "var" / "screenshots"))
API_PREFIXES = ("/donation/", "/price/", "/user/", "/affiliate/", "/wallet/")

# An injected wallet: `__dwsMakeWallet(settings, rpcName)` makes an EIP-1193 provider whose RPC calls go
# to the test process's forwarder exposed as `window[rpcName]`, with the chain the wallet is on.
WALLET_FACTORY = """
window.__dwsMakeWallet = (settings, rpcName) => {
  const listeners = {};
  let connected = settings.connected;
  let current = settings.chainId;  // the chain the wallet is on (hex)
  const known = new Set(settings.known);  // the chains it has (hex); another one is error 4902
  const emit = (event, value) => (listeners[event] || []).forEach((fn) => fn(value));
  const fail = (code, message) => Object.assign(new Error(message), { code });
  const forward = async (method, params) => {
    const answer = JSON.parse(await window[rpcName](current, method, JSON.stringify(params || [])));
    if (answer.error) throw fail(answer.error.code, answer.error.message);
    return answer.result;
  };
  const switchTo = (id, silent) => {
    known.add(id);
    if (id === current) return;
    current = id;
    if (!silent) emit("chainChanged", id);
  };
  const provider = {
    isMetaMask: false,
    isDwsTestWallet: true,
    async request({ method, params }) {
      if (settings.reject.includes(method)) throw fail(4001, "User rejected the request.");
      switch (method) {
        case "eth_requestAccounts":
          connected = true;
          emit("connect", { chainId: await provider.request({ method: "eth_chainId" }) });
          return [settings.account];
        case "eth_accounts":
          return connected ? [settings.account] : [];
        case "eth_chainId":
          return current;
        case "wallet_switchEthereumChain": {
          const wanted = params[0].chainId.toLowerCase();
          if (!known.has(wanted)) {
            throw fail(4902, `Unrecognized chain ID "${wanted}". Try adding it using wallet_addEthereumChain first.`);
          }
          switchTo(wanted, false);
          return null;
        }
        case "wallet_addEthereumChain": {
          await forward(method, params);  // the forwarder checks the request and the RPC URL, and keeps it
          // then, as MetaMask does, it offers to switch: declined when the test rejects switching
          if (!settings.reject.includes("wallet_switchEthereumChain")) switchTo(params[0].chainId.toLowerCase(), false);
          else known.add(params[0].chainId.toLowerCase());
          return null;
        }
        default:
          if (!connected && (method === "eth_sendTransaction" || method === "personal_sign")) {
            throw fail(4100, "The requested account has not been authorized by the user.");
          }
          const result = await forward(method, params);
          // a wallet that moves to another chain mid-flow, without a word (set by the test: `switchAfter`)
          if (settings.switchAfter?.method === method) {
            const { chainId } = settings.switchAfter;
            settings.switchAfter = null;
            switchTo(chainId, true);
          }
          return result;
      }
    },
    on(event, fn) { (listeners[event] = listeners[event] || []).push(fn); return provider; },
    removeListener(event, fn) {
      listeners[event] = (listeners[event] || []).filter((f) => f !== fn);
      return provider;
    },
  };
  provider.__emit = emit;
  // The donor switches networks in the wallet's own window (silent: a wallet that does not tell the page).
  provider.__switch = (id, silent) => switchTo(id, silent);
  return provider;
};
"""
# The classic injection: one wallet at `window.ethereum`. `__dwsWallet` holds its settings.
PROVIDER_SHIM = WALLET_FACTORY + "window.ethereum = window.__dwsMakeWallet(window.__dwsWallet, '__dwsWalletRpc');\n"
# EIP-6963: each wallet in `__dwsWallets` announces itself when the page asks, and once unasked.
ANNOUNCING_WALLETS = (
    WALLET_FACTORY
    + """
for (const { settings, info, rpcName, isEthereum } of window.__dwsWallets) {
  const provider = window.__dwsMakeWallet(settings, rpcName);
  if (isEthereum) window.ethereum = provider;
  const announce = () =>
    window.dispatchEvent(new CustomEvent("eip6963:announceProvider", { detail: Object.freeze({ info, provider }) }));
  window.addEventListener("eip6963:requestProvider", announce);
  announce();
}
"""
)
ICON = (
    "data:image/svg+xml;base64,PHN2ZyB4bWxucz0naHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmcnIHZpZXdCb3g9JzAgMCAxIDEnPjwvc3ZnPg=="
)


@dataclass(frozen=True)
class AnnouncedWallet:
    """A wallet extension that announces itself through EIP-6963."""

    name: str
    rdns: str
    uuid: str
    account: str
    is_ethereum: bool = False  # also injected as window.ethereum (it won the race)"""


def refuse_api(page: Page) -> None:
    """The API is down: every API request fails at the connection, as with the web process stopped.
    (A fault at the browser's network boundary; every other test talks to the real API.)"""
    page.route(is_api_url, lambda route: route.abort("connectionrefused"))


def is_api_url(url: str) -> bool:
    return urlsplit(url).path.startswith(API_PREFIXES)


@dataclass
class ApiCall:
    method: str
    path: str  # without the query
    query: str
    headers: dict[str, str]
    body: Any


class ApiLog:
    """Every API request the page makes, as the browser sent it (method, path, headers, JSON body), passed
    on to the real API unchanged. Intercepting also turns Chromium's HTTP cache off for the page, so each
    request the page makes reaches the server and is counted (the refresh rules are about the page's
    requests, not about how long the API lets a browser cache an answer)."""

    def __init__(self, page: Page) -> None:
        self.calls: list[ApiCall] = []
        page.route(is_api_url, self._record)

    def _record(self, route: Route) -> None:
        request = route.request
        parts = urlsplit(request.url)
        body = json.loads(request.post_data) if request.post_data else None
        self.calls.append(ApiCall(request.method, parts.path, parts.query, dict(request.headers), body))
        route.continue_()

    def gets(self, path: str) -> int:
        return sum(1 for c in self.calls if c.method == "GET" and c.path == path)

    def posts(self, path: str | None = None) -> list[ApiCall]:
        return [c for c in self.calls if c.method == "POST" and (path is None or c.path == path)]


def node_chain_id(url: str) -> int:
    answer = requests.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "eth_chainId", "params": []}, timeout=10)
    return int(answer.json()["result"], 16)


class WalletForwarder:
    """Runs in the test process: takes the page's RPC calls and sends them to the node of the chain the wallet
    is on (`urls`: chain id -> node)."""

    def __init__(self, rpc_url: str, contract_owner: Any = None, other_nodes: dict[int, str] | None = None) -> None:
        self.rpc_url = rpc_url
        self.urls = {node_chain_id(rpc_url): rpc_url, **(other_nodes or {})}
        # A contract wallet (a Safe) signs by its owner's key over the personal_sign hash (ERC-1271).
        self.contract_owner = contract_owner
        self.calls: list[tuple[str, list[Any]]] = []
        self.sent: list[str] = []  # hashes of the transactions the page had the wallet send
        self.sent_on: dict[str, int] = {}  # each of them -> the chain id it was sent on
        self.added: list[dict[str, Any]] = []  # the wallet_addEthereumChain requests it accepted

    @staticmethod
    def _error(code: int, message: str) -> str:
        return json.dumps({"error": {"code": code, "message": message}})

    def __call__(self, chain_hex: str, method: str, params_json: str) -> str:
        params = json.loads(params_json)
        self.calls.append((method, params))
        chain_id = int(chain_hex, 16)
        if method == "wallet_addEthereumChain":
            return self._add_chain(params[0])
        if method == "personal_sign" and self.contract_owner is not None:
            digest = _hash_eip191_message(encode_defunct(hexstr=params[0]))
            signed = Account.unsafe_sign_hash(digest, self.contract_owner.key)
            return json.dumps({"result": "0x" + bytes(signed.signature).hex()})
        url = self.urls.get(chain_id)
        if url is None:
            return self._error(-32603, f"no RPC node for chain {chain_hex} in this wallet")
        try:
            answer = requests.post(
                url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, timeout=30
            ).json()
        except requests.RequestException as exc:
            return self._error(-32603, f"node unreachable: {exc.__class__.__name__}")
        if "error" in answer:
            return self._error(answer["error"].get("code", -32603), answer["error"].get("message", ""))
        if method == "eth_sendTransaction":
            self.sent.append(answer.get("result"))
            self.sent_on[answer.get("result")] = chain_id
        return json.dumps({"result": answer.get("result")})

    def _add_chain(self, request: dict[str, Any]) -> str:
        """EIP-3085 as MetaMask checks it: a hex chain id, a name, ETH as the coin, an RPC URL that answers with
        that chain id (then used for the chain)."""
        try:
            chain_id = int(request["chainId"], 16)
            assert request["chainId"] == hex(chain_id), "chainId: 0x-prefixed, unpadded hex"
            assert request["nativeCurrency"] == {"name": "Ether", "symbol": "ETH", "decimals": 18}
            assert isinstance(request["chainName"], str), "chainName"
            assert request["chainName"], "chainName"
            [url] = request["rpcUrls"]
            assert all(u.startswith("https://") for u in request.get("blockExplorerUrls", []))
            reported = node_chain_id(url)
        except (KeyError, ValueError, TypeError, AssertionError, requests.RequestException) as exc:
            return self._error(-32602, f"invalid wallet_addEthereumChain request: {exc!r}")
        if reported != chain_id:
            return self._error(-32602, f"the RPC URL answers chain id {reported}, not {chain_id}")
        self.urls[chain_id] = url
        self.added.append(request)
        return json.dumps({"result": None})


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Iterator[Browser]:
    # Per test, not per session: Playwright's sync API keeps an event loop running in this thread, and
    # Django refuses database work (the live server's set-up and flush) while one runs. A browser
    # started after the database fixtures and closed before their teardown stays out of their way.
    # In between, the test itself does database work (crawls, checks rows) between browser steps: that
    # work is synchronous and never runs inside Playwright's loop, which only looks like async code to
    # Django's guard, so the guard is lifted for the test's lifetime.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()
        # The test's database work ran while Playwright's loop was current, on connections of their
        # own that pytest-django does not know about: close them, or they outlive the test database.
        connections.close_all()


@pytest.fixture
def anvil_node() -> Iterator[Anvil]:
    """A fresh anvil dev chain (chain id 31337, `finalized` two blocks behind the head) with the test
    USDT and USDC deployed where deploy/env.local (and so the tests' configuration) expects them."""
    with Anvil(port=free_port(PORT_RANGE)) as node:
        deploy_stable_coins(node)
        yield node


def _new_page(browser: Browser, viewport: ViewportSize) -> Page:
    context = browser.new_context(viewport=viewport, service_workers="block")
    page = context.new_page()
    errors: list[str] = []
    page.script_errors = errors  # type: ignore[attr-defined]  # the test's own record, carried by the page
    page.on("pageerror", lambda error: errors.append(str(error)))
    return page


@pytest.fixture
def plain_page(browser: Browser) -> Iterator[Callable[..., Page]]:
    pages: list[Page] = []

    def make(viewport: ViewportSize = DESKTOP) -> Page:
        page = _new_page(browser, viewport)
        pages.append(page)
        return page

    yield make
    for page in pages:
        page.context.close()


@pytest.fixture
def wallet_page(browser: Browser) -> Iterator[Callable[..., Page]]:
    """wallet_page(rpc_url, account, chain_id=None, reject=(), connected=False, viewport=DESKTOP).

    chain_id: the chain the wallet is on at first (hex string, e.g. "0x1", a chain it has no node for);
    None = the node's.
    other_nodes: {chain id: node URL} of the other chains the wallet can reach once on them.
    knows: the chain ids the wallet has (switching to another is error 4902 until it is added); None = every
    chain it has a node for, and the one it starts on.
    reject: RPC methods the "user" rejects (EIP-1193 error 4001), e.g. ("eth_sendTransaction",).
    connected: the site was already granted the account (eth_accounts answers without a prompt).
    contract_owner: `account` is a contract wallet; personal_sign answers with this key's signature
    of the message hash, which the wallet contract checks (ERC-1271).
    The page's forwarder is `page.wallet` (its `calls` list records every forwarded RPC call).
    """
    pages: list[Page] = []

    def make(
        *,
        rpc_url: str,
        account: str,
        chain_id: str | None = None,
        reject: tuple[str, ...] = (),
        connected: bool = False,
        viewport: ViewportSize = DESKTOP,
        contract_owner: Any = None,
        other_nodes: dict[int, str] | None = None,
        knows: tuple[int, ...] | None = None,
    ) -> Page:
        page = _new_page(browser, viewport)
        forwarder = WalletForwarder(rpc_url, contract_owner, other_nodes)
        page.expose_function("__dwsWalletRpc", forwarder)
        start = chain_id or hex(node_chain_id(rpc_url))
        has = [hex(c) for c in (forwarder.urls if knows is None else knows)]
        settings = {
            "account": account.lower(),
            "chainId": start,
            "known": sorted({*has, start}),
            "reject": list(reject),
            "connected": connected,
        }
        page.add_init_script(f"window.__dwsWallet = {json.dumps(settings)};\n{PROVIDER_SHIM}")
        page.wallet = forwarder  # type: ignore[attr-defined]  # the test's handle on the wallet, on the page
        pages.append(page)
        return page

    yield make
    for page in pages:
        page.context.close()


@pytest.fixture
def wallets_page(browser: Browser) -> Iterator[Callable[..., Page]]:
    """wallets_page(rpc_url, wallets=[AnnouncedWallet, ...], viewport=DESKTOP): a Page in a browser with
    several wallet extensions, each announcing itself (EIP-6963) with its own account on the same node.
    `page.wallets[name]` is each wallet's forwarder (its `calls` and `sent`)."""
    pages: list[Page] = []

    def make(*, rpc_url: str, wallets: list[AnnouncedWallet], viewport: ViewportSize = DESKTOP) -> Page:
        page = _new_page(browser, viewport)
        forwarders: dict[str, WalletForwarder] = {}
        announced = []
        for n, extension in enumerate(wallets):
            forwarders[extension.name] = WalletForwarder(rpc_url)
            page.expose_function(f"__dwsWalletRpc{n}", forwarders[extension.name])
            start = hex(node_chain_id(rpc_url))
            settings = {
                "account": extension.account.lower(),
                "chainId": start,
                "known": [start],
                "reject": [],
                "connected": False,
            }
            info = {"uuid": extension.uuid, "name": extension.name, "icon": ICON, "rdns": extension.rdns}
            announced.append(
                {
                    "settings": settings,
                    "info": info,
                    "rpcName": f"__dwsWalletRpc{n}",
                    "isEthereum": extension.is_ethereum,
                }
            )
        page.add_init_script(f"window.__dwsWallets = {json.dumps(announced)};\n{ANNOUNCING_WALLETS}")
        page.wallets = forwarders  # type: ignore[attr-defined]  # the test's handles on the wallets
        pages.append(page)
        return page

    yield make
    for page in pages:
        page.context.close()


def switch_wallet(page: Page, chain_id: int, *, tell_the_page: bool = True) -> None:
    """The donor switches the wallet (window.ethereum) to `chain_id` in the wallet's own window; a wallet that
    does not tell the page (no chainChanged) when `tell_the_page` is False."""
    page.evaluate("([id, silent]) => window.ethereum.__switch(id, silent)", [hex(chain_id), not tell_the_page])


def assert_no_script_errors(page: Page) -> None:
    assert page.script_errors == []  # type: ignore[attr-defined]  # set by _new_page


def screenshot(page: Page, name: str) -> Path:
    """Save a full-page screenshot under var/screenshots/ (or DWS_SCREENSHOT_DIR) and return its path."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.evaluate("document.activeElement && document.activeElement.blur()")  # no focus ring or caret
    page.screenshot(path=str(path), full_page=True, animations="disabled")
    return path
