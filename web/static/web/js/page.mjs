// The page's shared ground: its configuration (rendered by the server), the one state object every
// part reads and writes, DOM helpers, the error texts, and render(), which draws every part in order.
import * as api from "./api.mjs";
import * as wallet from "./wallet.mjs";

export const config = JSON.parse(document.getElementById("dws-config").textContent);
export const ETH_PRICE_EVERY_MS = 60_000;
const CHAIN_NAMES = {
  1: "Ethereum mainnet",
  10: "OP Mainnet",
  56: "BNB Smart Chain",
  137: "Polygon",
  8453: "Base",
  17000: "Holesky",
  42161: "Arbitrum One",
  11155111: "Sepolia",
  31337: "a local dev chain (anvil)",
};

export const state = {
  campaign: null,
  campaignError: null,
  tokenPrice: null,
  ethPrice: null,
  ethPriceError: null,
  asset: "eth",
  amountText: "",
  account: null,
  contractWallet: null, // true: the account is a contract (its signatures are checked by the contract)
  chainId: null,
  walletMessage: null, // { text, kind } shown under the wallet buttons
  busy: false,
  tx: null, // { hash, phase, blockNumber, message }
  watched: null, // an address looked up read-only (a donor who paid from a phone), when not connected
  paymentUri: null, // the EIP-681 request drawn as the QR code
  user: null,
  donations: [],
  offset: 0,
  userError: null,
  userTimer: null,
  stakeMessage: null,
  affiliate: { code: null, message: null, retryHash: null, offer: null }, // offer: { account, phase, message }
};

export const $ = (id) => document.getElementById(id);

export function show(element, visible) {
  element.hidden = !visible;
}

/** Whose donations the page shows: the connected wallet's, else the looked-up address's. */
export function viewedAddress() {
  return state.account ?? state.watched;
}

export function chainName(id) {
  return CHAIN_NAMES[id] ?? `chain id ${id}`;
}

// Where the money goes comes from the page itself (rendered from the server's configuration), never
// from an API response, which a cache or a proxy in between could have altered.
export const SALE_ADDRESS = config.donationAddress;
export const STABLE_COINS = config.stableCoins ?? [];

let renderers = [];

/** main.mjs names the parts in the order they are drawn. */
export function setRenderers(parts) {
  renderers = parts;
}

export function render() {
  for (const part of renderers) part();
}

export function walletErrorText(error, doing) {
  if (error instanceof wallet.WalletError) {
    if (error.kind === "rejected") return `You rejected the request in your wallet (${doing}). Nothing was sent.`;
    return error.message;
  }
  if (error instanceof api.ApiError) return apiErrorText(error);
  return `Something went wrong while ${doing}: ${error.message ?? error}`;
}

export function apiErrorText(error) {
  if (error.down) return "The sale service is not reachable right now. Please try again in a minute.";
  switch (error.code) {
    case api.ERROR_CODES.signatureRejected:
      return "The service refused the signature (it may have taken too long to approve). Please try again.";
    case api.ERROR_CODES.signatureUnverifiable:
      return "Your wallet contract's signature could not be checked just now (the network did not answer). Nothing was changed: please try again in a minute.";
    case api.ERROR_CODES.rateLimited:
      return "Too many requests: please wait a few seconds and try again.";
    default:
      return `The service refused the request: ${error.message} (error ${error.code}).`;
  }
}

