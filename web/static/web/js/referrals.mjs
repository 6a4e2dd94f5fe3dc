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

export async function attributeToAffiliate(hash) {
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

export async function referralLink() {
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

