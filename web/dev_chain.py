"""The local development chain behind `make run`: anvil's dev accounts, the test stable coins, donors.

Everything here refuses to touch a node whose chain id is not a development chain (DEV_CHAIN_IDS):
it sends transactions from anvil's well-known, publicly known dev accounts (unlocked on the node, so
no key is handled here) and mints test coins. It is a demo and test aid, never part of crediting.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import requests
from eth_abi import encode
from eth_utils import keccak

from dws_project.chain_settings import DEV_CHAIN_IDS, ChainSettings
from dws_project.config_values import StableCoin
from dws_project.redaction import redact_url

# The compiled 6-decimal test stable coin (source and compiler script next to it).
ROOT = Path(__file__).resolve().parent.parent
STABLE_COIN_ARTIFACT = ROOT / "tests" / "contracts" / "artifacts" / "TestStableCoin.json"
STABLE_COIN_NAMES = {"usdt": ("Tether USD (test)", "USDT"), "usdc": ("USD Coin (test)", "USDC")}

# anvil's dev accounts from the mnemonic "test test test test test test test test test test test junk".
# Their keys are published in anvil's own start-up banner: worthless anywhere but a dev chain.
DEV_ACCOUNTS = (
    "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266",
    "0x70997970c51812dc3a010c7d01b50e0d17dc79c8",
    "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc",
    "0x90f79bf6eb2c4f870365e785982e1f101e93b906",
    "0x15d34aaf54267db7d7c367839aaf71a00a2c6a65",
    "0x9965507d1a55bcc2695c58ba16fb37d819b0a4dc",
    "0x976ea74026e726554db657fa54763abd0c3a0aa9",
    "0x14dc79964da2c08b23698b3d3cc7ca32193d9955",
    "0x23618e81e3f5cdf7f54c3d65f7fbc0abf5b21e8f",
    "0xa0ee7a142d267c1f36714e4a8f75612f20a79720",
)
# Deploys the test coins: on chain eth USDT at nonce 0 and USDC at nonce 1 (the addresses env.local names), on
# the local rollup USDC at nonce 2 and USDT at nonce 3 (env.local-chain), nonces 0 and 1 burnt there, so no
# coin of one chain sits at an address the other chain uses.
DEPLOYER = DEV_ACCOUNTS[0]
# How far past the deployer's next nonce a configured coin may lie (the nonces before it are burnt).
MAX_BURNT_NONCES = 16
MANUAL_DONOR = DEV_ACCOUNTS[1]  # the account the `make run` banner suggests importing into a wallet
MANUAL_DONOR_KEY_HINT = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"
SIMULATED_DONORS = DEV_ACCOUNTS[2:9]
COIN_FUNDING = 1_000_000  # whole coins minted to each dev account
ETHER = 10**18


class DevChainError(Exception):
    """The node is not a dev chain, or the dev set-up cannot be made to match the configuration."""


def selector(signature: str) -> bytes:
    return keccak(text=signature)[:4]


def call_data(signature: str, types: list[str], args: list[Any]) -> str:
    return "0x" + (selector(signature) + encode(types, args)).hex()


class DevChain:
    """JSON-RPC to a development node whose accounts are unlocked."""

    def __init__(self, url: str, *, timeout: float = 30.0) -> None:
        self.url = url
        self.timeout = timeout
        self._session = requests.Session()

    def rpc(self, method: str, *params: Any) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}
        try:
            reply = self._session.post(self.url, json=body, timeout=self.timeout).json()
        except (requests.RequestException, ValueError) as exc:
            # Only the origin: a provider URL may carry a key in its path or query.
            raise DevChainError(f"{method}: no answer from {redact_url(self.url)} ({type(exc).__name__})") from None
        if "error" in reply:
            raise DevChainError(f"{method}: {reply['error'].get('message', reply['error'])}")
        return reply["result"]

    def chain_id(self) -> int:
        return int(self.rpc("eth_chainId"), 16)

    def require_dev_chain(self, chain: ChainSettings | None = None) -> int:
        """The node's chain id, once it is known to be a dev chain (and `chain`'s configured one, if given)."""
        chain_id = self.chain_id()
        if chain_id not in DEV_CHAIN_IDS:
            raise DevChainError(
                f"refusing: the node reports chain id {chain_id}, not a development chain "
                f"({', '.join(map(str, sorted(DEV_CHAIN_IDS)))})"
            )
        if chain is not None and chain.chain_id != chain_id:
            variable = chain.variable("CHAIN_ID")
            raise DevChainError(f"refusing: the node reports chain id {chain_id} but {variable} is {chain.chain_id}")
        return chain_id

    def head(self) -> int:
        return int(self.rpc("eth_blockNumber"), 16)

    def has_code(self, address: str) -> bool:
        return self.rpc("eth_getCode", address, "latest") not in ("0x", "0x0", None)

    def nonce(self, address: str) -> int:
        return int(self.rpc("eth_getTransactionCount", address, "latest"), 16)

    def eth_balance(self, address: str) -> int:
        return int(self.rpc("eth_getBalance", address, "latest"), 16)

    def token_balance(self, token: str, owner: str) -> int:
        data = call_data("balanceOf(address)", ["address"], [owner])
        return int(self.rpc("eth_call", {"to": token, "data": data}, "latest"), 16)

    def send(self, tx: dict[str, Any], *, wait: float = 60.0) -> dict[str, Any]:
        """Send from an unlocked account and return the receipt once mined (anvil mines on its own)."""
        return self.receipt(self.rpc("eth_sendTransaction", tx), wait=wait)

    def send_all(self, txs: list[dict[str, Any]], *, wait: float = 60.0) -> list[dict[str, Any]]:
        """Send them all (the node numbers each sender's nonces in order), then wait for every receipt:
        with a block time, one block takes them all instead of one block each."""
        hashes = [self.rpc("eth_sendTransaction", tx) for tx in txs]
        return [self.receipt(tx_hash, wait=wait) for tx_hash in hashes]

    def receipt(self, tx_hash: str, *, wait: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + wait
        while (receipt := self.rpc("eth_getTransactionReceipt", tx_hash)) is None:
            if time.monotonic() > deadline:
                raise DevChainError(f"transaction {tx_hash} not mined within {wait:.0f} s")
            time.sleep(0.1)
        if receipt["status"] != "0x1":
            raise DevChainError(f"transaction {tx_hash} reverted")
        return receipt

    def send_eth(self, sender: str, to: str, wei: int) -> str:
        return self.send({"from": sender, "to": to, "value": hex(wei)})["transactionHash"]

    def transfer_token(self, token: str, sender: str, to: str, units: int) -> str:
        data = call_data("transfer(address,uint256)", ["address", "uint256"], [to, units])
        return self.send({"from": sender, "to": token, "data": data, "gas": hex(200_000)})["transactionHash"]

    def mint(self, token: str, to: str, units: int) -> str:
        return self.send(mint_tx(token, to, units))["transactionHash"]


def _rlp_bytes(item: bytes) -> bytes:
    if len(item) == 1 and item[0] < 0x80:
        return item
    assert len(item) < 56, "short items only"
    return bytes([0x80 + len(item)]) + item


def create_address(sender: str, nonce: int) -> str:
    """Where `sender`'s transaction number `nonce` deploys a contract: keccak256(rlp([sender, nonce]))[12:]."""
    nonce_bytes = nonce.to_bytes((nonce.bit_length() + 7) // 8, "big")  # 0 is the empty string
    payload = _rlp_bytes(bytes.fromhex(sender[2:])) + _rlp_bytes(nonce_bytes)
    assert len(payload) < 56
    return "0x" + keccak(bytes([0xC0 + len(payload)]) + payload)[12:].hex()


def mint_tx(token: str, to: str, units: int) -> dict[str, Any]:
    data = call_data("mint(address,uint256)", ["address", "uint256"], [to, units])
    return {"from": DEPLOYER, "to": token, "data": data, "gas": hex(200_000)}


@dataclass(frozen=True)
class SetupReport:
    chain_id: int
    deployed: tuple[str, ...]  # assets whose contract this run deployed
    funded: tuple[str, ...]  # "<asset> <address>" pairs this run minted to


def dev_chain_setup(chain: DevChain, config: ChainSettings) -> SetupReport:
    """Deploy the chain's configured stable coins (if absent) where its coins variable expects them; fund the
    dev accounts with them. Safe to run again: what exists is kept, and only empty balances are topped up.

    Each coin is deployed, in the order listed, from the deployer's nonce whose contract address is the
    configured one; the nonces skipped to reach it are burnt with empty transfers to itself."""
    chain_id = chain.require_dev_chain(config)
    artifact = json.loads(STABLE_COIN_ARTIFACT.read_text())
    missing = [coin for coin in config.stable_coins if not chain.has_code(coin.contract)]
    nonce = chain.nonce(DEPLOYER) if missing else 0
    txs: list[dict[str, Any]] = []
    deploying: dict[int, StableCoin] = {}  # index in txs -> the coin that transaction deploys
    for coin in missing:
        at = next(
            (n for n in range(nonce, nonce + MAX_BURNT_NONCES) if create_address(DEPLOYER, n) == coin.contract), None
        )
        if at is None:
            raise DevChainError(
                f"{coin.asset} cannot land where {config.variable('STABLE_COINS')} expects {coin.contract}: it is "
                f"not where any of {DEPLOYER}'s next {MAX_BURNT_NONCES} deployments lands (from nonce {nonce}); the "
                "coins are deployed from it in the order listed, so start from a fresh chain"
            )
        txs += [{"from": DEPLOYER, "to": DEPLOYER, "value": "0x0"} for _ in range(nonce, at)]
        name, symbol = STABLE_COIN_NAMES[coin.asset]
        data = artifact["bytecode"] + encode(["string", "string"], [name, symbol]).hex()
        deploying[len(txs)] = coin
        txs.append({"from": DEPLOYER, "data": data, "gas": hex(3_000_000)})
        nonce = at + 1
    receipts = chain.send_all(txs)
    for index, coin in deploying.items():
        address = receipts[index]["contractAddress"].lower()
        if address != coin.contract:
            raise DevChainError(
                f"{coin.asset} landed at {address}, but {config.variable('STABLE_COINS')} expects {coin.contract}: "
                f"the coins are deployed from {DEPLOYER} in the order listed, so start from a fresh chain"
            )
    funded, mints = [], []
    for coin in config.stable_coins:
        for account in DEV_ACCOUNTS:
            if account == config.donation_address or chain.token_balance(coin.contract, account) > 0:
                continue
            mints.append(mint_tx(coin.contract, account, COIN_FUNDING * 10**coin.scale))
            funded.append(f"{coin.asset} {account}")
    chain.send_all(mints)
    deployed = [coin.asset for coin in missing]
    return SetupReport(chain_id=chain_id, deployed=tuple(deployed), funded=tuple(funded))


@dataclass(frozen=True)
class SimulatedDonation:
    donor: str
    asset: str
    amount: Decimal  # in the asset's own units (ETH, USDT, USDC)
    tx_hash: str


def random_donation_size(asset: str, rng: random.Random) -> Decimal:
    """A lively spread of sizes: ETH 0.01..2 (8 decimals, what the ledger keeps); coins 5..5,000 (2)."""
    if asset == "eth":
        return Decimal(rng.randint(1_000_000, 200_000_000)) / Decimal(10**8)
    return Decimal(rng.randint(500, 500_000)) / Decimal(100)


def simulate_donation(
    chain: DevChain, config: ChainSettings, rng: random.Random, donors: tuple[str, ...]
) -> SimulatedDonation:
    """Send one donation of a random asset and size from a random dev donor to the donation address."""
    donor = rng.choice(donors)
    asset = rng.choice(["eth", *(coin.asset for coin in config.stable_coins)])
    amount = random_donation_size(asset, rng)
    if asset == "eth":
        tx_hash = chain.send_eth(donor, config.donation_address, int(amount * ETHER))
    else:
        coin = config.stable_coin(asset)
        assert coin is not None
        units = int(amount * 10**coin.scale)
        if chain.token_balance(coin.contract, donor) < units:
            chain.mint(coin.contract, donor, COIN_FUNDING * 10**coin.scale)
        tx_hash = chain.transfer_token(coin.contract, donor, config.donation_address, units)
    return SimulatedDonation(donor=donor, asset=asset, amount=amount, tx_hash=tx_hash)
