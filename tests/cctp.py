"""Circle's CCTP on the test chain: tests/contracts/CctpTransmitterStandIn.sol installed at Circle's own
MessageTransmitter addresses (v1 Ethereum's, v2's), minting a configured coin, and the messages it takes
(the layouts of Circle's Message / MessageV2 and BurnMessage / BurnMessageV2)."""

from __future__ import annotations

from typing import Any

from eth_abi import encode

from tests.chain import Anvil, selector

V1_TRANSMITTER = "0x0a992d191deec32afe36203ad87d7d289a738f81"
V2_TRANSMITTER = "0x81d40f21f12a8f0e3252bccb954d722d4c464b64"
SOURCE_DOMAIN = 6  # Base, say: where the depositor burnt
# Who sends a burn message on the source domain: its TokenMessenger (v1: Base's; v2: one address everywhere).
# Anyone can send a CCTP message of their own with any body (sendMessage); only these send burns.
V1_TOKEN_MESSENGER = "0x1682ae6375c4e4a97e4b583bc394c861a46d8962"
V2_TOKEN_MESSENGER = "0x28b5a0e9c621a5badaa536219b3a228c8168cf5d"


def install_transmitters(anvil: Anvil, coin: str) -> None:
    """The stand-in's code at both of Circle's transmitter addresses, each minting `coin`."""
    template = anvil.deploy("CctpTransmitterStandIn")
    code = anvil.rpc("eth_getCode", template, "latest")
    for address in (V1_TRANSMITTER, V2_TRANSMITTER):
        anvil.set_code(address, code)
        anvil.rpc("anvil_setStorageAt", address, "0x0", "0x" + coin[2:].rjust(64, "0"))


def word(value: int | str) -> bytes:
    if isinstance(value, str):
        return bytes.fromhex(value[2:].rjust(64, "0"))
    return value.to_bytes(32, "big")


def burn_message(*, v2: bool, recipient: str, amount: int, depositor: str, fee: int = 0) -> bytes:
    body = (1 if v2 else 0).to_bytes(4, "big") + word("0x" + "ab" * 20) + word(recipient) + word(amount)
    body += word(depositor)
    if v2:
        body += word(fee + 1) + word(fee) + word(0)  # maxFee, feeExecuted, expirationBlock; no hook data
    return body


def message(body: bytes, *, v2: bool, nonce: int = 7, sender: str | None = None) -> bytes:
    """A CCTP message carrying `body`, sent by the source domain's TokenMessenger (a burn) unless `sender`
    names another (a message anyone sends, whatever its body says)."""
    sender = sender or (V2_TOKEN_MESSENGER if v2 else V1_TOKEN_MESSENGER)
    head = (1 if v2 else 0).to_bytes(4, "big") + SOURCE_DOMAIN.to_bytes(4, "big") + (0).to_bytes(4, "big")
    head += word(nonce) if v2 else nonce.to_bytes(8, "big")
    head += word(sender) + word("0x" + "ef" * 20) + word(0)  # sender, recipient, destinationCaller
    if v2:
        head += (1000).to_bytes(4, "big") + (2000).to_bytes(4, "big")  # finality thresholds
    return head + body


def receive_call(
    *, v2: bool, recipient: str, amount: int, depositor: str, fee: int = 0, sender: str | None = None
) -> dict[str, Any]:
    """The call that relays a burn of `amount` by `depositor` to `recipient`: receiveMessage(message,
    attestation) to the version's transmitter (`to`, `data`); `sender`: see `message`."""
    body = burn_message(v2=v2, recipient=recipient, amount=amount, depositor=depositor, fee=fee)
    args = [message(body, v2=v2, sender=sender), b"\x01" * 65]
    data = "0x" + (selector("receiveMessage(bytes,bytes)") + encode(["bytes", "bytes"], args)).hex()
    return {"to": V2_TRANSMITTER if v2 else V1_TRANSMITTER, "data": data}


def receive(anvil: Anvil, caller: str, *, v2: bool, recipient: str, amount: int, depositor: str, fee: int = 0) -> str:
    """`caller` relays a burn of `amount` by `depositor` to `recipient` (`receive_call`)."""
    call = receive_call(v2=v2, recipient=recipient, amount=amount, depositor=depositor, fee=fee)
    return anvil.send({"from": caller, **call, "gas": hex(300_000)})
