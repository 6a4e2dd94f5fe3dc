"""A genuine Safe (v1.3.0 and later) at the donation address: the code we trust, and its events. Pure.

A Safe is a proxy whose storage slot 0 names its singleton; every call to it runs the singleton's code.
Only two proxies' runtime codes and the singletons below are trusted, by code hash: code we have read. The
hashes come from the npm packages that publish the Safe deployments:

* singletons: `@safe-global/safe-deployments` (its `codeHash` of each deployment type; the 1.3.0 canonical
  and eip155 deployments of GnosisSafe and GnosisSafeL2 share one hash each), checked against the
  `deployedBytecode` of `@gnosis.pm/safe-contracts` 1.3.0 and `@safe-global/safe-contracts` 1.4.1;
* proxies (the factory deploys them, so the deployments list no hash of their own): the keccak of the
  `deployedBytecode` of GnosisSafeProxy (1.3.0) and SafeProxy (1.4.1) in those two packages.

What such a Safe's code can do with ETH, and the event that says so (docs/detection.md):

* `setup()` runs once, by anyone, while the threshold (slot 4) is 0, with a delegatecall of the caller's
  choosing: a Safe not yet set up is not trusted;
* `receive()` (a call with value and no data, top level or internal) emits `SafeReceived(sender, value)`;
* only `execTransaction` (`ExecutionSuccess`/`ExecutionFailure`, its storage nonce, slot 5, grows by one)
  and `execTransactionFromModule[ReturnData]` (`ExecutionFromModuleSuccess`/`Failure`, possible only while
  a module is enabled: `modules[SENTINEL]` is not SENTINEL) can send ETH out, create a contract (the
  account nonce) or change any storage (the singleton in slot 0 among it). Every other function is
  not payable or pays nothing out, but value can still arrive unannounced: a SELFDESTRUCT's beneficiary,
  a coinbase or withdrawal payment, or the proxy's own payable `masterCopy()` answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

# keccak of each event's signature
SAFE_RECEIVED = "0x3d0ce9bfc3ed7d6862dbb28b2dea94561fe714a1b4d019aa8af39730d1ad7c3d"  # SafeReceived(address,uint256)
EXECUTION_SUCCESS = "0x442e715f626346e8c54381002da614f62bee8d27386535b2521ec8540898556e"  # (bytes32,uint256)
EXECUTION_FAILURE = "0x23428b18acfb3ea64b08dc0c1d296ea9c09702c09083ca5272e64d115b687d23"  # (bytes32,uint256)
MODULE_SUCCESS = "0x6895c13664aa4f67288b25d7a21d7aaa34916e355fb9b6fae0a139a9085becb8"  # ExecutionFromModuleSuccess
MODULE_FAILURE = "0xacd2c8702804128fdb0db2bb49f6d127dd0181c13fd45dbfe16de0930e2bd375"  # ExecutionFromModuleFailure
EVENTS = (SAFE_RECEIVED, EXECUTION_SUCCESS, EXECUTION_FAILURE, MODULE_SUCCESS, MODULE_FAILURE)
EXEC_TRANSACTION = (EXECUTION_SUCCESS, EXECUTION_FAILURE)

SINGLETON_SLOT = "0x0"
THRESHOLD_SLOT = "0x4"  # 0 until setup(), which anyone may call then, with a delegatecall of their choosing
NONCE_SLOT = "0x5"  # the Safe's own transaction nonce (execTransaction), not the account's
# modules[SENTINEL]: keccak(pad32(0x1) . pad32(1)); SENTINEL (0x1) there means no module is enabled
MODULES_SLOT = "0xcc69885fda6bcc1a4ace058b4a62bf5e179ea78fd58a1ccd71c22cc9b688792f"
SENTINEL = 1
STORAGE_SLOTS = (SINGLETON_SLOT, NONCE_SLOT, MODULES_SLOT, THRESHOLD_SLOT)
VERSION_CALL = "0xffa1ad74"  # VERSION()

KNOWN_PROXIES = {
    "0xb89c1b3bdf2cf8827818646bce9a8f6e372885f8c55e5c07acbd307cb133b000": "GnosisSafeProxy 1.3.0",
    "0xd7d408ebcd99b2b70be43e20253d6d92a8ea8fab29bd3be7f55b10032331fb4c": "SafeProxy 1.4.1",
}
KNOWN_SINGLETONS = {
    "0xbba688fbdb21ad2bb58bc320638b43d94e7d100f6f3ebaab0a4e4de6304b1c2e": "1.3.0",  # GnosisSafe
    "0x21842597390c4c6e3c1239e434a682b054bd9548eee5e9b1d6a4482731023c0f": "1.3.0",  # GnosisSafeL2
    "0x1fe2df852ba3299d6534ef416eefa406e56ced995bca886ab7a553e6d0c5e1c4": "1.4.1",  # Safe
    "0xb1f926978a0f44a2c0ec8fe822418ae969bd8c3f18d61e5103100339894f81ff": "1.4.1",  # SafeL2
}


def code_hash(code: str) -> str:
    """keccak256 of runtime code given as 0x hex (eth_utils imported here, where code is hashed: it costs
    every crawler process's start a third of a second otherwise)."""
    from eth_utils import keccak

    return "0x" + keccak(bytes.fromhex(code.removeprefix("0x"))).hex()


def word(value: object) -> int | None:
    """An eth_getStorageAt answer as an integer, or None for anything but a 0x quantity of at most 32 bytes."""
    if not isinstance(value, str) or not value.startswith("0x") or len(value) > 66:
        return None
    try:
        return int(value, 16) if len(value) > 2 else 0
    except ValueError:
        return None


def address_in(value: int) -> str | None:
    """A storage word holding an address (the singleton), lower case; None where the upper bytes are used."""
    return f"0x{value:040x}" if 0 < value < 1 << 160 else None


@dataclass(frozen=True)
class SafeStorage:
    """The Safe's own state at one block: its singleton, its execTransaction nonce, whether a module is enabled,
    whether it was set up (a threshold)."""

    block: int
    singleton: str | None
    nonce: int
    modules: bool
    set_up: bool


def storage_from(block: int, values: Sequence[int | None]) -> SafeStorage | None:
    """The answers to the STORAGE_SLOTS at `block`, or None where one is not a storage word."""
    if len(values) != len(STORAGE_SLOTS) or any(v is None for v in values):
        return None
    singleton, nonce, modules, threshold = (int(v or 0) for v in values)
    return SafeStorage(block, address_in(singleton), nonce, modules not in (0, SENTINEL), threshold > 0)


@dataclass
class SafeEvents:
    """A range's events of the Safe, by block: the ETH its receive() announced, its executions."""

    received: dict[int, int] = field(default_factory=dict)  # block -> wei announced by SafeReceived
    executions: dict[int, int] = field(default_factory=dict)  # block -> execTransaction events
    modules: set[int] = field(default_factory=set)  # blocks with a module's execution

    def executed(self) -> set[int]:
        """The blocks where the Safe's code may have sent value out or changed its storage."""
        return set(self.executions) | self.modules

    def named(self) -> set[int]:
        return set(self.received) | self.executed()


def safe_events(logs: Sequence[object], address: str) -> SafeEvents | None:
    """The Safe's events among `logs` (an eth_getLogs answer for its address); None for one that is not
    its, removed, or malformed (no evidence: the caller reads the range in full)."""
    found = SafeEvents()
    for log in logs:
        if not isinstance(log, dict) or log.get("removed") or str(log.get("address") or "").lower() != address:
            return None
        topics = log.get("topics") or []
        try:
            number = int(str(log.get("blockNumber")), 16)
        except ValueError:
            return None
        topic = str(topics[0]).lower() if topics else ""
        if topic == SAFE_RECEIVED:
            data = str(log.get("data") or "")
            if len(data) != 66 or word(data) is None:
                return None
            found.received[number] = found.received.get(number, 0) + int(data, 16)
        elif topic in EXEC_TRANSACTION:
            found.executions[number] = found.executions.get(number, 0) + 1
        elif topic in (MODULE_SUCCESS, MODULE_FAILURE):
            found.modules.add(number)
        # Any other event of the Safe (owners, threshold, guard changed ...) comes inside an execution.
    return found


def version_from(value: object) -> str | None:
    """The string VERSION() returned (ABI-encoded), or None."""
    if not isinstance(value, str) or not value.startswith("0x"):
        return None
    try:
        raw = bytes.fromhex(value[2:])
        size = int.from_bytes(raw[32:64], "big")
        text = raw[64 : 64 + size].decode("ascii")
    except (ValueError, UnicodeDecodeError):
        return None
    return text if 0 < size <= 16 and text.replace(".", "").isalnum() else None
