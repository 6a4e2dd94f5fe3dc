// The donation widget: the wallet connection, the amount and its estimate, sending the donation, and
// following its transaction until the crawlers have it.
import * as chooser from "./chooser.mjs";
import { isTxHash } from "./eth.mjs";
import * as money from "./money.mjs";
import { loadCampaign, loadEthPrice } from "./campaign.mjs";
import { refreshChain } from "./network.mjs";
import {
  $,
  CHAINS,
  chainLabel,
  chainName,
  render,
  saleAddress,
  selectedChain,
  show,
  stableCoins,
  state,
  walletErrorText,
} from "./page.mjs";
import { BLOCK_REPLACED } from "./receipts.mjs";
import { attributeToAffiliate } from "./referrals.mjs";
import { loadUserData } from "./tokens.mjs";
import * as wallet from "./wallet.mjs";

const RECEIPT_EVERY_MS = 3_000;

export async function connect() {
  state.walletMessage = null;
  if (!chooser.anyWallet()) {
    state.walletMessage = { text: "No Ethereum wallet found in this browser. Install one such as MetaMask, then reload this page.", kind: "error" };
    render();
    return;
  }
  if (chooser.needed()) {
    // Several wallets announced themselves (EIP-6963): the donor says which one, then it connects.
    chooser.open();
    render();
    document.querySelector("#wallet-list button")?.focus();
    return;
  }
  state.busy = true;
  render();
  try {
    await setAccount(await wallet.connect());
  } catch (error) {
    state.walletMessage = { text: walletErrorText(error, "connecting"), kind: "error" };
  } finally {
    state.busy = false;
    render();
  }
}

/** The donor picked a wallet in the chooser: connect to that one. */
export function pickWallet(uuid) {
  if (!chooser.pick(uuid)) return;
  state.account = null; // another wallet: its own account, chain and events
  state.chainId = null;
  connect();
}

export async function setAccount(account) {
  if (account) state.watched = null;
  if (account !== state.account) {
    state.account = account;
    state.contractWallet = null;
    state.user = null;
    state.donations = [];
    state.offset = 0;
    state.stakeMessage = null;
  }
  await refreshChain();
  if (account) await detectContractWallet(account);
  render();
  if (account) await loadUserData();
}

/** A Safe or an ERC-4337 account has code; it signs by contract (ERC-1271), which the service checks. */
async function detectContractWallet(account) {
  try {
    const isContract = await wallet.isContract(account);
    if (account === state.account) state.contractWallet = isContract;
  } catch {
    if (account === state.account) state.contractWallet = null; // unknown: say nothing
  }
}

export function selectedCoin() {
  return stableCoins().find((c) => c.asset === state.asset) ?? null;
}

/** True when the API names another donation address for the network shown than the page does (or does not
 * list that network): something in between lies, and nothing is sent. */
export function addressMismatch() {
  const chain = selectedChain();
  if (!state.campaign || !chain) return false;
  const listed = state.campaign.chains.find((c) => c.chain === chain.chain);
  return !listed?.donationAddress || listed.donationAddress.toLowerCase() !== chain.donationAddress.toLowerCase();
}

/** Why the wallet's chain is not the network shown, in words, with what to do about it. */
function wrongChainText(chain, walletChainId) {
  const other = CHAINS.find((c) => c.chainId === walletChainId);
  const orChoose = other ? `, or choose ${other.label} above` : "";
  return `Switch your wallet to ${chain.label}${orChoose}.`;
}

function maxDecimals() {
  return money.inputDecimals(state.asset, selectedCoin()?.decimals ?? 6);
}

export function parsedAmount() {
  return money.parseAmount(state.amountText, maxDecimals());
}

function estimate() {
  const parsed = parsedAmount();
  if (!parsed.amount || !state.tokenPrice) return null;
  if (state.asset === "eth" && !state.ethPrice) return null;
  return money.estimateTokens({
    asset: state.asset,
    amount: parsed.amount,
    ethPrice: state.ethPrice?.price ?? null,
    tokenPrice: state.tokenPrice.price,
  });
}

/** Why Donate is disabled right now, or null when it may be pressed. */
function donateBlocker() {
  if (!state.campaign) {
    return state.campaignError ? "Donating is unavailable while the sale service is unreachable." : "Loading the sale…";
  }
  if (state.campaign.status === "paused") return "The sale is paused: donations are not being accepted right now.";
  if (state.campaign.status === "closed") return "The sale is closed: all tokens have been sold.";
  if (state.campaign.status !== "open") return "The sale is not open.";
  const chain = selectedChain();
  if (!chain) return "No network is taking donations right now.";
  if (state.asset !== "eth" && !selectedCoin()) {
    return `${state.asset.toUpperCase()} donations are not available on ${chain.label}.`;
  }
  if (addressMismatch()) return "The sale address could not be verified. Please reload the page before donating.";
  if (!chooser.anyWallet()) {
    return "No Ethereum wallet found in this browser: pay from a wallet app with the payment request below, or install one such as MetaMask.";
  }
  if (!state.account) return "Connect your wallet to donate.";
  if (state.chainId !== chain.chainId) return `Switch your wallet to ${chain.label} to donate.`;
  const parsed = parsedAmount();
  if (parsed.empty) return "Enter an amount to donate.";
  if (parsed.error) return parsed.error;
  if (!state.tokenPrice) return "The token price is not available yet.";
  if (state.asset === "eth" && !state.ethPrice) return "The ETH price is not available yet, so no estimate can be shown. Please try again shortly.";
  if (state.busy) return "Waiting for your wallet…";
  if (state.switching) return "Waiting for your wallet to switch networks…";
  return null;
}

/**
 * Right before sending: ask the wallet's chain again. A wallet can switch networks without the page hearing
 * of it in time (its chainChanged event comes later, or never); nothing goes out unless it is on `chain`.
 */
async function checkWalletOn(chain) {
  const now = await wallet.chainId();
  state.chainId = now;
  if (now !== chain.chainId) {
    throw new wallet.WalletError(
      "wrong-chain",
      `Nothing was sent: your wallet is now on ${chainName(now)}, not on ${chain.label} (the network shown here). ` +
        wrongChainText(chain, now),
    );
  }
}

export async function donate(event) {
  event.preventDefault();
  if (donateBlocker()) return;
  // The network shown when Donate was pressed: the donation goes there or nowhere.
  const chain = selectedChain();
  state.busy = true;
  state.walletMessage = null;
  render();
  try {
    // The sale may have been paused since the page loaded; the ETH price is refreshed on every ETH donation.
    await loadCampaign({ fresh: true });
    if (state.asset === "eth") await loadEthPrice({ fresh: true });
    await refreshChain();
    state.busy = false;
    const blocker = donateBlocker();
    if (blocker || selectedChain() !== chain) return;
    state.busy = true;
    render();

    const asset = state.asset;
    const amount = parsedAmount().amount;
    const to = chain.donationAddress;
    const from = state.account;
    let hash;
    if (asset === "eth") {
      const wei = money.toBaseUnits(amount, 18);
      const balance = await wallet.ethBalance(from);
      if (balance < wei) throw insufficient("ETH", money.fromBaseUnits(balance, 18));
      await checkWalletOn(chain);
      hash = await wallet.sendEth({ from, to, wei, chainId: chain.chainId });
    } else {
      const coin = selectedCoin();
      const units = money.toBaseUnits(amount, coin.decimals);
      const balance = await wallet.tokenBalance(coin.contract, from);
      if (balance < units) throw insufficient(asset.toUpperCase(), money.fromBaseUnits(balance, coin.decimals));
      await checkWalletOn(chain);
      hash = await wallet.sendToken({ from, contract: coin.contract, to, units, chainId: chain.chainId });
    }
    if (!isTxHash(hash)) throw new Error("the wallet returned no transaction hash");
    state.tx = { hash, chain: chain.chain, chainId: chain.chainId, phase: "sent", blockNumber: null };
    state.amountText = "";
    $("amount").value = "";
    state.busy = false;
    render();
    watchReceipt(hash);
    loadUserData({ fresh: true, toLast: true });
    attributeToAffiliate(hash, chain.chain);
  } catch (error) {
    state.walletMessage = { text: walletErrorText(error, "donating"), kind: "error" };
  } finally {
    state.busy = false;
    render();
  }
}

function insufficient(asset, have) {
  return new wallet.WalletError("insufficient", `Insufficient ${asset} balance: this wallet holds ${money.formatAmount(have)} ${asset}.`);
}

async function watchReceipt(hash) {
  while (state.tx?.hash === hash && state.tx.phase === "sent") {
    // The wallet answers for the chain it is on: while it is on another one, wait for the crawlers instead.
    if (state.chainId !== state.tx.chainId) {
      await new Promise((resolve) => setTimeout(resolve, RECEIPT_EVERY_MS));
      continue;
    }
    try {
      const receipt = await wallet.receipt(hash);
      if (receipt) {
        state.tx.phase = receipt.ok ? "mined" : "reverted";
        state.tx.blockNumber = receipt.blockNumber;
        render();
        if (receipt.ok) loadUserData({ fresh: true, toLast: true });
        return;
      }
    } catch {
      // The wallet's node hiccuped; the next poll asks again.
    }
    await new Promise((resolve) => setTimeout(resolve, RECEIPT_EVERY_MS));
  }
}

export async function copyAddress() {
  const status = $("copy-status");
  try {
    await navigator.clipboard.writeText(saleAddress());
    status.textContent = "Copied.";
  } catch {
    // No clipboard permission (an insecure origin or a locked-down browser): let the donor select it.
    window.getSelection()?.selectAllChildren($("donation-address"));
    status.textContent = "Selected: copy it with your keyboard.";
  }
  show(status, true);
}

const TX_PHASE_TEXT = {
  sent: "Sent: waiting for it to be mined…",
  mined: "Mined in block {block}. Your donation is recorded as pending and is credited when the block is finalized (about 15 minutes).",
  reverted: "The transaction failed on chain (reverted): nothing was donated.",
  unconfirmed: "Recorded, waiting for the block to be finalized.",
  replaced: `Recorded, but ${BLOCK_REPLACED}.`,
  confirmed: "Confirmed: {tokens} $DWS credited.",
  failed: "The donation failed: it is not on the finalized chain.",
};

export function renderWidget() {
  $("token-price").textContent = state.tokenPrice ? money.formatPrice(state.tokenPrice.price) : "–";
  const ethLine = $("eth-price");
  if (state.ethPrice) {
    const at = state.ethPrice.ts ? ` (${state.ethPrice.ts.replace("T", " ").slice(11, 16)} UTC)` : "";
    ethLine.textContent = `1 ETH = ${money.formatUsd(state.ethPrice.price)}${at}`;
  } else {
    ethLine.textContent = state.ethPriceError && !state.ethPriceError.down ? "not available yet" : "–";
  }
  show($("eth-price-line"), state.asset === "eth");

  $("amount-asset").textContent = state.asset.toUpperCase();
  // What to check in the wallet: the recipient for ETH; the token contract and recipient for a coin.
  for (const item of document.querySelectorAll("#wallet-checks li")) show(item, item.dataset.asset === state.asset);

  const parsed = parsedAmount();
  const amountError = $("amount-error");
  show(amountError, Boolean(parsed.error));
  amountError.textContent = parsed.error ?? "";
  const tokens = estimate();
  $("estimate").textContent = tokens ? money.formatNumber(tokens) : "0";

  // wallet
  const connectButton = $("connect");
  connectButton.textContent = state.account ? "Wallet connected" : "Connect wallet";
  connectButton.disabled = Boolean(state.account) || state.busy;
  show($("account-line"), Boolean(state.account));
  $("account-address").textContent = state.account ?? "";
  $("wallet-name").textContent = state.account && chooser.pickedName() ? `(${chooser.pickedName()})` : "";
  show($("wallet-chooser"), chooser.isOpen());
  show($("wallet-kind"), Boolean(state.account) && state.contractWallet === true);
  const network = $("network-status");
  const switchButton = $("switch-network");
  const chain = selectedChain();
  const wrongChain = Boolean(state.account && chain && state.chainId !== null && state.chainId !== chain.chainId);
  if (state.walletMessage) {
    network.textContent = state.walletMessage.text;
    network.dataset.state = state.walletMessage.kind;
  } else if (wrongChain) {
    network.textContent =
      CHAINS.length > 1
        ? `Wrong network: your wallet is on ${chainName(state.chainId)}, and the network shown here is ${chain.label}. ` +
          wrongChainText(chain, state.chainId)
        : `Wrong network: your wallet is on ${chainName(state.chainId)}. Donations are taken on ${chain.label}.`;
    network.dataset.state = "wrong-network";
  } else if (state.account && chain && state.chainId === chain.chainId) {
    network.textContent = chain.devChain
      ? `Connected to ${chain.label} (chain id ${chain.chainId}): a development chain, not real money.`
      : `Connected to ${chain.label}.`;
    network.dataset.state = "ok";
  } else {
    network.textContent = "";
    network.dataset.state = "";
  }
  show(network, Boolean(network.textContent));
  show(switchButton, wrongChain);
  switchButton.disabled = state.switching || state.busy;

  const blocker = donateBlocker();
  const donateButton = $("donate");
  donateButton.disabled = Boolean(blocker);
  donateButton.textContent = state.busy ? "Confirm in your wallet…" : "Donate";
  $("donate-reason").textContent = blocker ?? "";
}

export function renderTx() {
  const box = $("tx");
  show(box, Boolean(state.tx));
  if (!state.tx) return;
  const { hash } = state.tx;
  $("tx-hash").textContent = hash;
  $("tx-chain").textContent = CHAINS.length > 1 ? ` on ${chainLabel(state.tx.chain)}` : "";
  // Once the API has the donation, its status is the truth; before that, the wallet's receipt.
  const recorded = state.donations.find(
    (d) => d.chain === state.tx.chain && d.txHash.toLowerCase() === hash.toLowerCase(),
  );
  const recordedPhase = recorded?.blockReplaced ? "replaced" : recorded?.status;
  const phase = recorded && state.tx.phase !== "reverted" ? recordedPhase : state.tx.phase;
  const text = (TX_PHASE_TEXT[phase] ?? phase)
    .replace("{block}", String(state.tx.blockNumber ?? "?"))
    .replace("{tokens}", recorded ? money.formatNumber(recorded.tokens) : "");
  const status = $("tx-status");
  status.dataset.phase = phase;
  status.textContent = text;
  const affiliate = $("affiliate-status");
  show(affiliate, Boolean(state.affiliate.message));
  affiliate.textContent = state.affiliate.message ?? "";
  show($("affiliate-retry"), Boolean(state.affiliate.retryHash));
}

