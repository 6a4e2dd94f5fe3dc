"""Browser tests of the donation page: headless Debian Chromium through Playwright, and a wallet.

The wallet is an EIP-1193 provider injected into the page before its scripts run (`add_init_script`).
It behaves like MetaMask from the page's side (accounts, chain id, switch prompts, events, error 4001
on a rejected prompt) and forwards every other RPC call to a real JSON-RPC node (anvil) whose dev
accounts are unlocked, so transactions and personal_sign signatures are real. The forwarding runs in
the test process (`expose_function`), outside the page, as a wallet extension's would: the page's
Content-Security-Policy (connect-src 'self') applies to the page, not to its wallet.

Fixtures:
    browser          - a Chromium per test (see the fixture for why)
    anvil_node       - an anvil dev chain on a free port in the test range (chain id 31337)
    wallet_page      - factory: wallet_page(rpc_url=..., account=..., viewport=...) -> Page with the wallet
    plain_page       - factory: a Page without any wallet
Each page records uncaught script errors in `page.script_errors`; `assert_no_script_errors(page)`.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import Browser, Page, sync_playwright

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
ANVIL = ROOT / "node_modules" / ".bin" / "anvil"
# This checkout's share of TCP ports for servers the tests start (see the README's Tests section).
PORT_RANGE = range(18850, 18900)
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
SCREENSHOTS = Path(os.environ.get("DWS_SCREENSHOT_DIR", ROOT / "docs" / "screenshots"))

# The injected wallet. `__dwsWalletRpc` is the test process's forwarder; `__dwsWallet` its settings.
PROVIDER_SHIM = """
(() => {
  const settings = window.__dwsWallet;
  const listeners = {};
  let connected = settings.connected;
  let chainOverride = settings.chainId;  // null: report the node's own chain id
  const emit = (event, value) => (listeners[event] || []).forEach((fn) => fn(value));
  const fail = (code, message) => Object.assign(new Error(message), { code });
  const forward = async (method, params) => {
    const answer = JSON.parse(await window.__dwsWalletRpc(method, JSON.stringify(params || [])));
    if (answer.error) throw fail(answer.error.code, answer.error.message);
    return answer.result;
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
          return chainOverride ?? (await forward("eth_chainId", []));
        case "wallet_switchEthereumChain": {
          const wanted = params[0].chainId.toLowerCase();
          const nodeChain = (await forward("eth_chainId", [])).toLowerCase();
          if (wanted !== nodeChain) throw fail(4902, `Unrecognized chain ID "${wanted}".`);
          chainOverride = null;
          emit("chainChanged", nodeChain);
          return null;
        }
        default:
          if (!connected && (method === "eth_sendTransaction" || method === "personal_sign")) {
            throw fail(4100, "The requested account has not been authorized by the user.");
          }
          return forward(method, params);
      }
    },
    on(event, fn) { (listeners[event] = listeners[event] || []).push(fn); return provider; },
    removeListener(event, fn) {
      listeners[event] = (listeners[event] || []).filter((f) => f !== fn);
      return provider;
    },
  };
  provider.__emit = emit;
  window.ethereum = provider;
})();
"""


def free_port(ports: range = PORT_RANGE) -> int:
    for port in ports:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {ports.start}-{ports.stop - 1}")


def rpc(url: str, method: str, *params: Any) -> Any:
    answer = requests.post(url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}, timeout=10)
    body = answer.json()
    if "error" in body:
        raise RuntimeError(f"{method}: {body['error']}")
    return body["result"]


@dataclass
class AnvilNode:
    """An anvil dev chain: unlocked, funded dev accounts, instant mining."""

    port: int
    chain_id: int = 31337
    process: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> AnvilNode:
        self.process = subprocess.Popen(
            [str(ANVIL), "--host", "127.0.0.1", "--port", str(self.port), "--chain-id", str(self.chain_id), "--silent"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                rpc(self.url, "eth_chainId")
                return self
            except requests.ConnectionError:
                if self.process.poll() is not None:
                    raise RuntimeError(f"anvil exited: {self.process.stderr.read().decode()[-500:]}") from None
                time.sleep(0.1)
        raise RuntimeError("anvil did not answer within 20 s")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def accounts(self) -> list[str]:
        return [a.lower() for a in rpc(self.url, "eth_accounts")]

    def balance(self, address: str) -> int:
        return int(rpc(self.url, "eth_getBalance", address, "latest"), 16)


class WalletForwarder:
    """Runs in the test process: takes the page's RPC calls and sends them to the node."""

    def __init__(self, rpc_url: str) -> None:
        self.rpc_url = rpc_url
        self.calls: list[tuple[str, list[Any]]] = []
        self.sent: list[str] = []  # hashes of the transactions the page had the wallet send

    def __call__(self, method: str, params_json: str) -> str:
        params = json.loads(params_json)
        self.calls.append((method, params))
        try:
            answer = requests.post(
                self.rpc_url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, timeout=30
            ).json()
        except requests.RequestException as exc:
            return json.dumps({"error": {"code": -32603, "message": f"node unreachable: {exc.__class__.__name__}"}})
        if "error" in answer:
            return json.dumps(
                {"error": {"code": answer["error"].get("code", -32603), "message": answer["error"].get("message", "")}}
            )
        if method == "eth_sendTransaction":
            self.sent.append(answer.get("result"))
        return json.dumps({"result": answer.get("result")})


@pytest.fixture
def browser() -> Iterator[Browser]:
    # Per test, not per session: Playwright's sync API keeps an event loop running in this thread, and
    # Django refuses database work (the live server's set-up and flush) while one runs. A browser
    # started after the database fixtures and closed before their teardown stays out of their way.
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def anvil_node() -> Iterator[AnvilNode]:
    node = AnvilNode(port=free_port()).start()
    yield node
    node.stop()


def _new_page(browser: Browser, viewport: dict[str, int]) -> Page:
    context = browser.new_context(viewport=viewport, service_workers="block")
    page = context.new_page()
    page.script_errors = []  # type: ignore[attr-defined]
    page.on("pageerror", lambda error: page.script_errors.append(str(error)))  # type: ignore[attr-defined]
    return page


@pytest.fixture
def plain_page(browser: Browser) -> Iterator[Callable[..., Page]]:
    pages: list[Page] = []

    def make(viewport: dict[str, int] = DESKTOP) -> Page:
        page = _new_page(browser, viewport)
        pages.append(page)
        return page

    yield make
    for page in pages:
        page.context.close()


@pytest.fixture
def wallet_page(browser: Browser) -> Iterator[Callable[..., Page]]:
    """wallet_page(rpc_url, account, chain_id=None, reject=(), connected=False, viewport=DESKTOP).

    chain_id: the chain the wallet reports before a switch (hex string, e.g. "0x1"); None = the node's.
    reject: RPC methods the "user" rejects (EIP-1193 error 4001), e.g. ("eth_sendTransaction",).
    connected: the site was already granted the account (eth_accounts answers without a prompt).
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
        viewport: dict[str, int] = DESKTOP,
    ) -> Page:
        page = _new_page(browser, viewport)
        forwarder = WalletForwarder(rpc_url)
        page.expose_function("__dwsWalletRpc", forwarder)
        settings = {"account": account.lower(), "chainId": chain_id, "reject": list(reject), "connected": connected}
        page.add_init_script(f"window.__dwsWallet = {json.dumps(settings)};\n{PROVIDER_SHIM}")
        page.wallet = forwarder  # type: ignore[attr-defined]
        pages.append(page)
        return page

    yield make
    for page in pages:
        page.context.close()


def assert_no_script_errors(page: Page) -> None:
    assert page.script_errors == []  # type: ignore[attr-defined]


def screenshot(page: Page, name: str) -> Path:
    """Save a full-page screenshot under docs/screenshots/ (or DWS_SCREENSHOT_DIR) and return its path."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.evaluate("document.activeElement && document.activeElement.blur()")  # no focus ring or caret
    page.screenshot(path=str(path), full_page=True, animations="disabled")
    return path
