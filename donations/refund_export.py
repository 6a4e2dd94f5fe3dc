"""Paying owed refunds from the treasury, which dws never holds a key to: the batch the treasury signs.

* a Safe: a Safe Transaction Builder batch file (its published JSON: `version`, `chainId`, `createdAt`,
  `meta` with the Safe's address and the file's checksum, `transactions` of `to`/`value`/`data`), one per
  chain: ETH as a plain value transfer, a token as its `transfer(address,uint256)` call. The Safe's owners
  load it in the Transaction Builder app, which executes it as one MultiSend transaction;
* an externally owned account: a CSV with an EIP-681 payment link per refund, one transaction each.

The finalized crawler then sees each transfer leave the donation address and marks its row paid
(donations/refunds.py `refund_payouts_record`); the treasury is the donation address of the chain.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from donations.refund_models import Refund
from donations.refund_values import amount_text
from dws_project.chain_settings import ChainSettings
from dws_project.config_values import checksum_address
from dws_project.keccak import keccak256

BATCH_VERSION = "1.0"
TX_BUILDER_VERSION = "1.18.0"  # the Transaction Builder release whose file format this writes
TRANSFER = bytes.fromhex("a9059cbb")  # transfer(address,uint256)


def transfer_calldata(recipient: str, raw: int) -> str:
    """An ERC-20 `transfer(recipient, raw)` call."""
    return "0x" + (TRANSFER + bytes(12) + bytes.fromhex(recipient[2:]) + raw.to_bytes(32, "big")).hex()


def batch_transaction(refund: Refund) -> dict[str, str]:
    """One refund as a Transaction Builder transaction: ETH to the donor, or the token's transfer call."""
    if not refund.contract:
        return {"to": checksum_address(refund.donor), "value": str(refund.amount_raw), "data": "0x"}
    return {
        "to": checksum_address(refund.contract),
        "value": "0",
        "data": transfer_calldata(refund.donor, refund.amount_raw),
    }


def _serialized(value: Any) -> str:
    """The Transaction Builder's checksum serialization (apps/tx-builder's `serializeJSONObject`): an object
    is `{` + its sorted keys as a JSON array + each value followed by a comma + `}`."""
    if isinstance(value, list):
        return "[" + ",".join(_serialized(item) for item in value) + "]"
    if isinstance(value, dict):
        keys = sorted(value)
        return (
            "{"
            + json.dumps(keys, separators=(",", ":"), ensure_ascii=False)
            + "".join(_serialized(value[key]) + "," for key in keys)
            + "}"
        )
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def batch_checksum(batch: dict[str, Any]) -> str:
    """`meta.checksum` as the Transaction Builder checks it on import: keccak-256 of the file serialized
    with `meta.name` null and without the checksum itself."""
    meta = {k: v for k, v in batch["meta"].items() if k != "checksum"} | {"name": None}
    return "0x" + keccak256(_serialized({**batch, "meta": meta}).encode()).hex()


def safe_batch(chain: ChainSettings, refunds: Sequence[Refund], *, created_at: datetime) -> dict[str, Any]:
    """The Safe Transaction Builder file paying `refunds` (all of `chain`) from its donation address."""
    if any(r.chain != chain.name for r in refunds):
        raise ValueError(f"a Safe batch pays refunds of one chain ({chain.name})")
    ids = ", ".join(str(r.pk) for r in refunds)
    batch: dict[str, Any] = {
        "version": BATCH_VERSION,
        "chainId": str(chain.chain_id),
        "createdAt": int(created_at.timestamp() * 1000),
        "meta": {
            "name": f"dws refunds, {chain.display_label}",
            "description": f"{len(refunds)} refund(s) owed in the dws refund register: ids {ids}",
            "txBuilderVersion": TX_BUILDER_VERSION,
            "createdFromSafeAddress": checksum_address(chain.donation_address),
            "createdFromOwnerAddress": "",
        },
        "transactions": [batch_transaction(r) for r in refunds],
    }
    batch["meta"]["checksum"] = batch_checksum(batch)
    return batch


def eip681_link(chain: ChainSettings, refund: Refund) -> str:
    """An EIP-681 payment request for one refund: a wallet opening it prepares the transfer on the right
    chain (ETH: the value in wei; a token: its transfer call)."""
    if not refund.contract:
        return f"ethereum:{checksum_address(refund.donor)}@{chain.chain_id}?value={refund.amount_raw}"
    return (
        f"ethereum:{checksum_address(refund.contract)}@{chain.chain_id}/transfer"
        f"?address={checksum_address(refund.donor)}&uint256={refund.amount_raw}"
    )


CSV_COLUMNS = (
    "refund_id",
    "chain",
    "chain_id",
    "from",
    "to",
    "asset",
    "contract",
    "decimals",
    "amount",
    "amount_raw",
    "reason",
    "source_tx_hash",
    "eip681",
)


def eoa_csv(chains: dict[str, ChainSettings], refunds: Sequence[Refund]) -> str:
    """A CSV of `refunds` (any chains) for an externally owned treasury: one line and one EIP-681 link each,
    paid one transaction at a time from the chain's donation address."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for refund in refunds:
        chain = chains[refund.chain]
        writer.writerow(
            (
                refund.pk,
                refund.chain,
                chain.chain_id,
                checksum_address(chain.donation_address),
                checksum_address(refund.donor),
                refund.asset,
                checksum_address(refund.contract) if refund.contract else "",
                refund.decimals,
                amount_text(refund.amount),
                refund.amount_raw,
                refund.reason,
                refund.source_tx_hash,
                eip681_link(chain, refund),
            )
        )
    return out.getvalue()
