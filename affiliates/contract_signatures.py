"""Signatures by contract wallets: ERC-1271 (a deployed wallet) and ERC-6492 (one not deployed yet).

A delphi signature that does not recover to `delphi-key` may still be the key's: when `delphi-key` is
a contract, its `isValidSignature(hash, signature)` decides, asked at the latest block. `hash` is the
EIP-191 personal_sign hash of the delphi message; only the 32-byte magic word (0x1626ba7e, then zeros)
accepts. A signature ending with the 32-byte ERC-6492 suffix wraps (factory, factory calldata, inner
signature): an eth_call without `to` runs SignatureCheck's creation code
(tests/contracts/SignatureCheck.sol), which asks the wallet where it exists and otherwise deploys it from
its factory inside the call first, so a counterfactual wallet can sign before it exists and nothing
persists.

A donor is one record per address across the chains (`user_data`), and one address can be two different
contracts on two chains (a Safe deployed at the same address by different set-ups, a counterfactual
address collision). So the wallet is asked on every configured chain, side by side, and the signature is
accepted only when every chain where the address has code accepts it: a contract on the first chain
cannot sign for the donor who owns the address on a rollup, and a wallet that exists on a rollup only
signs there. Where the address has code nowhere, only an ERC-6492 wrapper can sign, and one chain
accepting its counterfactual wallet is enough (no chain holds anything of that address's to protect).

Anyone can send a signature that does not recover, so what it may cost is bounded for the whole
deployment, whatever the request rate:

- a shared budget in Redis (`CONTRACT_CHECKS_PER_SECOND`, a token bucket every web process draws on):
  past it the check is refused as unverifiable (503, code 1102: try again), never accepted;
- an address seen without code is remembered for `NO_CODE_SECONDS`: its next bad signatures cost
  nothing (a wallet deployed meanwhile waits that long; its ERC-6492 signature works at once);
- one round trip per chain and check (eth_getCode and the eth_call in one batch), each eth_call with a gas
  cap, through one client per provider and process (a pooled connection), the chains asked side by side
  and the whole check waiting at most CHECK_DEADLINE (~2 s: PROVIDER_TIMEOUT each to connect and to
  read), backing off in a scope of its own: a 429 the web tier meets never pauses the crawlers.

The wallet's answer itself is never cached: an owner change revokes at once. A provider that cannot
answer (error, time-out, rate limit, its back-off) makes the request fail as unverifiable, never
accepted: without it nobody knows whether the address has code on that chain. A wallet that reverts or
answers anything but the magic word refuses it.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass

from eth_abi import decode, encode
from eth_utils import keccak
from redis.exceptions import RedisError

from crawlers.chain.outcomes import Answer, NoEvidence
from crawlers.chain.rpc import WEB_BACKOFF_SCOPE, RpcClient
from dws_project.ratelimit import take_token
from dws_project.redis_client import get_redis

logger = logging.getLogger("dws.signing")

ERC1271_MAGIC = "1626ba7e"
ERC1271_YES = "0x" + ERC1271_MAGIC + "00" * 28  # bytes4 magic, ABI-encoded: exactly one 32-byte word
ERC6492_SUFFIX = bytes.fromhex("6492" * 16)
# A donor is waiting, and a web worker with it: connect and read each get this long (~2 s in all).
PROVIDER_TIMEOUT = 1.0
# The whole check, every chain asked side by side: a connect and a read, and a little for the threads.
CHECK_DEADLINE = 2 * PROVIDER_TIMEOUT + 0.5
# Gas each eth_call may burn on the provider: a Safe's isValidSignature with several owners needs ~100k;
# the ERC-6492 check also deploys the wallet through its factory.
ERC1271_GAS = 1_000_000
ERC6492_GAS = 5_000_000
# The deployment-wide budget of checks that reach the provider (all web processes together).
CONTRACT_CHECKS_PER_SECOND = 2.0
CONTRACT_CHECKS_BURST = 4
NO_CODE_SECONDS = 60
_BUDGET_KEY = "contract-signature-checks"
_NO_CODE_KEY = "dws:no-code:"

# Creation code of tests/contracts/SignatureCheck.sol, solc 0.8.37 (optimizer 200 runs, cancun).
SIGNATURE_CHECK_BYTECODE = (
    "0x608060405234801561000f575f5ffd5b5060405161039d38038061039d83398101604081905261002e916102a5565b5f5f"
    "866001600160a01b03163b11801561004e575061004e8686866100fb565b90508015801561006657506001600160a01b0383"
    "1615155b156100f2575f836001600160a01b0316836040516100849190610333565b5f604051808303815f865af19150503d"
    "805f81146100bd576040519150601f19603f3d011682016040523d82523d5f602084013e6100c2565b606091505b50509050"
    "8080156100dc57505f876001600160a01b03163b115b80156100ee57506100ee8787876100fb565b9150505b805f52600160"
    "1ff35b5f5f5f856001600160a01b0316631626ba7e60e01b8686604051602401610123929190610349565b60408051601f19"
    "8184030181529181526020820180516001600160e01b03166001600160e01b03199094169390931790925290516101619190"
    "610333565b5f60405180830381855afa9150503d805f8114610199576040519150601f19603f3d011682016040523d82523d"
    "5f602084013e61019e565b606091505b50915091508180156101b257506020815110155b80156101e357508051630b135d3f"
    "60e11b906101d79083016020908101908401610385565b6001600160e01b031916145b9695505050505050565b8051600160"
    "0160a01b0381168114610203575f5ffd5b919050565b634e487b7160e01b5f52604160045260245ffd5b5f82601f83011261"
    "022b575f5ffd5b81516001600160401b0381111561024457610244610208565b604051601f8201601f19908116603f011681"
    "016001600160401b038111828210171561027257610272610208565b604052818152838201602001851015610289575f5ffd"
    "5b8160208501602083015e5f918101602001919091529392505050565b5f5f5f5f5f60a086880312156102b9575f5ffd5b61"
    "02c2866101ed565b6020870151604088015191965094506001600160401b038111156102e4575f5ffd5b6102f08882890161"
    "021c565b9350506102ff606087016101ed565b60808701519092506001600160401b0381111561031a575f5ffd5b61032688"
    "82890161021c565b9150509295509295909350565b5f82518060208501845e5f920191825250919050565b82815260406020"
    "8201525f82518060408401528060208501606085015e5f606082850101526060601f19601f83011684010191505093925050"
    "50565b5f60208284031215610395575f5ffd5b505191905056fe"
)


class ContractRefused(Exception):
    """The wallet does not accept the signature (or delphi-key is no contract)."""


class ContractUnreachable(Exception):
    """The provider could not answer: the signature is neither accepted nor refused."""


@dataclass(frozen=True)
class Wrapped6492:
    factory: str
    factory_calldata: bytes
    signature: bytes


def personal_sign_hash(message: str) -> bytes:
    """EIP-191 version 0x45: what a wallet's personal_sign signs."""
    data = message.encode()
    return keccak(b"\x19Ethereum Signed Message:\n" + str(len(data)).encode() + data)


def unwrap_6492(signature: bytes) -> Wrapped6492 | None:
    """The wrapper's parts, None when `signature` does not end with the ERC-6492 suffix."""
    if len(signature) < 32 or signature[-32:] != ERC6492_SUFFIX:
        return None
    try:
        factory, calldata, inner = decode(["address", "bytes", "bytes"], signature[:-32])
    except Exception:  # noqa: BLE001 - any undecodable wrapper is a bad signature
        raise ContractRefused("malformed ERC-6492 wrapper") from None
    return Wrapped6492(factory.lower(), calldata, inner)


def _result(outcome: object, what: str) -> str:
    if isinstance(outcome, Answer) and isinstance(outcome.value, str):
        return outcome.value
    if isinstance(outcome, NoEvidence) and outcome.kind == "error" and "revert" in outcome.detail.lower():
        raise ContractRefused(f"{what} reverted")
    raise ContractUnreachable(outcome.describe() if isinstance(outcome, NoEvidence) else f"{what}: malformed answer")


@functools.cache
def web_client(rpc_url: str) -> RpcClient:
    """The process's one client for signature checks: its pooled connection is kept between requests."""
    return RpcClient(
        rpc_url, connect_timeout=PROVIDER_TIMEOUT, read_timeout=PROVIDER_TIMEOUT, backoff_scope=WEB_BACKOFF_SCOPE
    )


def _known_without_code(address: str) -> bool:
    try:
        return bool(get_redis().exists(_NO_CODE_KEY + address))
    except RedisError:
        return False  # then the budget decides


def _remember_without_code(address: str) -> None:
    try:
        get_redis().set(_NO_CODE_KEY + address, 1, ex=NO_CODE_SECONDS)
    except RedisError as exc:
        logger.warning("contract signatures: could not remember an address without code: %s", type(exc).__name__)


def _take_budget() -> None:
    """One check's share of the deployment-wide budget, or ContractUnreachable (Redis down: refused too,
    since nothing would bound the provider work then)."""
    try:
        allowed, _ = take_token(_BUDGET_KEY, rate=CONTRACT_CHECKS_PER_SECOND, burst=CONTRACT_CHECKS_BURST)
    except RedisError as exc:
        raise ContractUnreachable(f"the check budget is unavailable ({type(exc).__name__})") from None
    if not allowed:
        raise ContractUnreachable("the contract-signature check budget is spent for now")


@dataclass(frozen=True)
class ChainVerdict:
    """What one chain said: whether the address has code there, and whether the check accepted."""

    has_code: bool
    accepts: bool


def check_contract_signature(*, rpc_urls: Sequence[str], address: str, message: str, signature: bytes) -> None:
    """Return when every chain (one provider URL each) where `address` has code accepts `signature` for
    `message` (or, where it has code on none, an ERC-6492 wrapper's counterfactual wallet does on one);
    raise ContractRefused or ContractUnreachable otherwise."""
    digest = personal_sign_hash(message)
    wrapped = unwrap_6492(signature)
    if wrapped is None and _known_without_code(address):
        raise ContractRefused("signer is not delphi-key (no code, remembered)")
    _take_budget()
    if wrapped is not None:
        args = encode(
            ["address", "bytes32", "bytes", "address", "bytes"],
            [address, digest, wrapped.signature, wrapped.factory, wrapped.factory_calldata],
        )
        call = {"data": SIGNATURE_CHECK_BYTECODE + args.hex(), "gas": hex(ERC6492_GAS)}
        check = _Check(call, "0x01", "ERC-6492 check")
    else:
        data = "0x" + ERC1271_MAGIC + encode(["bytes32", "bytes"], [digest, signature]).hex()
        check = _Check({"to": address, "data": data, "gas": hex(ERC1271_GAS)}, ERC1271_YES, "isValidSignature")
    verdicts = _ask_every_chain(rpc_urls, address, check)
    with_code = [v for v in verdicts if v.has_code]
    if with_code:
        if not all(v.accepts for v in with_code):
            raise ContractRefused("the wallet contract does not accept the signature on every chain it is on")
        return
    if wrapped is None:
        _remember_without_code(address)
        raise ContractRefused("signer is not delphi-key")
    if not any(v.accepts for v in verdicts):
        raise ContractRefused("the counterfactual wallet does not accept the signature")


@dataclass(frozen=True)
class _Check:
    call: dict[str, str]
    accepting: str  # the answer that accepts
    what: str


def _ask_every_chain(rpc_urls: Sequence[str], address: str, check: _Check) -> list[ChainVerdict]:
    """Every chain's verdict, asked side by side within CHECK_DEADLINE; ContractUnreachable when any chain
    did not say."""
    if len(rpc_urls) == 1:
        return [_ask_chain(rpc_urls[0], address, check)]
    pool = ThreadPoolExecutor(max_workers=len(rpc_urls), thread_name_prefix="dws-signature")
    try:
        asked = [pool.submit(_ask_chain, url, address, check) for url in rpc_urls]
        _, late = wait(asked, timeout=CHECK_DEADLINE)
        if late:
            raise ContractUnreachable("a chain's provider did not answer within the check's deadline")
        return [future.result() for future in asked]
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _ask_chain(rpc_url: str, address: str, check: _Check) -> ChainVerdict:
    code_outcome, call_outcome = web_client(rpc_url).batch(
        [("eth_getCode", [address, "latest"]), ("eth_call", [check.call, "latest"])]
    )
    code = _result(code_outcome, "eth_getCode")
    try:
        answer = _result(call_outcome, check.what)
    except ContractRefused:  # it reverted
        answer = ""
    return ChainVerdict(has_code=code not in ("0x", "0x0", ""), accepts=answer.lower() == check.accepting)
