"""A real anvil node for tests and benchmarks: start/stop, deploy the test contracts, move ETH and tokens.

Used by the crawler tests, the chaos tests and the browser tests. Every call is plain JSON-RPC over HTTP
(anvil's development accounts are unlocked, so `eth_sendTransaction` needs no key handling here).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests
from eth_abi import encode
from eth_utils import keccak, to_checksum_address

from web.dev_chain import DEV_ACCOUNTS

ROOT = Path(__file__).resolve().parent.parent
ANVIL = ROOT / "node_modules" / ".bin" / "anvil"
ARTIFACTS = Path(__file__).resolve().parent / "contracts" / "artifacts"


def worker_share(ports: range) -> range:
    """This pytest-xdist worker's slice of `ports` (all of them outside xdist): workers never race for one."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return ports
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    size = len(ports) // count
    start = ports.start + int(worker.removeprefix("gw")) * size
    return range(start, start + size)


# TEST_PORT_RANGE="19000-19400" keeps parallel checkouts on their own ports; each xdist worker takes a slice.
PORT_RANGE = worker_share(range(*(int(p) for p in os.environ.get("TEST_PORT_RANGE", "18500-18900").split("-"))))

# anvil's well-known development accounts, lower case (one list, shared with `make run`'s setup).
ACCOUNTS = DEV_ACCOUNTS
DEPLOYER = ACCOUNTS[0]
DONATION_ADDRESS = ACCOUNTS[9]  # deploy/env.local's DWS_DONATION_ADDRESS
# anvil's tenth development key (the donation address's): published in anvil's banner, worthless elsewhere
DONATION_KEY = "0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6"
ETHER = 10**18


def selector(signature: str) -> bytes:
    return keccak(text=signature)[:4]


_last_port: dict[tuple[int, int], int] = {}  # per range asked: the index of the port given last


def free_port(ports: Sequence[int] = PORT_RANGE) -> int:
    """A port of `ports` nothing listens on, taken in turn after the one this process gave last: a port just
    given up (a server of the previous test still shutting down, or one about to bind it) is the last to be
    given again (once, a gunicorn found the port it was given taken, and the test asked another server)."""
    key = (ports[0], len(ports))
    after = _last_port.get(key, -1) + 1
    for index in [*range(after, len(ports)), *range(after)]:
        port = ports[index]
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            _last_port[key] = index
            return port
    raise RuntimeError(f"no free port in {ports[0]}..{ports[-1]}")


def load_artifact(name: str) -> dict[str, Any]:
    return json.loads((ARTIFACTS / f"{name}.json").read_text())


class RpcFailure(Exception):
    pass


class Anvil:
    """One anvil process. `finalized` trails the head by two blocks (one slot per epoch)."""

    coins: dict[str, str]  # asset -> contract, set by the fixture that deploys them (deploy_stable_coins)

    def __init__(self, *, port: int | None = None, slots_in_an_epoch: int = 1, extra_args: Sequence[str] = ()) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # The states anvil moves out of memory (a chain of some hundred blocks; ~1.6 MB a block) go to a
        # directory of this node's own, removed when it stops: under the shared ~/.foundry/anvil/tmp another
        # run's clean-up took a running node's old states away, and a killed node's stayed behind.
        self._states = tempfile.mkdtemp(prefix="dws-anvil-states-")
        self._args = [
            str(ANVIL),
            "--port",
            str(self.port),
            "--host",
            "127.0.0.1",
            "--slots-in-an-epoch",
            str(slots_in_an_epoch),
            "--silent",
            "--cache-path",
            self._states,
            # anvil keeps only so many old blocks' states on disk by default: a test that mined ~500 blocks
            # found its first blocks' state gone ("block height is 504 but requested was 2"), and a session
            # node reverted after such a test had none below its head
            *([] if "--max-persisted-states" in extra_args else ["--max-persisted-states", "20000"]),
            *extra_args,
        ]
        self._process: subprocess.Popen | None = None
        self._session = requests.Session()
        self._ids = 0
        self._automine = True

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self, timeout: float = 20.0) -> Anvil:
        os.makedirs(self._states, exist_ok=True)  # a node stopped and started again
        self._process = subprocess.Popen(self._args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"anvil exited: {self._process.stderr.read().decode(errors='replace')[:500]}")
            try:
                self.rpc("eth_chainId")
                return self
            except (requests.ConnectionError, RpcFailure):
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("anvil did not answer in time")

    def stop(self) -> None:
        if self._process and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None
        shutil.rmtree(self._states, ignore_errors=True)

    def __enter__(self) -> Anvil:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    # --- raw JSON-RPC -------------------------------------------------------------------------
    def rpc(self, method: str, *params: Any) -> Any:
        self._ids += 1
        body = {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": list(params)}
        reply = self._session.post(self.url, json=body, timeout=30).json()
        if "error" in reply:
            raise RpcFailure(f"{method}: {reply['error']}")
        return reply["result"]

    def rpc_batch(self, calls: Sequence[tuple[str, list[Any]]]) -> list[Any]:
        body = [{"jsonrpc": "2.0", "id": i, "method": m, "params": p} for i, (m, p) in enumerate(calls)]
        replies = sorted(self._session.post(self.url, json=body, timeout=120).json(), key=lambda r: r["id"])
        for reply in replies:
            if "error" in reply:
                raise RpcFailure(str(reply["error"]))
        return [r["result"] for r in replies]

    # --- chain control ------------------------------------------------------------------------
    def head(self) -> int:
        return int(self.rpc("eth_blockNumber"), 16)

    def finalized(self) -> int:
        return int(self.rpc("eth_getBlockByNumber", "finalized", False)["number"], 16)

    def block(self, number: int | str, full: bool = False) -> dict[str, Any]:
        tag = hex(number) if isinstance(number, int) else number
        return self.rpc("eth_getBlockByNumber", tag, full)

    def mine(self, blocks: int = 1) -> int:
        self.rpc("anvil_mine", hex(blocks))
        return self.head()

    def set_automine(self, enabled: bool) -> None:
        self.rpc("evm_setAutomine", enabled)
        self._automine = enabled

    @contextmanager
    def one_block(self) -> Iterator[None]:
        """Transactions sent inside the block are mined together, in one block, when it ends."""
        self.set_automine(False)
        try:
            yield
            self.mine(1)
        finally:
            self.set_automine(True)

    def set_next_block_timestamp(self, timestamp: int) -> None:
        self.rpc("evm_setNextBlockTimestamp", hex(timestamp))

    def snapshot(self) -> str:
        return self.rpc("evm_snapshot")

    def revert(self, snapshot_id: str) -> None:
        if not self.rpc("evm_revert", snapshot_id):
            raise RpcFailure(f"evm_revert {snapshot_id} refused")

    @contextmanager
    def test_snapshot(self, test: str, rebuild: Callable[[Anvil], None]) -> Iterator[Anvil]:
        """One test on this session node: a snapshot taken before, reverted after, and the node checked
        sound again. A revert has once left a session node (under xdist, the test never found) with its
        head but without blocks and state below it ("no block", "no state for block 4"), and every later
        test of that worker failed on it; so a node that does not come back as it was is started anew and
        rebuilt (`rebuild`), with a warning naming the test that left it so."""
        before = self._recent_blocks()
        snapshot = self.snapshot()
        try:
            yield self
        finally:
            self.set_automine(True)
            self.revert(snapshot)
            after = self._recent_blocks()
            if after != before or not all(block and state for _, block, state in after):
                broken = f"{test} left its session anvil unsound after the revert ({before} -> {after})"
                warnings.warn(f"{broken}: started anew", stacklevel=2)
                self.stop()
                self.start()
                rebuild(self)

    def _recent_blocks(self) -> list[tuple[int, str | None, bool]]:
        """The last 16 blocks as (number, hash, whether their state answers)."""
        head = self.head()
        recent = []
        for number in range(max(0, head - 15), head + 1):
            block = self.rpc("eth_getBlockByNumber", hex(number), False)
            try:
                self.rpc("eth_getBalance", DEV_ACCOUNTS[0], hex(number))
                state = True
            except RpcFailure:
                state = False
            recent.append((number, block and block["hash"], state))
        return recent

    def reorg(self, depth: int, transactions: Sequence[tuple[dict[str, Any] | str, int]] = ()) -> None:
        """Replace the last `depth` blocks; `transactions` are (tx request or signed raw tx, block offset)."""
        self.rpc("anvil_reorg", depth, [[tx, offset] for tx, offset in transactions])

    def remine_one_block_later(self, signed: str) -> None:
        """Re-org the head block away (replaced by an empty one) and mine the signed raw transaction it
        held again in the block after: the same transaction, now in another block."""
        self.reorg(1, [])
        self.mine(1)
        self.reorg(1, [(signed, 0)])

    def set_code(self, address: str, code: str) -> None:
        self.rpc("anvil_setCode", address, code)

    def set_balance(self, address: str, wei: int) -> None:
        self.rpc("anvil_setBalance", address, hex(wei))

    def impersonate(self, address: str) -> None:
        self.rpc("anvil_impersonateAccount", address)

    def receipt(self, tx_hash: str) -> dict[str, Any]:
        return self.rpc("eth_getTransactionReceipt", tx_hash)

    def wait_receipt(self, tx_hash: str, timeout: float = 10.0) -> dict[str, Any]:
        """The receipt once the (auto-mined) transaction is in a block."""
        deadline = time.monotonic() + timeout
        while (receipt := self.receipt(tx_hash)) is None:
            if time.monotonic() > deadline:
                raise RpcFailure(f"no receipt for {tx_hash}: is automine off?")
            time.sleep(0.02)
        return receipt

    # --- transactions -------------------------------------------------------------------------
    def send(self, tx: dict[str, Any]) -> str:
        """Send from an unlocked dev account; with automine on, return once the transaction is mined."""
        tx_hash = self.rpc("eth_sendTransaction", tx)
        if self._automine:
            self.wait_receipt(tx_hash)
        return tx_hash

    def send_eth(self, sender: str, to: str, wei: int, *, gas: int | None = None) -> str:
        tx: dict[str, Any] = {"from": sender, "to": to, "value": hex(wei)}
        if gas is not None:
            tx["gas"] = hex(gas)
        return self.send(tx)

    def deploy(
        self, artifact: str, types: Sequence[str] = (), args: Sequence[Any] = (), *, sender: str = DEPLOYER
    ) -> str:
        data = load_artifact(artifact)["bytecode"] + encode(list(types), list(args)).hex()
        tx_hash = self.send({"from": sender, "data": data, "gas": hex(3_000_000)})
        receipt = self.wait_receipt(tx_hash)
        if receipt["status"] != "0x1":
            raise RpcFailure(f"deploying {artifact} reverted")
        return receipt["contractAddress"].lower()

    def call_data(self, signature: str, types: Sequence[str], args: Sequence[Any]) -> str:
        return "0x" + (selector(signature) + encode(list(types), list(args))).hex()

    def token_tx(self, token: str, sender: str, signature: str, types: Sequence[str], args: Sequence[Any]) -> dict:
        return {"from": sender, "to": token, "data": self.call_data(signature, types, args), "gas": hex(200_000)}

    def mint(self, token: str, to: str, amount: int) -> str:
        return self.send(self.token_tx(token, DEPLOYER, "mint(address,uint256)", ["address", "uint256"], [to, amount]))

    def transfer_token(self, token: str, sender: str, to: str, amount: int) -> str:
        tx = self.token_tx(token, sender, "transfer(address,uint256)", ["address", "uint256"], [to, amount])
        return self.send(tx)

    def approve(self, token: str, owner: str, spender: str, amount: int) -> str:
        tx = self.token_tx(token, owner, "approve(address,uint256)", ["address", "uint256"], [spender, amount])
        return self.send(tx)

    def transfer_from(self, token: str, spender: str, owner: str, to: str, amount: int) -> str:
        types = ["address", "address", "uint256"]
        tx = self.token_tx(token, spender, "transferFrom(address,address,uint256)", types, [owner, to, amount])
        return self.send(tx)

    def wallet_forward(self, wallet: str, owner: str, token: str, to: str, amount: int) -> str:
        types = ["address", "address", "uint256"]
        tx = self.token_tx(wallet, owner, "forward(address,address,uint256)", types, [token, to, amount])
        return self.send(tx)

    def token_balance(self, token: str, owner: str) -> int:
        data = self.call_data("balanceOf(address)", ["address"], [owner])
        return int(self.rpc("eth_call", {"to": token, "data": data}, "latest"), 16)


def deploy_stable_coins(anvil: Anvil) -> dict[str, str]:
    """USDT then USDC from the deployer's first two nonces: the addresses deploy/env.local configures."""
    usdt = anvil.deploy("TestStableCoin", ["string", "string"], ["Tether USD (test)", "USDT"])
    usdc = anvil.deploy("TestStableCoin", ["string", "string"], ["USD Coin (test)", "USDC"])
    return {"usdt": usdt, "usdc": usdc}


# The second chain of the multi-chain tests: a local "rollup" on the other development chain id, with its own
# coin contracts (USDC at the deployer's first nonce, so not where the first chain has it).
ROLLUP = "rollup"
ROLLUP_CHAIN_ID = 1337


def deploy_rollup_coins(anvil: Anvil) -> dict[str, str]:
    """The rollup's own USDC, from the deployer's first nonce (where the first chain has its USDT)."""
    return {"usdc": anvil.deploy("TestStableCoin", ["string", "string"], ["USD Coin (rollup test)", "USDC"])}


def as_contract_wallet(anvil: Anvil, address: str, owner: str) -> None:
    """Give `address` an OwnedWallet's code (a Safe stand-in: its owner signs, the wallet calls) with
    `owner` as its owner (storage slot 0)."""
    template = anvil.deploy("OwnedWallet", ["address"], [owner])
    anvil.set_code(address, anvil.rpc("eth_getCode", template, "latest"))
    anvil.rpc("anvil_setStorageAt", address, "0x0", "0x" + owner[2:].rjust(64, "0"))


def authorize_7702(anvil: Anvil, delegate: str, *, sponsor: str = DEPLOYER) -> str:
    """The donation address signs an EIP-7702 authorization to `delegate` (the zero address clears it); the
    `sponsor`'s type-4 transaction carries it: the address's nonce moves, no transaction is from it."""
    from eth_account import Account  # a test dependency only the 7702 tests need

    nonce = int(anvil.rpc("eth_getTransactionCount", DONATION_ADDRESS, "latest"), 16)
    chain_id = int(anvil.rpc("eth_chainId"), 16)
    signed = Account.sign_authorization({"chainId": chain_id, "address": delegate, "nonce": nonce}, DONATION_KEY)
    entry = {
        "chainId": hex(chain_id),
        "address": delegate,
        "nonce": hex(nonce),
        "yParity": hex(signed.y_parity),
        "r": hex(signed.r),
        "s": hex(signed.s),
    }
    tx = {"from": sponsor, "to": sponsor, "value": "0x0", "authorizationList": [entry], "gas": hex(200_000)}
    return anvil.send(tx)


def multisend(transactions: Sequence[dict[str, Any]]) -> bytes:
    """MultiSend's packed encoding of calls ({"to", "value", "data"}): what tests/contracts/BatchSafe.sol (and a
    Safe's MultiSendCallOnly) executes in one transaction."""
    packed = b""
    for tx in transactions:
        data = bytes.fromhex(tx["data"].removeprefix("0x"))
        packed += b"\x00" + bytes.fromhex(tx["to"][2:]) + int(tx["value"]).to_bytes(32, "big")
        packed += len(data).to_bytes(32, "big") + data
    return packed


def checksum(address: str) -> str:
    return to_checksum_address(address)
