// Paying from a phone: a browser without a wallet gets the EIP-681 request for the typed amount, drawn
// as a QR code and given as a link a wallet app opens (payment.mjs builds and draws it).
import * as chooser from "./chooser.mjs";
import * as money from "./money.mjs";
import { $, selectedChain, show, state } from "./page.mjs";
import { drawQr, paymentUri } from "./payment.mjs";
import { addressMismatch, parsedAmount, selectedCoin } from "./widget.mjs";

/** The request for the amount typed now, or null (no valid amount, or the coin is not offered). */
function currentRequest() {
  const parsed = parsedAmount();
  const coin = selectedCoin();
  const chain = selectedChain(); // the network shown: its chain id, address and coin contracts
  if (!parsed.amount || !chain || (state.asset !== "eth" && !coin)) return null;
  return {
    amount: parsed.amount,
    uri: paymentUri({
      chainId: chain.chainId,
      saleAddress: chain.donationAddress,
      coinContract: state.asset === "eth" ? null : coin.contract,
      units: money.toBaseUnits(parsed.amount, state.asset === "eth" ? 18 : coin.decimals),
    }),
  };
}

export function renderPaymentRequest() {
  const box = $("pay-request");
  // Only while the sale takes donations and the page's address is the API's.
  show(box, !chooser.anyWallet() && state.campaign?.status === "open" && !addressMismatch());
  if (box.hidden) return;
  const request = currentRequest();
  show($("pay-hint"), !request);
  show($("pay-code"), Boolean(request));
  if (!request || request.uri === state.paymentUri) return;
  state.paymentUri = request.uri;
  drawQr($("pay-qr"), request.uri);
  $("pay-link").href = request.uri;
  $("pay-amount").textContent = `${money.formatAmount(request.amount)} ${state.asset.toUpperCase()}`;
}
