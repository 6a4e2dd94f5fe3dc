// The sale's figures: the campaign, the token price and the ETH price, and the campaign panel.
import * as api from "./api.mjs";
import * as money from "./money.mjs";
import { $, render, show, state } from "./page.mjs";

export async function loadCampaign({ fresh = false } = {}) {
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

export async function loadTokenPrice({ fresh = false } = {}) {
  try {
    state.tokenPrice = await api.getTokenPrice({ fresh });
  } catch (error) {
    if (error.down) state.campaignError ??= error;
  }
  render();
}

export async function loadEthPrice({ fresh = false } = {}) {
  try {
    state.ethPrice = await api.getEthPrice({ fresh });
    state.ethPriceError = null;
  } catch (error) {
    state.ethPriceError = error;
    if (error.code === api.ERROR_CODES.priceUnavailable) state.ethPrice = null;
  }
  render();
}

const SALE_STATUS_TEXT = { open: "Sale open", paused: "Sale paused", closed: "Sale closed (sold out)" };
export function renderCampaign() {
  const c = state.campaign;
  const status = $("sale-status");
  const apiStatus = $("api-status");
  const down = !c && state.campaignError;
  apiStatus.dataset.state = down ? "down" : "up";
  show(apiStatus, Boolean(down));
  if (down) {
    apiStatus.textContent = "The sale service (API) is not reachable right now, so figures and donating are unavailable. The page keeps retrying.";
  }
  status.dataset.status = c ? c.status : down ? "unavailable" : "loading";
  status.textContent = c ? SALE_STATUS_TEXT[c.status] ?? c.status : down ? "Status unavailable" : "loading…";
  if (!c) return;
  $("raised").textContent = money.formatUsd(c.raisedUsd);
  const pending = $("raised-pending");
  show(pending, c.pendingDonations > 0);
  pending.textContent = c.pendingDonations > 0 ? `+ ${money.formatUsd(c.pendingUsd)} pending` : "";
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

