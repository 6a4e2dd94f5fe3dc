// The donor's wallet through EIP-1193: the one the donor picked among those announced by EIP-6963
// (discovery.mjs), else `window.ethereum` (MetaMask and the like). The page never holds a key: it asks
// the wallet for the account, for signatures and to send transactions.
import { chainIdHex, erc20BalanceOfData, erc20TransferData, fromQuantity, hasCode, toQuantity, utf8ToHex } from "./eth.mjs";

/** Why a wallet call failed, in the terms the page shows. */
export class WalletError extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind; // "no-wallet" | "rejected" | "insufficient" | "unknown-chain" | "wrong-chain" | "busy" | "failed"
  }
}

let chosen = null; // an EIP-1193 provider picked through EIP-6963, or null for window.ethereum
let events = null; // the page's { accountsChanged, chainChanged } handlers
let subscribed = null; // [provider, its two listeners] the handlers are attached to

export function injectedProvider() {
  return typeof window !== "undefined" && window.ethereum && typeof window.ethereum.request === "function"
    ? window.ethereum
    : null;
}

export function provider() {
  return chosen ?? injectedProvider();
}

/** Talk to this EIP-1193 provider from now on (null: back to window.ethereum); events follow it. */
export function useProvider(eip1193) {
  chosen = eip1193;
  subscribe();
}

/** Map an EIP-1193 / JSON-RPC error to a WalletError the page can explain. */
export function classify(error) {
  if (error instanceof WalletError) return error;
  const code = error?.code ?? error?.data?.code;
  const text = String(error?.message ?? error?.data?.message ?? error ?? "");
  if (code === 4001 || code === "ACTION_REJECTED") return new WalletError("rejected", "You rejected the request in your wallet.");
  // EIP-3326's "chain not added"; some wallets wrap it in an internal error (-32603) or only say it in words.
  if (code === 4902 || error?.data?.originalError?.code === 4902 || (code === -32603 && /unrecognized chain/i.test(text))) {
    return new WalletError("unknown-chain", "Your wallet does not know this network yet.");
  }
  if (code === -32002) return new WalletError("busy", "Your wallet already has a request open: look at its window.");
  if (/insufficient funds|exceeds balance|insufficient balance/i.test(text)) {
    return new WalletError("insufficient", "Insufficient balance for this donation and its network fee.");
  }
  return new WalletError("failed", `The wallet reported an error: ${text.slice(0, 200) || "unknown error"}`);
}

async function call(method, params = []) {
  const eth = provider();
  if (!eth) throw new WalletError("no-wallet", "No Ethereum wallet found in this browser.");
  try {
    return await eth.request({ method, params });
  } catch (error) {
    throw classify(error);
  }
}

/** Ask the wallet for access; returns the selected account, lower case. */
export async function connect() {
  const accounts = await call("eth_requestAccounts");
  if (!Array.isArray(accounts) || accounts.length === 0) throw new WalletError("rejected", "The wallet shared no account.");
  return accounts[0].toLowerCase();
}

/** The account already shared with this site, without prompting; null if none. */
export async function connectedAccount() {
  if (!provider()) return null;
  const accounts = await call("eth_accounts");
  return Array.isArray(accounts) && accounts.length ? accounts[0].toLowerCase() : null;
}

/** The chain the wallet is on now; a WalletError when its answer is not a chain id. */
export async function chainId() {
  return readChainId(await call("eth_chainId"));
}

/** A chain id as a wallet gives it (hex quantity); anything else is refused rather than guessed at. */
export function readChainId(value) {
  let id;
  try {
    id = Number(fromQuantity(value));
  } catch {
    id = NaN;
  }
  if (!Number.isSafeInteger(id) || id <= 0) {
    throw new WalletError("failed", `The wallet reported a chain id that is not one (${String(value).slice(0, 40)}).`);
  }
  return id;
}

/** EIP-3326: ask the wallet to switch to chain `id` (error kind "unknown-chain" when it lacks it). */
export async function switchChain(id) {
  await call("wallet_switchEthereumChain", [{ chainId: chainIdHex(id) }]);
}

/** EIP-3085: ask the wallet to add a chain (`addChainParams` builds the request from the server's settings). */
export async function addChain(params) {
  await call("wallet_addEthereumChain", [params]);
}

/** personal_sign of a UTF-8 message by `address`; returns the 0x signature. */
export async function personalSign(address, message) {
  return call("personal_sign", [utf8ToHex(message), address]);
}

/** Whether `address` is a contract wallet (code at the latest block), asked through the wallet's provider. */
export async function isContract(address) {
  return hasCode(await call("eth_getCode", [address, "latest"]));
}

export async function ethBalance(address) {
  return fromQuantity(await call("eth_getBalance", [address, "latest"]));
}

export async function tokenBalance(contract, address) {
  return fromQuantity(await call("eth_call", [{ to: contract, data: erc20BalanceOfData(address) }, "latest"]));
}

// Each transaction names the chain it is meant for: a wallet that is on another one by then refuses it
// (MetaMask checks the field against its network) instead of sending the donation elsewhere.

/** Send `wei` to `to` on chain `chainId`; returns the transaction hash. */
export async function sendEth({ from, to, wei, chainId: id }) {
  return call("eth_sendTransaction", [{ from, to, value: toQuantity(wei), chainId: chainIdHex(id) }]);
}

/** ERC-20 transfer of `units` (the coin's base units) to `to` on chain `chainId`; returns the transaction hash. */
export async function sendToken({ from, contract, to, units, chainId: id }) {
  return call("eth_sendTransaction", [
    { from, to: contract, value: "0x0", data: erc20TransferData(to, units), chainId: chainIdHex(id) },
  ]);
}

/** The receipt's outcome: null while pending, else { ok, blockNumber }. */
export async function receipt(txHash) {
  const r = await call("eth_getTransactionReceipt", [txHash]);
  if (!r) return null;
  return { ok: fromQuantity(r.status ?? "0x1") === 1n, blockNumber: Number(fromQuantity(r.blockNumber)) };
}

/** Subscribe to account and network changes; returns nothing (the page lives as long as the tab). */
export function onChange({ accountsChanged, chainChanged }) {
  events = { accountsChanged, chainChanged };
  subscribe();
}

function subscribe() {
  const eth = provider();
  if (subscribed && subscribed[0] === eth) return;
  if (subscribed && typeof subscribed[0].removeListener === "function") {
    subscribed[0].removeListener("accountsChanged", subscribed[1]);
    subscribed[0].removeListener("chainChanged", subscribed[2]);
  }
  subscribed = null;
  if (!events || !eth || typeof eth.on !== "function") return;
  const onAccounts = (accounts) => events.accountsChanged(accounts?.[0]?.toLowerCase() ?? null);
  const onChain = (id) => {
    let chain = null; // a chain id that is not one: the chain is unknown until the wallet says again
    try {
      chain = readChainId(id);
    } catch {
      chain = null;
    }
    events.chainChanged(chain);
  };
  eth.on("accountsChanged", onAccounts);
  eth.on("chainChanged", onChain);
  subscribed = [eth, onAccounts, onChain];
}
