// Referrals: the code a visitor arrived with (?afc=), attributing a donation to it, and the donor's own link.
import * as api from "./api.mjs";
import { $, render, show, state, walletErrorText } from "./page.mjs";
import * as wallet from "./wallet.mjs";

const AFFILIATE_KEY = "dws.afc";
const AFFILIATE_RE = /^[A-Za-z0-9]{1,16}$/;

export function readAffiliateCode() {
  const fromUrl = new URLSearchParams(window.location.search).get("afc");
  try {
    if (fromUrl && AFFILIATE_RE.test(fromUrl)) sessionStorage.setItem(AFFILIATE_KEY, fromUrl);
    const kept = sessionStorage.getItem(AFFILIATE_KEY);
    return kept && AFFILIATE_RE.test(kept) ? kept : null;
  } catch {
    return fromUrl && AFFILIATE_RE.test(fromUrl) ? fromUrl : null; // storage disabled: this page view only
  }
}

/** Ask the donor to sign the attribution of donation `hash`, sent on `chain` (DWS_CHAINS's name), to the code. */
export async function attributeToAffiliate(hash, chain) {
  const code = state.affiliate.code;
  if (!code || !state.account) return;
  // The code is passed after every donation (seed 000; the FAQ says so), also when the visitor said "No
  // thanks" to linking the wallet itself: that answer was about the wallet, not this donation. Only a code
  // the service refused (unknown, or the donor's own) is not tried again.
  if (answerFor(state.account, code) === "refused") return;
  state.affiliate.retryHash = null;
  state.affiliate.retryChain = null;
  state.affiliate.message = `Referral code ${code}: please sign the message in your wallet to link this donation to it (free, no transaction).`;
  render();
  try {
    const account = state.account;
    await api.postAffiliateDonation(account, (message) => wallet.personalSign(account, message), {
      txHash: hash,
      code,
      chain,
    });
    state.affiliate.message = `Referral code ${code} recorded for this donation.`;
  } catch (error) {
    state.affiliate.retryHash = hash;
    state.affiliate.retryChain = chain;
    state.affiliate.message =
      error instanceof wallet.WalletError && error.kind === "rejected"
        ? `Referral not recorded: you rejected the signature. Your donation itself is not affected.`
        : `Referral not recorded: ${walletErrorText(error, "recording the referral")}`;
  }
  render();
}

export async function referralLink() {
  const status = $("referral-status");
  show(status, true);
  try {
    const account = state.account;
    status.textContent = "Please sign the message in your wallet.";
    const { code } = await api.postAffiliateCode(account, (message) => wallet.personalSign(account, message));
    status.textContent = `Your referral link: ${window.location.origin}/donate?afc=${code}`;
  } catch (error) {
    status.textContent = walletErrorText(error, "getting your referral link");
  }
}


// The offer to a visitor who arrived with a code: once a wallet is connected, link it to the code with
// one signature (POST /wallet/connection). Only on the visitor's click; "No thanks" and a settled
// answer (linked, or a code the service refuses) are kept for the visit, per wallet.
const answerKey = (account) => `dws.afc.answered.${account}`;

/** The settled answer ("linked", "dismissed", "refused") this wallet gave to `code` in this visit, or null. */
function answerFor(account, code) {
  const offer = state.affiliate.offer;
  if (offer && offer.account === account && offer.phase !== "busy" && offer.phase !== "failed") return offer.phase;
  try {
    const [phase, kept] = (sessionStorage.getItem(answerKey(account)) ?? "").split(":");
    return kept === code ? phase : null;
  } catch {
    return null; // storage disabled: the offer stands until answered on this page view
  }
}

function remember(account, code, phase) {
  try {
    sessionStorage.setItem(answerKey(account), `${phase}:${code}`);
  } catch {
    // storage disabled: the page's own state still hides the offer for this page view
  }
}

function settle(account, phase, message) {
  state.affiliate.offer = { account, phase, message };
  if (phase !== "failed" && phase !== "busy") remember(account, state.affiliate.code, phase);
  render();
}

export function dismissReferralOffer() {
  if (state.account) settle(state.account, "dismissed", null);
}

export async function attachReferral() {
  const account = state.account;
  const code = state.affiliate.code;
  if (!account || !code) return;
  settle(account, "busy", "Please sign the message in your wallet (free, no transaction).");
  try {
    await api.postWalletConnection(account, (message) => wallet.personalSign(account, message), { code });
    settle(account, "linked", `Your wallet is linked to referral code ${code}.`);
  } catch (error) {
    if (error instanceof api.ApiError && error.code === api.ERROR_CODES.unknownAffiliateCode) {
      settle(account, "refused", `Referral code ${code} is not known, so there is nothing to link. Donating works as usual.`);
    } else if (error instanceof api.ApiError && error.code === api.ERROR_CODES.selfReferral) {
      settle(account, "refused", "This is your own referral code: there is nothing to link.");
    } else {
      settle(account, "failed", walletErrorText(error, "linking the referral code"));
    }
  }
}

export function renderReferralOffer() {
  const { code, offer } = state.affiliate;
  const account = state.account;
  const current = offer && offer.account === account ? offer : null;
  const phase = current?.phase ?? (account && code && answerFor(account, code) ? "answered" : "offered");
  const visible = Boolean(account && code) && phase !== "dismissed" && phase !== "answered";
  show($("referral-offer"), visible);
  if (!visible) return;
  $("referral-offer-code").textContent = code;
  const open = phase === "offered" || phase === "failed" || phase === "busy";
  show($("referral-attach"), open);
  show($("referral-dismiss"), open);
  $("referral-attach").disabled = phase === "busy";
  $("referral-dismiss").disabled = phase === "busy";
  const status = $("referral-offer-status");
  show(status, Boolean(current?.message));
  status.textContent = current?.message ?? "";
}
