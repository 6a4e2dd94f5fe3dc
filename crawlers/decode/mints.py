"""A coin minted to the donation address: whose it is (the one mint rule; DESIGN "Crediting").

A Transfer from the zero address has no sender to credit, but a bridge's mint often names one. Circle's
CCTP does: a depositor burns USDC on one chain (`depositForBurn`), and whoever relays the attested message
calls `MessageTransmitter.receiveMessage(message, attestation)` on ours, which mints to the burn message's
`mintRecipient` and then emits `MessageReceived(..., messageBody)`. The burn message in that body names the
depositor (`messageSender`, the account that burnt on the source chain), whoever relayed it. So:

* a mint of a configured coin to the donation address, followed in its transaction's logs by a
  `MessageReceived` event of a known CCTP MessageTransmitter (v1 or v2) -- the first such event after
  it, the one the minting call emits, with no other mint to the address between them -- sent by a source
  domain's TokenMessenger (a burn message; anyone can send a CCTP message of their own, with any body),
  whose burn message names the donation address as `mintRecipient` and exactly the minted amount (v2:
  `amount - feeExecuted`), is the depositor's: a donation from `messageSender`, credited like any other on
  this chain (its identity stays the Transfer log's). One message names the depositor of one mint, the
  one just before it: in Circle's receiveMessage nothing but the mint's own events (and v2's fee mint to
  another recipient) comes between the mint and its MessageReceived, so a mint further back in the same
  transaction (a stranger's batch: another minter's coins, then his own claim) is not that message's;
* the depositor being the donation address itself (the sale moving its own USDC between chains) makes it
  the address's own money, a movement `bridged by the address`; so does a mint in a transaction the
  address signed or called out in (crawlers/decode/transfers.py, crawlers/scan/own.py);
* any other mint (an unknown bridge, a message we cannot read, a transmitter we do not know) is an open
  question: an unexplained inflow the operator credits or dismisses, never closed silently.

Message layouts (Circle's evm-cctp-contracts, `Message` / `MessageV2`, `BurnMessage` / `BurnMessageV2`):
the event carries only the body. Burn message body, both versions: version uint32 at 0, burnToken bytes32
at 4, mintRecipient bytes32 at 36, amount uint256 at 68, messageSender bytes32 at 100 (v1: exactly 132
bytes); v2 adds maxFee at 132, feeExecuted at 164, expirationBlock at 196 and hookData from 228. A
bytes32 address must have its high 12 bytes zero. The events (non-indexed data ABI-encoded):
v1 `MessageReceived(address indexed caller, uint32 sourceDomain, uint64 indexed nonce, bytes32 sender,
bytes messageBody)`, v2 `MessageReceived(address indexed caller, uint32 sourceDomain, bytes32 indexed
nonce, bytes32 sender, uint32 indexed finalityThresholdExecuted, bytes messageBody)`: data is
(sourceDomain, sender, offset, length, body) either way. `sender` is who sent the message on the source domain: for
a burn, that domain's TokenMessenger (`CCTP_TOKEN_MESSENGERS`; a domain not listed there leaves its
deposits open questions for the operator, never credited to whom a body names).

The public verifier (deploy/verify_proof.py) applies the same rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from crawlers.chain.calls import TRANSFER_TOPIC
from crawlers.decode.amounts import log_amount

# Circle's CCTP MessageTransmitter contracts (lower case): v1 per chain, v2 at one address on every EVM chain
# (mainnets and testnets). A mint beside an event of any other contract is not read as CCTP.
CCTP_TRANSMITTERS = frozenset(
    {
        "0x0a992d191deec32afe36203ad87d7d289a738f81",  # v1 Ethereum
        "0x8186359af5f57fbb40c6b14a588d2a59c0c29880",  # v1 Avalanche
        "0x4d41f22c5a0e5c74090899e5a8fb597a8842b3e8",  # v1 OP Mainnet
        "0xc30362313fbba5cf9163f0bb16a0e01f01a896ca",  # v1 Arbitrum
        "0xad09780d193884d503182ad4588450c416d6f9d4",  # v1 Base
        "0xf3be9355363857f3e001be68856a2f96b4c39ba9",  # v1 Polygon PoS
        "0x7865fafc2db2093669d92c0f33aeef291086befd",  # v1 Sepolia, Base Sepolia, OP Sepolia
        "0xacf1ceef35caac005e15888ddb8a3515c41b4872",  # v1 Arbitrum Sepolia
        "0x81d40f21f12a8f0e3252bccb954d722d4c464b64",  # v2, every mainnet
        "0xe737e5cebeeba77efe34d4aa090756590b1ce275",  # v2, every testnet
    }
)
# Who sends a burn message (the MessageReceived event's `sender`, bytes32): each source domain's Circle
# TokenMessenger, v1 per chain (EVM addresses left-padded; Solana's TokenMessengerMinter program), v2 at one
# address on every EVM chain (Solana's v2 program). Any other sender's message is not a burn, whatever its body.
CCTP_TOKEN_MESSENGERS = {
    False: frozenset(
        {
            "0x000000000000000000000000bd3fa81b58ba92a82136038b25adec7066af3155",  # v1 Ethereum
            "0x0000000000000000000000006b25532e1060ce10cc3b0a99e5683b91bfde6982",  # v1 Avalanche
            "0x0000000000000000000000002b4069517957735be00cee0fadae88a26365528f",  # v1 OP Mainnet
            "0x00000000000000000000000019330d10d9cc8751218eaf51e8885d058642e08a",  # v1 Arbitrum
            "0x0000000000000000000000001682ae6375c4e4a97e4b583bc394c861a46d8962",  # v1 Base
            "0x0000000000000000000000009daf8c91aefae50b9c0e69629d3f6ca40ca3b3fe",  # v1 Polygon PoS
            "0x0000000000000000000000004e744b28e787c3ad0e810ed65a24461d4ac5a762",  # v1 Unichain
            "0x0000000000000000000000009f3b8679c73c2fef8b59b4f3444d4e156fb70aa5",  # v1 Sepolia and its rollups
            "0xa65fc943419a5ad590042fd67c9791fd015acf53a54cc823edb8ff81b9ed722e",  # v1 Solana (CCTPiPYP...)
        }
    ),
    True: frozenset(
        {
            "0x00000000000000000000000028b5a0e9c621a5badaa536219b3a228c8168cf5d",  # v2, every EVM mainnet
            "0x0000000000000000000000008fe6b999dc680ccfdd5bf7eb0974218be2542daa",  # v2, every EVM testnet
            "0xa65fc81d0fefa8860cb3b83f089b0224be8a6687b7ae49f594c0b9b4d7e93893",  # v2 Solana (CCTPV2vP...)
        }
    ),
}
MESSAGE_RECEIVED_V1 = "0x58200b4c34ae05ee816d710053fff3fb75af4395915d3d2a771b24aa10e3cc5d"
MESSAGE_RECEIVED_V2 = "0xff48c13eda96b1cceacc6b9edeedc9e9db9d6226afbc30146b720c19d3addb1c"
_V1_BODY = 132
_V2_BODY_MIN = 228


@dataclass(frozen=True)
class BurnMessage:
    """What a CCTP burn message says about a mint: to whom, how much arrives there, and who burnt."""

    mint_recipient: str
    minted: int  # what the recipient receives: the amount, less the fee executed (v2)
    depositor: str  # messageSender, the account that burnt on the source chain


def _word(data: bytes, at: int) -> int:
    return int.from_bytes(data[at : at + 32], "big")


def _address(data: bytes, at: int) -> str | None:
    word = data[at : at + 32]
    if len(word) != 32 or any(word[:12]):
        return None
    return "0x" + word[12:].hex()


def burn_message(body: bytes, *, v2: bool) -> BurnMessage | None:
    """The burn message in a MessageReceived body, or None when it is not one in that version's layout."""
    if (not v2 and len(body) != _V1_BODY) or (v2 and len(body) < _V2_BODY_MIN):
        return None
    if int.from_bytes(body[:4], "big") != (1 if v2 else 0):
        return None
    recipient, depositor = _address(body, 36), _address(body, 100)
    amount, fee = _word(body, 68), _word(body, 164) if v2 else 0
    if recipient is None or depositor is None or fee > amount:
        return None
    return BurnMessage(recipient, amount - fee, depositor)


def _received_body(log: dict) -> BurnMessage | None:
    """The burn message of a known transmitter's MessageReceived event sent by a TokenMessenger, or None."""
    topics = [str(t).lower() for t in log.get("topics") or []]
    if str(log.get("address") or "").lower() not in CCTP_TRANSMITTERS or not topics or log.get("removed"):
        return None
    if topics[0] not in (MESSAGE_RECEIVED_V1, MESSAGE_RECEIVED_V2):
        return None
    v2 = topics[0] == MESSAGE_RECEIVED_V2
    try:
        data = bytes.fromhex(str(log.get("data") or "0x")[2:])
    except ValueError:
        return None
    if "0x" + data[32:64].hex() not in CCTP_TOKEN_MESSENGERS[v2]:
        return None  # a message of someone's own (sendMessage), not a burn: its body proves nothing
    offset = _word(data, 64)
    length = _word(data, offset) if offset + 32 <= len(data) else -1
    if length < 0 or offset + 32 + length > len(data):
        return None
    return burn_message(data[offset + 32 : offset + 32 + length], v2=v2)


def _mints_to(log: dict, recipient: str) -> bool:
    """`log` is a Transfer from the zero address to `recipient` (of any contract)."""
    topics = [str(t).lower() for t in log.get("topics") or []]
    return (
        len(topics) == 3
        and topics[0] == TRANSFER_TOPIC
        and topics[1] == "0x" + "0" * 64
        and topics[2][-40:] == recipient[2:]
        and not log.get("removed")
    )


def _index(log: dict) -> int:
    value = log.get("logIndex")
    try:
        return int(value, 16) if isinstance(value, str) else -1
    except ValueError:
        return -1


def mint_depositor(mint: dict, transaction_logs: Iterable[dict], recipient: str) -> str | None:
    """Who deposited the coin `mint` (a Transfer log from the zero address to `recipient`) brought: the
    `messageSender` of the CCTP burn message that minted it, read from the first MessageReceived event of a
    known transmitter after it in its transaction's logs (`transaction_logs`, its receipt's); None when
    there is none, another mint to `recipient` comes first (the message is that one's), or it is not a
    TokenMessenger's burn naming `recipient` and exactly the minted amount."""
    tx = str(mint.get("transactionHash") or "").lower()
    after = _index(mint)
    if after < 0:
        return None
    following = sorted(
        (
            log
            for log in transaction_logs
            if str(log.get("transactionHash") or "").lower() == tx and _index(log) > after
        ),
        key=_index,
    )
    for log in following:
        if _mints_to(log, recipient):
            return None  # a mint nearer the next message: that message, if any, is this one's
        topics = [str(t).lower() for t in log.get("topics") or []]
        if str(log.get("address") or "").lower() not in CCTP_TRANSMITTERS or not topics:
            continue
        if topics[0] not in (MESSAGE_RECEIVED_V1, MESSAGE_RECEIVED_V2):
            continue
        burn = _received_body(log)
        if burn is None or burn.mint_recipient != recipient or burn.minted != log_amount(mint):
            return None
        return burn.depositor
    return None


def mint_depositors(
    mints: Sequence[dict], logs_by_transaction: dict[str, list[dict]], recipient: str
) -> dict[tuple[str, int], str]:
    """`mint_depositor` for each mint whose transaction's logs are known, by (tx hash, log index)."""
    found = {}
    for mint in mints:
        tx = str(mint.get("transactionHash") or "").lower()
        depositor = mint_depositor(mint, logs_by_transaction.get(tx, ()), recipient)
        if depositor is not None:
            found[(tx, _index(mint))] = depositor
    return found
