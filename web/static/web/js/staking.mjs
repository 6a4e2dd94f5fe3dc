// Staking: stake and unstake by signed request, and the unstaking countdown.
import * as api from "./api.mjs";
import * as money from "./money.mjs";
import { $, render, show, state, walletErrorText } from "./page.mjs";
import * as wallet from "./wallet.mjs";

const STAKE_RE = /^[1-9][0-9]{0,17}$/;

export function stakeErrorText(error) {
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

export async function stake(event) {
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

export async function unstake() {
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

export function countdown(untilIso) {
  const left = Date.parse(untilIso) - Date.now();
  if (Number.isNaN(left)) return "";
  if (left <= 0) return "Unstaking complete: your tokens are released within a few minutes.";
  const s = Math.floor(left / 1000);
  const parts = [Math.floor(s / 86400) + "d", Math.floor((s % 86400) / 3600) + "h", Math.floor((s % 3600) / 60) + "m", (s % 60) + "s"];
  return `Tokens released in ${parts.join(" ")} (${untilIso.replace("T", " ").slice(0, 16)} UTC)`;
}

export function renderStaking(user) {
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

