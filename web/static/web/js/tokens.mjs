// "My tokens": the connected donor's totals and donations, page by page, kept live while one is pending;
// or, without connecting, those of an address the donor looks up (read-only: nothing to sign).
import * as api from "./api.mjs";
import { shortHex } from "./eth.mjs";
import * as money from "./money.mjs";
import { loadCampaign } from "./campaign.mjs";
import { $, apiErrorText, chainLabel, config, render, show, state, viewedAddress } from "./page.mjs";
import { receiptRow } from "./receipts.mjs";
import { renderStaking } from "./staking.mjs";

const PENDING_DONATIONS_EVERY_MS = (config.pendingRefreshSeconds ?? 5) * 1000;
// After the donor sends, until the crawlers have recorded it: the head follower records a donation within a
// block, and the page shows it within about a second of that (a conditional GET: 304 while nothing changed).
const SENT_DONATION_EVERY_MS = (config.sentRefreshSeconds ?? 1) * 1000;

/** The donor's totals and one page of donations; `toLast` walks to the page with the newest. */
export async function loadUserData({ fresh = false, toLast = false } = {}) {
  const account = viewedAddress();
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
    if (account !== viewedAddress()) return; // the wallet switched accounts meanwhile
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
  // The donor's own donation, sent and not recorded yet: look every second. Then keep an unconfirmed row
  // live until the crawlers have confirmed (or failed) it.
  if (awaitingOwnDonation()) {
    state.userTimer = setTimeout(() => loadUserData({ fresh: true, toLast: true }), SENT_DONATION_EVERY_MS);
  } else if (state.donations.some((d) => d.status === "unconfirmed")) {
    state.userTimer = setTimeout(() => loadUserData({ fresh: true }), PENDING_DONATIONS_EVERY_MS);
  }
  render();
}

/** Whether the donation this page sent (and the wallet did not report reverted) is not in the list yet. */
function awaitingOwnDonation() {
  const tx = state.tx;
  if (!tx || (tx.phase !== "sent" && tx.phase !== "mined")) return false;
  return !state.donations.some((d) => d.chain === tx.chain && d.txHash.toLowerCase() === tx.hash.toLowerCase());
}

/** A donor who paid from a phone looks up the address they sent from. */
export async function lookUp(event) {
  event.preventDefault();
  const text = $("lookup-address").value.trim();
  const error = $("lookup-error");
  const valid = /^0x[0-9a-fA-F]{40}$/.test(text);
  show(error, !valid);
  error.textContent = valid ? "" : "Enter the address you sent from: 0x and 40 hexadecimal characters.";
  if (!valid || state.account) return;
  state.watched = text.toLowerCase();
  state.user = null;
  state.donations = [];
  state.offset = 0;
  render();
  await loadUserData({ fresh: true });
}

export function renderAccount() {
  const viewed = viewedAddress();
  show($("account-prompt"), !state.account);
  show($("account-body"), Boolean(viewed));
  // Looked up without connecting: read-only, nothing to sign.
  show($("watch-note"), Boolean(viewed) && !state.account);
  $("watched-address").textContent = state.account ? "" : (viewed ?? "");
  show($("staking"), Boolean(state.account));
  show($("referral-box"), Boolean(state.account));
  if (!viewed) return;
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

function cell(text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

export function renderDonations() {
  const body = $("donations-body");
  // The server gives the table a network column once more than one chain is configured.
  const severalChains = Object.keys(config.chainLabels ?? {}).length > 1;
  body.replaceChildren(
    ...state.donations.flatMap((d) => {
      const row = document.createElement("tr");
      row.dataset.txHash = d.txHash;
      row.dataset.chain = d.chain;
      row.append(cell(d.ts ? d.ts.replace("T", " ").slice(0, 16) : "–"));
      if (severalChains) row.append(cell(chainLabel(d.chain), "network"));
      row.append(
        cell(`${money.formatAmount(d.amount)} ${d.asset.toUpperCase()}`),
        cell(money.formatUsd(d.usdAmount)),
        cell(money.formatPrice(d.price)),
        cell(money.formatNumber(d.tokens)),
        d.blockReplaced
          ? cell("pending: block replaced", "status status-replaced")
          : cell(d.status, `status status-${d.status}`),
        cell(shortHex(d.txHash, 6), "mono"),
      );
      return [row, receiptRow(d)];
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

export function previousPage() {
  state.offset = Math.max(0, state.offset - config.pageSize);
  loadUserData();
}

export function nextPage() {
  state.offset += config.pageSize;
  loadUserData();
}
