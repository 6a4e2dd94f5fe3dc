"""ETH bridged from L1 through an OP-stack rollup's standard bridge: who sent it, read from the relayed call.

On Base or OP Mainnet, ETH deposited through L1StandardBridge (`depositETH`, `bridgeETHTo`: what bridge UIs
use) arrives as a deposit transaction from the aliased L1CrossDomainMessenger to L2CrossDomainMessenger,
whose `relayMessage` calls L2StandardBridge with

    finalizeBridgeETH(address _from, address _to, uint256 _amount, bytes _extraData)      0x1635f5fd

or, for deposits made through the legacy L1 entry points,

    finalizeDeposit(address _l1Token, address _l2Token, address _from, address _to,       0x662a633a
                    uint256 _amount, bytes _extraData)

with `_l1Token` zero and `_l2Token` the legacy ETH placeholder; the bridge then CALLs `_to` with `_amount`.
The frame that pays `_to` is the bridge's, but the ETH is `_from`'s, the L1 account that bridged it
(`crawlers/decode/frames.py` applies this to the frames). Both contracts are predeploys: the same addresses
on every OP-stack chain, each a proxy running its implementation by DELEGATECALL with the same calldata.
Nothing runs at these addresses on a chain that is not an OP-stack rollup (no key and no CREATE reaches
them), so the rule needs no chain type.

`relayed_eth` reads the calldata and answers only what decodes cleanly (the selector, every address word
with its 12 high bytes zero, the dynamic `bytes` inside the data); anything else is None, and the frame keeps
its own sender as the donor, as before. Pure: strings in, a value out, never an exception.
"""

from __future__ import annotations

from dataclasses import dataclass

L2_CROSS_DOMAIN_MESSENGER = "0x4200000000000000000000000000000000000007"
L2_STANDARD_BRIDGE = "0x4200000000000000000000000000000000000010"
LEGACY_ERC20_ETH = "0xdeaddeaddeaddeaddeaddeaddeaddeaddead0000"  # the ETH placeholder token of finalizeDeposit
FINALIZE_BRIDGE_ETH = "1635f5fd"  # finalizeBridgeETH(address,address,uint256,bytes)
FINALIZE_DEPOSIT = "662a633a"  # finalizeDeposit(address,address,address,address,uint256,bytes)

_WORD = 64  # hex digits in an ABI word
_HEX = frozenset("0123456789abcdefABCDEF")


@dataclass(frozen=True)
class RelayedEth:
    """What a relayed finalize call says: `sender` (`_from`) bridged `wei` (`_amount`) to `recipient` (`_to`)."""

    sender: str
    recipient: str
    wei: int


def _address(word: str) -> str | None:
    """An ABI-encoded address, lower case; None when its 12 high bytes are not zero (not an address)."""
    return "0x" + word[24:].lower() if word[:24] == "0" * 24 else None


def _bytes_inside(args: str, offset_word: str) -> bool:
    """Whether the dynamic `bytes` argument an offset word points to (its length word and its data) lies
    inside the arguments: a call the bridge's ABI decoder accepted has it so."""
    offset = int(offset_word, 16)
    size = len(args) // 2
    if offset % 32 or offset + 32 > size:
        return False
    length = int(args[2 * offset : 2 * offset + _WORD], 16)
    return offset + 32 + length <= size


def relayed_eth(calldata: object) -> RelayedEth | None:
    """The ETH deposit a `finalizeBridgeETH` or ETH `finalizeDeposit` call finalizes, or None: another call,
    another token, or calldata that does not decode cleanly."""
    if not isinstance(calldata, str) or not calldata.startswith("0x") or len(calldata) % 2:
        return None
    if not _HEX.issuperset(calldata[2:]):
        return None
    selector, args = calldata[2:10].lower(), calldata[10:]
    words = [args[i : i + _WORD] for i in range(0, len(args) - _WORD + 1, _WORD)]
    if selector == FINALIZE_BRIDGE_ETH and len(words) >= 4:
        sender, recipient, amount, data = words[0], words[1], words[2], words[3]
    elif selector == FINALIZE_DEPOSIT and len(words) >= 6:
        if _address(words[0]) != "0x" + "0" * 40 or _address(words[1]) != LEGACY_ERC20_ETH:
            return None  # an ERC-20 deposit: no ETH moves with it
        sender, recipient, amount, data = words[2], words[3], words[4], words[5]
    else:
        return None
    from_, to = _address(sender), _address(recipient)
    if from_ is None or to is None or not _bytes_inside(args, data):
        return None
    return RelayedEth(from_, to, int(amount, 16))
