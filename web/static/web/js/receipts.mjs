// The donor's receipt: under each donation in "My tokens", its chain, its transaction (linked to the
// block explorer the server names, DWS_EXPLORER_URL), when it was seen and confirmed and in which
// finalized block, the tokens with the rule that gave them (the sale's formulas, see the FAQ), and the
// refund the sale owes for it when it bought nothing ("refund owed", then "refunded" with the transaction).
import * as money from "./money.mjs";
import { chainLabel, config } from "./page.mjs";

/** A pending donation whose block a re-org replaced (the finalized crawler passed it without the donation). */
export const BLOCK_REPLACED = "its block was replaced; waiting to see whether it is mined again";

function when(ts) {
  return `${ts.replace("T", " ").replace("Z", "")} UTC`;
}

/** The explorer's page for `hash` on `chain`, or null when none is configured (or it is not http(s)). */
export function explorerUrl(chain, hash) {
  const template = config.explorers?.[chain];
  if (!template) return null;
  const url = template.replace("{tx}", hash);
  return /^https?:\/\//.test(url) ? url : null;
}

/** How the tokens follow from the donation: tokens = ceiling(amount × ETH price ÷ token price) for ETH,
 * ceiling(amount ÷ token price) for a coin; 0 when the sale had sold out at confirmation. */
export function tokenRule(d) {
  const tokens = `${money.formatNumber(d.tokens)} $DWS`;
  if (d.status === "failed") return "No tokens: the donation failed on chain.";
  const amount = `${money.formatAmount(d.amount)} ${d.asset.toUpperCase()}`;
  const price = `$${money.formatAmount(d.price)} (token price)`;
  if (d.status === "confirmed" && money.lte(d.tokens, "0") && money.isPositive(d.amount)) {
    return `${tokens}: the sale had sold out when it was confirmed (${amount} at ${price}).`;
  }
  const prefix = d.status === "confirmed" ? tokens : `${tokens} once confirmed`;
  if (d.asset === "eth") {
    const ethPrice = d.ethPrice ? ` × $${money.formatAmount(d.ethPrice)} (ETH price)` : " × the ETH price";
    return `${prefix} = ${amount}${ethPrice} ÷ ${price}, rounded up to a whole token.`;
  }
  return `${prefix} = ${amount} ÷ ${price}, rounded up to a whole token.`;
}

/** A link to the explorer's page of `hash` (or the hash itself, when none is configured). */
function txHash(chain, hash) {
  const url = explorerUrl(chain, hash);
  const node = document.createElement(url ? "a" : "code");
  node.textContent = hash;
  if (url) {
    node.className = "tx-link mono";
    node.href = url;
    node.rel = "noopener noreferrer";
    node.target = "_blank";
  }
  return node;
}

/** The refund the sale owes for the donation (the refund register), or null when it owes none. */
export function refundPart(d) {
  if (!d.refund) return null;
  const amount = `${money.formatAmount(d.refund.amount)} ${d.asset.toUpperCase()}`;
  const span = document.createElement("span");
  span.className = `refund refund-${d.refund.status}`;
  if (d.refund.status === "paid" && d.refund.txHash) {
    span.append(`Refunded: ${amount} sent back to you in transaction `, txHash(d.chain, d.refund.txHash));
  } else if (d.refund.status === "owed") {
    span.textContent = `Refund owed: ${amount}, to be sent back to this address from the sale's treasury`;
  } else {
    span.textContent = "No refund: the sale's operator waived it (ask them why)";
  }
  return span;
}

function part(text) {
  const span = document.createElement("span");
  span.textContent = text;
  return span;
}

export function receiptRow(d) {
  const row = document.createElement("tr");
  row.className = "receipt";
  row.dataset.receiptFor = d.txHash;
  const td = document.createElement("td");
  td.colSpan = document.querySelectorAll("#donations thead th").length; // a network column on several chains
  const tx = document.createElement("span");
  tx.append("Transaction ", txHash(d.chain, d.txHash));
  const confirmation =
    d.status === "confirmed"
      ? `Confirmed ${d.confirmedAt ? when(d.confirmedAt) : "(time not recorded)"} in finalized block ${d.blockNumber}`
      : d.status === "failed"
        ? `Failed (block ${d.blockNumber})`
        : d.blockReplaced
          ? `Not confirmed: ${BLOCK_REPLACED} (it was in block ${d.blockNumber})`
          : `Not confirmed yet: block ${d.blockNumber} is not finalized`;
  td.append(
    part(`Chain: ${chainLabel(d.chain)}`),
    tx,
    part(d.seenAt ? `Seen ${when(d.seenAt)}` : "Seen –"),
    part(confirmation),
    part(tokenRule(d)),
  );
  const refund = refundPart(d);
  if (refund) td.append(refund);
  row.append(td);
  return row;
}
