// The donation page: state, refresh rules, and rendering. Data comes from api.mjs (the only module
// that knows the API's field names), the wallet from wallet.mjs, every amount goes through money.mjs.
//
// Refresh rules (the sale's specification): the token price on load; the ETH price on load, every
// minute and when Donate is pressed for ETH; the donor's data on load (wallet already connected),
// on connect and on Donate.
import * as api from "./api.mjs";
import { isTxHash, shortHex } from "./eth.mjs";
import * as money from "./money.mjs";
import * as wallet from "./wallet.mjs";

const config = JSON.parse(document.getElementById("dws-config").textContent);
const ETH_PRICE_EVERY_MS = 60_000;
const RECEIPT_EVERY_MS = 3_000;
const PENDING_DONATIONS_EVERY_MS = (config.pendingRefreshSeconds ?? 15) * 1000;
const AFFILIATE_KEY = "dws.afc";
const AFFILIATE_RE = /^[A-Za-z0-9]{1,16}$/;
const STAKE_RE = /^[1-9][0-9]{0,17}$/;
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

const state = {
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
  user: null,
  donations: [],
  offset: 0,
  userError: null,
  userTimer: null,
  stakeMessage: null,
  affiliate: { code: null, message: null, retryHash: null },
};

const $ = (id) => document.getElementById(id);

function show(element, visible) {
  element.hidden = !visible;
}

function chainName(id) {
  return CHAIN_NAMES[id] ?? `chain id ${id}`;
}

// ---- loading -------------------------------------------------------------------------------------

async function loadCampaign({ fresh = false } = {}) {
  try {
    state.campaign = await api.getCampaign({ fresh });
    state.campaignError = null;
    // Same figure as /price/token, possibly newer (a tier may have changed since the page loaded).
    state.tokenPrice = { price: state.campaign.tokenPrice, ts: state.tokenPrice?.ts ?? null };
  } catch (error) {
    state.campaignError = error;
    if (error.down) state.campaign = null;
  }
  render();
}

async function loadTokenPrice({ fresh = false } = {}) {
  try {
    state.tokenPrice = await api.getTokenPrice({ fresh });
  } catch (error) {
    if (error.down) state.campaignError ??= error;
  }
  render();
}

async function loadEthPrice({ fresh = false } = {}) {
  try {
    state.ethPrice = await api.getEthPrice({ fresh });
    state.ethPriceError = null;
  } catch (error) {
    state.ethPriceError = error;
    if (error.code === api.ERROR_CODES.priceUnavailable) state.ethPrice = null;
  }
  render();
}

/** The donor's totals and one page of donations; `toLast` walks to the page with the newest. */
async function loadUserData({ fresh = false, toLast = false } = {}) {
  const account = state.account;
  if (!account) return;
  clearTimeout(state.userTimer);
  try {
    let data = await api.getUserData(account, { limit: config.pageSize, offset: state.offset, fresh });
    while (toLast && data.donations.length === config.pageSize) {
      const next = await api.getUserData(account, { limit: config.pageSize, offset: state.offset + config.pageSize, fresh });
      if (next.donations.length === 0) break;
      state.offset += config.pageSize;
      data = next;
    }
    if (account !== state.account) return; // the wallet switched accounts meanwhile
    // The donor's confirmed tokens changed: the crawlers confirmed a donation, which moved the campaign
    // figures too. Show them now, not at the next minute's refresh.
    const confirmedMore = state.user !== null && state.user.tokens !== data.user.tokens;
    state.user = data.user;
    state.donations = data.donations;
    if (confirmedMore) loadCampaign({ fresh: true });
    state.userError = null;
  } catch (error) {
    state.userError = error;
  }
  // Keep an unconfirmed donation's row live until the crawlers have confirmed (or failed) it.
  if (state.donations.some((d) => d.status === "unconfirmed") || state.tx?.phase === "mined" || state.tx?.phase === "sent") {
    state.userTimer = setTimeout(() => loadUserData({ fresh: true }), PENDING_DONATIONS_EVERY_MS);
  }
  render();
}

// ---- wallet --------------------------------------------------------------------------------------

async function refreshChain() {
  try {
    state.chainId = await wallet.chainId();
  } catch (error) {
    state.walletMessage = { text: error.message, kind: "error" };
  }
}

async function connect() {
  state.walletMessage = null;
  if (!wallet.provider()) {
    state.walletMessage = { text: "No Ethereum wallet found in this browser. Install one such as MetaMask, then reload this page.", kind: "error" };
    render();
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

async function setAccount(account) {
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

async function switchNetwork() {
  state.walletMessage = null;
  try {
    await wallet.switchChain(config.chainId);
    await refreshChain();
  } catch (error) {
    const text =
      error.kind === "unknown-chain"
        ? `Your wallet does not know ${config.chainName}. Add it in your wallet, then switch to it.`
        : walletErrorText(error, "switching the network");
    state.walletMessage = { text, kind: "error" };
  }
  render();
}

function walletErrorText(error, doing) {
  if (error instanceof wallet.WalletError) {
    if (error.kind === "rejected") return `You rejected the request in your wallet (${doing}). Nothing was sent.`;
    return error.message;
  }
  if (error instanceof api.ApiError) return apiErrorText(error);
  return `Something went wrong while ${doing}: ${error.message ?? error}`;
}

function apiErrorText(error) {
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

// ---- donating ------------------------------------------------------------------------------------

// Where the money goes comes from the page itself (rendered from the server's configuration), never
// from an API response, which a cache or a proxy in between could have altered.
const SALE_ADDRESS = config.donationAddress;
const STABLE_COINS = config.stableCoins ?? [];

function selectedCoin() {
  return STABLE_COINS.find((c) => c.asset === state.asset) ?? null;
}

/** True when the API names another donation address than the page: something in between lies. */
function addressMismatch() {
  const fromApi = state.campaign?.donationAddress;
  return Boolean(fromApi) && fromApi.toLowerCase() !== SALE_ADDRESS.toLowerCase();
}

function maxDecimals() {
  return money.inputDecimals(state.asset, selectedCoin()?.decimals ?? 6);
}

function parsedAmount() {
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
  if (state.asset !== "eth" && !selectedCoin()) return `${state.asset.toUpperCase()} donations are not available.`;
  if (addressMismatch()) return "The sale address could not be verified. Please reload the page before donating.";
  if (!wallet.provider()) return "No Ethereum wallet found: install one such as MetaMask to donate.";
  if (!state.account) return "Connect your wallet to donate.";
  if (state.chainId !== config.chainId) return `Switch your wallet to ${config.chainName} to donate.`;
  const parsed = parsedAmount();
  if (parsed.empty) return "Enter an amount to donate.";
  if (parsed.error) return parsed.error;
  if (!state.tokenPrice) return "The token price is not available yet.";
  if (state.asset === "eth" && !state.ethPrice) return "The ETH price is not available yet, so no estimate can be shown. Please try again shortly.";
  if (state.busy) return "Waiting for your wallet…";
  return null;
}

async function donate(event) {
  event.preventDefault();
  if (donateBlocker()) return;
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
    if (blocker) return;
    state.busy = true;
    render();

    const asset = state.asset;
    const amount = parsedAmount().amount;
    const to = SALE_ADDRESS;
    let hash;
    if (asset === "eth") {
      const wei = money.toBaseUnits(amount, 18);
      const balance = await wallet.ethBalance(state.account);
      if (balance < wei) throw insufficient("ETH", money.fromBaseUnits(balance, 18));
      hash = await wallet.sendEth({ from: state.account, to, wei });
    } else {
      const coin = selectedCoin();
      const units = money.toBaseUnits(amount, coin.decimals);
      const balance = await wallet.tokenBalance(coin.contract, state.account);
      if (balance < units) throw insufficient(asset.toUpperCase(), money.fromBaseUnits(balance, coin.decimals));
      hash = await wallet.sendToken({ from: state.account, contract: coin.contract, to, units });
    }
    if (!isTxHash(hash)) throw new Error("the wallet returned no transaction hash");
    state.tx = { hash, phase: "sent", blockNumber: null };
    state.amountText = "";
    $("amount").value = "";
    state.busy = false;
    render();
    watchReceipt(hash);
    loadUserData({ fresh: true, toLast: true });
    attributeToAffiliate(hash);
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

async function copyAddress() {
  const status = $("copy-status");
  try {
    await navigator.clipboard.writeText(SALE_ADDRESS);
    status.textContent = "Copied.";
  } catch {
    // No clipboard permission (an insecure origin or a locked-down browser): let the donor select it.
    window.getSelection()?.selectAllChildren($("donation-address"));
    status.textContent = "Selected: copy it with your keyboard.";
  }
  show(status, true);
}

// ---- affiliate -----------------------------------------------------------------------------------

function readAffiliateCode() {
  const fromUrl = new URLSearchParams(window.location.search).get("afc");
  try {
    if (fromUrl && AFFILIATE_RE.test(fromUrl)) sessionStorage.setItem(AFFILIATE_KEY, fromUrl);
    const kept = sessionStorage.getItem(AFFILIATE_KEY);
    return kept && AFFILIATE_RE.test(kept) ? kept : null;
  } catch {
    return fromUrl && AFFILIATE_RE.test(fromUrl) ? fromUrl : null; // storage disabled: this page view only
  }
}

async function attributeToAffiliate(hash) {
  const code = state.affiliate.code;
  if (!code || !state.account) return;
  state.affiliate.retryHash = null;
  state.affiliate.message = `Referral code ${code}: please sign the message in your wallet to link this donation to it (free, no transaction).`;
  render();
  try {
    const account = state.account;
    await api.postAffiliateDonation(account, (message) => wallet.personalSign(account, message), { txHash: hash, code });
    state.affiliate.message = `Referral code ${code} recorded for this donation.`;
  } catch (error) {
    state.affiliate.retryHash = hash;
    state.affiliate.message =
      error instanceof wallet.WalletError && error.kind === "rejected"
        ? `Referral not recorded: you rejected the signature. Your donation itself is not affected.`
        : `Referral not recorded: ${walletErrorText(error, "recording the referral")}`;
  }
  render();
}

async function referralLink() {
  const status = $("referral-status");
  show(status, true);
  try {
    const account = state.account;
    status.textContent = "Please sign the message in your wallet.";
    const { code } = await api.postAffiliateCode(account, (message) => wallet.personalSign(account, message));
    status.textContent = `Your referral link: ${window.location.origin}/?afc=${code}`;
  } catch (error) {
    status.textContent = walletErrorText(error, "getting your referral link");
  }
}

// ---- staking -------------------------------------------------------------------------------------

function stakeErrorText(error) {
  if (error instanceof api.ApiError) {
    const messages = {
      [api.ERROR_CODES.notADonor]: "Staking is available once you have a confirmed donation.",
      [api.ERROR_CODES.insufficientTokens]: "You do not have that many unstaked tokens.",
      [api.ERROR_CODES.stakeWhileUnstaking]: "Your tokens are being unstaked; you can stake again once that completes.",
      [api.ERROR_CODES.nothingStaked]: "You have no staked tokens.",
    };
    if (messages[error.code]) return messages[error.code];
  }
  return walletErrorText(error, "staking");
}

async function stake(event) {
  event.preventDefault();
  const amount = $("stake-amount").value.trim();
  const available = money.subtract(state.user.tokens, state.user.staked);
  if (!STAKE_RE.test(amount)) {
    state.stakeMessage = "Enter a whole number of tokens.";
  } else if (!money.lte(amount, available)) {
    state.stakeMessage = `You can stake at most ${money.formatNumber(available)} tokens.`;
  } else {
    await signedStakeAction("Staking", (account, sign) => api.postStake(account, sign, { amount }));
    $("stake-amount").value = "";
    return;
  }
  render();
}

async function unstake() {
  await signedStakeAction("Unstaking", (account, sign) => api.postUnstake(account, sign));
}

async function signedStakeAction(doing, action) {
  const account = state.account;
  state.stakeMessage = `${doing}: please sign the message in your wallet.`;
  render();
  try {
    state.user = await action(account, (message) => wallet.personalSign(account, message));
    state.stakeMessage = `${doing} done.`;
  } catch (error) {
    state.stakeMessage = stakeErrorText(error);
  }
  render();
}

function countdown(untilIso) {
  const left = Date.parse(untilIso) - Date.now();
  if (Number.isNaN(left)) return "";
  if (left <= 0) return "Unstaking complete: your tokens are released within a few minutes.";
  const s = Math.floor(left / 1000);
  const parts = [Math.floor(s / 86400) + "d", Math.floor((s % 86400) / 3600) + "h", Math.floor((s % 3600) / 60) + "m", (s % 60) + "s"];
  return `Tokens released in ${parts.join(" ")} (${untilIso.replace("T", " ").slice(0, 16)} UTC)`;
}

// ---- rendering -----------------------------------------------------------------------------------

const SALE_STATUS_TEXT = { open: "Sale open", paused: "Sale paused", closed: "Sale closed (sold out)" };
const TX_PHASE_TEXT = {
  sent: "Sent: waiting for it to be mined…",
  mined: "Mined in block {block}. Your donation is recorded as pending and is credited when the block is finalized (about 15 minutes).",
  reverted: "The transaction failed on chain (reverted): nothing was donated.",
  unconfirmed: "Recorded, waiting for the block to be finalized.",
  confirmed: "Confirmed: {tokens} $DWS credited.",
  failed: "The donation failed: it is not on the finalized chain.",
};

function render() {
  renderCampaign();
  renderWidget();
  renderTx();
  renderAccount();
}

function renderCampaign() {
  const c = state.campaign;
  const status = $("sale-status");
  const apiStatus = $("api-status");
  const down = !c && state.campaignError;
  apiStatus.dataset.state = down ? "down" : "up";
  show(apiStatus, Boolean(down));
  if (down) {
    apiStatus.textContent = "The sale service (API) is not reachable right now, so figures and donating are unavailable. The page keeps retrying every minute.";
  }
  status.dataset.status = c ? c.status : down ? "unavailable" : "loading";
  status.textContent = c ? SALE_STATUS_TEXT[c.status] ?? c.status : down ? "Status unavailable" : "loading…";
  if (!c) return;
  $("raised").textContent = money.formatUsd(c.raisedUsd);
  $("tokens-sold").textContent = money.formatNumber(c.tokensSold);
  $("sale-cap").textContent = money.formatNumber(c.saleCap);
  $("tier").textContent = String(c.tier);
  $("tier-note").textContent =
    c.tierLimit === c.saleCap
      ? "Last tier: the price stays until the sale closes."
      : `The price rises once ${money.formatNumber(c.tierLimit)} tokens are sold.`;
  const percent = money.percentOf(c.tokensSold, c.saleCap);
  $("progress").setAttribute("aria-valuenow", percent);
  $("progress-fill").style.width = `${percent}%`;
  for (const row of document.querySelectorAll("tr[data-tier]")) {
    row.classList.toggle("current", row.dataset.tier === String(c.tier));
  }
}

function renderWidget() {
  $("token-price").textContent = state.tokenPrice ? money.formatPrice(state.tokenPrice.price) : "–";
  const ethLine = $("eth-price");
  if (state.ethPrice) {
    const at = state.ethPrice.ts ? ` (${state.ethPrice.ts.replace("T", " ").slice(11, 16)} UTC)` : "";
    ethLine.textContent = `1 ETH = ${money.formatUsd(state.ethPrice.price)}${at}`;
  } else {
    ethLine.textContent = state.ethPriceError && !state.ethPriceError.down ? "not available yet" : "–";
  }
  show($("eth-price-line"), state.asset === "eth");

  for (const input of document.querySelectorAll('input[name="asset"]')) {
    const coinMissing = input.value !== "eth" && !STABLE_COINS.some((c) => c.asset === input.value);
    input.disabled = Boolean(coinMissing);
  }
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
  show($("wallet-kind"), Boolean(state.account) && state.contractWallet === true);
  const network = $("network-status");
  const switchButton = $("switch-network");
  const wrongChain = state.account && state.chainId !== null && state.chainId !== config.chainId;
  if (state.walletMessage) {
    network.textContent = state.walletMessage.text;
    network.dataset.state = state.walletMessage.kind;
  } else if (wrongChain) {
    network.textContent = `Wrong network: your wallet is on ${chainName(state.chainId)}. Donations are taken on ${config.chainName}.`;
    network.dataset.state = "wrong-network";
  } else if (state.account && state.chainId === config.chainId) {
    network.textContent = config.devChain
      ? `Connected to ${config.chainName} (chain id ${config.chainId}): a development chain, not real money.`
      : `Connected to ${config.chainName}.`;
    network.dataset.state = "ok";
  } else {
    network.textContent = "";
    network.dataset.state = "";
  }
  show(network, Boolean(network.textContent));
  show(switchButton, Boolean(wrongChain));

  const blocker = donateBlocker();
  const donateButton = $("donate");
  donateButton.disabled = Boolean(blocker);
  donateButton.textContent = state.busy ? "Confirm in your wallet…" : "Donate";
  $("donate-reason").textContent = blocker ?? "";
}

function renderTx() {
  const box = $("tx");
  show(box, Boolean(state.tx));
  if (!state.tx) return;
  const { hash } = state.tx;
  $("tx-hash").textContent = hash;
  // Once the API has the donation, its status is the truth; before that, the wallet's receipt.
  const recorded = state.donations.find((d) => d.txHash.toLowerCase() === hash.toLowerCase());
  const phase = recorded && state.tx.phase !== "reverted" ? recorded.status : state.tx.phase;
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

function renderAccount() {
  show($("account-prompt"), !state.account);
  show($("account-body"), Boolean(state.account));
  if (!state.account) return;
  const userError = $("user-error");
  show(userError, Boolean(state.userError));
  userError.textContent = state.userError ? apiErrorText(state.userError) : "";
  const user = state.user;
  $("user-total").textContent = user ? money.formatUsd(user.totalUsd) : "–";
  $("user-tokens").textContent = user ? money.formatNumber(user.tokens) : "–";
  $("user-staked").textContent = user ? money.formatNumber(user.staked) : "–";
  $("user-reward").textContent = user ? money.formatNumber(user.reward) : "–";
  renderStaking(user);
  renderDonations();
}

function renderStaking(user) {
  const form = $("stake-form");
  const unstakeButton = $("unstake");
  const countdownLine = $("unstake-countdown");
  const stakeState = $("stake-state");
  const available = user ? money.subtract(user.tokens, user.staked) : "0";
  const canStake = Boolean(user) && user.stakeStatus !== "unstaking" && money.isPositive(available);
  show(form, canStake);
  show(unstakeButton, Boolean(user) && user.stakeStatus === "staked" && money.isPositive(user.staked));
  show(countdownLine, Boolean(user) && user.stakeStatus === "unstaking");
  if (!user) {
    stakeState.textContent = "";
  } else if (user.stakeStatus === "unstaking") {
    stakeState.textContent = `Unstaking ${money.formatNumber(user.staked)} tokens (takes 7 days from the request).`;
    countdownLine.textContent = user.unstakeCompletesAt ? countdown(user.unstakeCompletesAt) : "";
  } else if (user.stakeStatus === "staked") {
    stakeState.textContent = `${money.formatNumber(user.staked)} tokens staked; ${money.formatNumber(available)} available to stake.`;
  } else {
    stakeState.textContent = money.isPositive(available)
      ? `${money.formatNumber(available)} tokens available to stake.`
      : "Staking opens once a donation of yours is confirmed.";
  }
  const status = $("stake-status");
  show(status, Boolean(state.stakeMessage));
  status.textContent = state.stakeMessage ?? "";
}

function cell(text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

function renderDonations() {
  const body = $("donations-body");
  body.replaceChildren(
    ...state.donations.map((d) => {
      const row = document.createElement("tr");
      row.dataset.txHash = d.txHash;
      row.append(
        cell(d.ts ? d.ts.replace("T", " ").slice(0, 16) : "–"),
        cell(`${money.formatAmount(d.amount)} ${d.asset.toUpperCase()}`),
        cell(money.formatUsd(d.usdAmount)),
        cell(money.formatPrice(d.price)),
        cell(money.formatNumber(d.tokens)),
        cell(d.status, `status status-${d.status}`),
        cell(shortHex(d.txHash, 6), "mono"),
      );
      return row;
    }),
  );
  const loaded = state.user !== null;
  show($("donations"), state.donations.length > 0);
  show($("donations-empty"), loaded && state.donations.length === 0 && state.offset === 0);
  const morePages = state.donations.length === config.pageSize;
  show($("pager"), state.offset > 0 || morePages);
  $("prev-page").disabled = state.offset === 0;
  $("next-page").disabled = !morePages;
  const first = state.offset + 1;
  $("page-info").textContent = state.donations.length ? `${first}–${state.offset + state.donations.length}` : "no more donations";
}

// ---- start ---------------------------------------------------------------------------------------

function start() {
  state.affiliate.code = readAffiliateCode();

  $("amount").addEventListener("input", (event) => {
    state.amountText = event.target.value;
    renderWidget();
  });
  for (const input of document.querySelectorAll('input[name="asset"]')) {
    input.addEventListener("change", (event) => {
      state.asset = event.target.value;
      render();
    });
  }
  $("connect").addEventListener("click", connect);
  $("copy-address").addEventListener("click", copyAddress);
  $("switch-network").addEventListener("click", switchNetwork);
  $("donate-form").addEventListener("submit", donate);
  $("affiliate-retry").addEventListener("click", () => attributeToAffiliate(state.affiliate.retryHash));
  $("stake-form").addEventListener("submit", stake);
  $("unstake").addEventListener("click", unstake);
  $("referral").addEventListener("click", referralLink);
  $("prev-page").addEventListener("click", () => {
    state.offset = Math.max(0, state.offset - config.pageSize);
    loadUserData();
  });
  $("next-page").addEventListener("click", () => {
    state.offset += config.pageSize;
    loadUserData();
  });

  wallet.onChange({
    accountsChanged: (account) => setAccount(account),
    chainChanged: (id) => {
      state.chainId = id;
      state.walletMessage = null;
      render();
    },
  });

  render();
  loadCampaign();
  loadTokenPrice();
  loadEthPrice();
  setInterval(() => {
    loadEthPrice();
    loadCampaign(); // keeps the progress live and brings the page back after an API outage
  }, ETH_PRICE_EVERY_MS);
  let releaseCheckedAt = 0;
  setInterval(() => {
    if (state.user?.stakeStatus !== "unstaking") return;
    renderStaking(state.user);
    // Past the release time, look (at most once a minute) for the API to report the tokens released.
    const due = Date.parse(state.user.unstakeCompletesAt ?? "") <= Date.now();
    if (due && Date.now() - releaseCheckedAt > ETH_PRICE_EVERY_MS) {
      releaseCheckedAt = Date.now();
      loadUserData({ fresh: true });
    }
  }, 1000);
  // A wallet that already shared an account with this site reconnects without a prompt.
  wallet
    .connectedAccount()
    .then((account) => account && setAccount(account))
    .catch(() => {});
}

start();
