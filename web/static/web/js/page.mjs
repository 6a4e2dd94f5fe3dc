// The page's shared ground: its configuration (rendered by the server), the one state object every
// part reads and writes, DOM helpers, the error texts, and render(), which draws every part in order.
import * as api from "./api.mjs";
import * as wallet from "./wallet.mjs";

export const config = JSON.parse(document.getElementById("dws-config").textContent);
export const ETH_PRICE_EVERY_MS = 60_000;
export const CAMPAIGN_EVERY_MS = 10_000; // /donation/data's max-age
// What a chain the wallet is on is called when the page does not offer it.
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
  1337: "a local dev chain (1337)",
};
// The networks the donor may choose (the server's DWS_CHAINS, minus refused ones), the first shown on load.
export const CHAINS = config.chains ?? [];

export const state = {
  campaign: null,
  campaignError: null,
  tokenPrice: null,
  ethPrice: null,
  ethPriceError: null,
  chain: CHAINS[0]?.chain ?? null, // the network shown: where a donation goes (network.mjs changes it)
  asset: "eth",
  amountText: "",
  account: null,
  contractWallet: null, // true: the account is a contract (its signatures are checked by the contract)
  chainId: null, // the wallet's chain, as it last said (eth_chainId, chainChanged); null: not known
  switching: false, // a switch or add request is open in the wallet
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
  // offer: { account, phase, message }; retryHash/retryChain: the donation whose attribution may be asked again
  affiliate: { code: null, message: null, retryHash: null, retryChain: null, offer: null },
};

export const $ = (id) => document.getElementById(id);

export function show(element, visible) {
  element.hidden = !visible;
}

/** Whose donations the page shows: the connected wallet's, else the looked-up address's. */
export function viewedAddress() {
  return state.account ?? state.watched;
}

/** What the page calls the chain a wallet is on: an offered network's label, else its usual name. */
export function chainName(id) {
  return CHAINS.find((c) => c.chainId === id)?.label ?? CHAIN_NAMES[id] ?? `chain id ${id}`;
}

/** What the donor's list calls the chain a donation was sent on (DWS_CHAINS's name). */
export function chainLabel(name) {
  return config.chainLabels?.[name] ?? name;
}

// Where the money goes comes from the page itself (rendered from the server's configuration), never
// from an API response, which a cache or a proxy in between could have altered.

/** The network shown: { chain, chainId, label, devChain, donationAddress, stableCoins, walletRpcUrl }, or
 * null when the server offers none. */
export function selectedChain() {
  return CHAINS.find((c) => c.chain === state.chain) ?? null;
}

/** The sale address on the network shown. */
export function saleAddress() {
  return selectedChain()?.donationAddress ?? null;
}

/** The coins taken on the network shown (none: ETH only). */
export function stableCoins() {
  return selectedChain()?.stableCoins ?? [];
}

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

