// The page's only contact with the delphi API. Every response field the page reads is named here
// and nowhere else: the rest of the page works on the plain objects these functions return, so a
// renamed field is a one-line change in this file.
//
// Amounts stay decimal strings (the API sends them as strings); money.mjs parses them exactly.

export const PATHS = {
  campaign: "/donation/data",
  ethPrice: "/price/eth",
  tokenPrice: "/price/token",
  userData: (address) => `/user/data/${address}`,
  affiliateDonation: "/affiliate/donation",
  affiliateCode: "/affiliate/code",
  walletConnection: "/wallet/connection",
  stake: "/user/stake",
  unstake: "/user/unstake",
};

// delphi's numbered errors the page explains in its own words.
export const ERROR_CODES = {
  priceUnavailable: 1008,
  signatureRejected: 1100,
  signatureUnverifiable: 1102,
  notADonor: 1101,
  unknownAffiliateCode: 1200,
  selfReferral: 1201,
  notTheDonor: 1202,
  attributionConflict: 1203,
  insufficientTokens: 1300,
  stakeWhileUnstaking: 1301,
  nothingStaked: 1302,
  rateLimited: 1006,
};

/**
 * A failed API call. `down` is true when the API could not be reached or did not answer as the API
 * (network error, time-out, 5xx without a delphi error body, a body that is not delphi's JSON).
 */
export class ApiError extends Error {
  constructor({ down, status = 0, code = null, message }) {
    super(message);
    this.down = down;
    this.status = status;
    this.code = code;
  }
}

const TIMEOUT_MS = 10000;
let clockSkewMs = 0; // server clock minus ours, from the Date header; signatures use server time

async function request(path, { method = "GET", body = null, headers = {}, fresh = false } = {}) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), TIMEOUT_MS);
  let response;
  try {
    response = await fetch(path, {
      method,
      headers: { Accept: "application/json", ...(body ? { "Content-Type": "application/json" } : {}), ...headers },
      body: body ? JSON.stringify(body) : null,
      // After an action the page must see the new figures, not a copy the browser kept.
      cache: fresh ? "no-cache" : "default",
      credentials: "omit",
      signal: controller.signal,
    });
  } catch {
    throw new ApiError({ down: true, message: "the API could not be reached" });
  } finally {
    clearTimeout(timer);
  }
  const serverDate = Date.parse(response.headers.get("Date") ?? "");
  if (!Number.isNaN(serverDate)) clockSkewMs = serverDate - Date.now();
  let data = null;
  if ((response.headers.get("Content-Type") ?? "").includes("application/json")) {
    try {
      data = await response.json();
    } catch {
      data = null;
    }
  }
  if (response.ok && data !== null) return data;
  if (data && typeof data.code === "number" && typeof data.message === "string") {
    // delphi answered with one of its numbered errors: the API is up, the request was refused.
    throw new ApiError({ down: false, status: response.status, code: data.code, message: data.message });
  }
  throw new ApiError({ down: true, status: response.status, message: `the API answered HTTP ${response.status}` });
}

/** The campaign: figures for the progress display and where and how to send a donation. */
export async function getCampaign({ fresh = false } = {}) {
  const d = await request(PATHS.campaign, { fresh });
  return {
    raisedUsd: d.total,
    // seen by the crawlers, not confirmed yet (a re-org's replaced blocks left out): moves within a block
    pendingUsd: d.pending_total ?? "0",
    pendingDonations: d.pending_donations ?? 0,
    tokensSold: d.tokens,
    status: d.status, // "open" | "closed" | "paused"
    tokenPrice: d.token_price,
    tier: d.tier, // 1-based
    tierLimit: d.tier_limit,
    saleCap: d.sale_cap,
    donationAddress: d.donation_address,
    stableCoins: (d.stable_coins ?? []).map((c) => ({ asset: c.asset, contract: c.contract, decimals: c.decimals })),
    // every chain donations are taken on: the page checks its own pinned address against these
    chains: (d.chains ?? []).map((c) => ({ chain: c.chain, chainId: c.chain_id, donationAddress: c.donation_address })),
  };
}

/** The latest ETH price in USD: { price, ts }. */
export async function getEthPrice({ fresh = false } = {}) {
  const d = await request(PATHS.ethPrice, { fresh });
  return { price: d.price, ts: d.ts };
}

/** The current tier's token price in USD: { price, ts }. */
export async function getTokenPrice({ fresh = false } = {}) {
  const d = await request(PATHS.tokenPrice, { fresh });
  return { price: d.price, ts: d.ts };
}

function userSummary(u) {
  return {
    totalUsd: u.total,
    tokens: u.tokens,
    staked: u.staked,
    reward: u.reward,
    stakeStatus: u.status, // "none" | "staked" | "unstaking"
    unstakeCompletesAt: u.unstake_completes_at ?? null,
  };
}

/** One page of the address's donations (oldest first) and its totals. */
export async function getUserData(address, { limit, offset, fresh = false }) {
  const query = new URLSearchParams({ limit: String(limit), offset: String(offset) });
  const d = await request(`${PATHS.userData(address.toLowerCase())}?${query}`, { fresh });
  return {
    donations: (d.donations ?? []).map((x) => ({
      txHash: x.tx_hash,
      asset: x.asset,
      amount: x.amount,
      usdAmount: x.usd_amount,
      price: x.price,
      tokens: x.tokens,
      status: x.status, // "unconfirmed" | "confirmed" | "failed"
      ts: x.ts,
      // the receipt (receipts.mjs)
      chain: x.chain,
      blockNumber: x.block_number,
      ethPrice: x.eth_price ?? null,
      seenAt: x.seen_at,
      confirmedAt: x.confirmed_at ?? null,
      // unconfirmed, and the finalized chain has another block at its height: it may still be mined again
      blockReplaced: x.block_replaced === true,
      // what the sale owes back for it (confirmed at 0 tokens: sold out), and the transaction that paid it
      refund: x.refund ? { status: x.refund.status, amount: x.refund.amount, txHash: x.refund.tx_hash ?? null } : null,
    })),
    user: userSummary(d.user_data ?? {}),
  };
}

// ---- signed requests -------------------------------------------------------------------------

function pad(n) {
  return String(n).padStart(2, "0");
}

/** UTC time in delphi's format: "2023-10-23 18:45:19+00:00". */
export function formatTs(date) {
  return (
    `${date.getUTCFullYear()}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())} ` +
    `${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}+00:00`
  );
}

/** The text a wallet signs for a request to `path`: "<path words>, <lower-case address>, <ts>". */
export function signedMessage(path, address, ts) {
  const words = path.split("/").filter(Boolean).join(" ").toLowerCase();
  return `${words}, ${address.toLowerCase()}, ${ts}`;
}

/**
 * POST `body` to `path`, signed by `address` through `sign(message)` (the wallet's personal_sign).
 * A rejected wallet prompt propagates as the wallet's error, before anything is sent.
 */
async function postSigned(path, address, sign, body = null) {
  const ts = formatTs(new Date(Date.now() + clockSkewMs));
  const signature = await sign(signedMessage(path, address, ts));
  return request(path, {
    method: "POST",
    body: body ?? {},
    fresh: true,
    headers: { "delphi-key": address.toLowerCase(), "delphi-ts": ts, "delphi-signature": signature },
  });
}

/** Tell delphi which affiliate code brought the donor of `txHash`, sent on `chain`. */
export async function postAffiliateDonation(address, sign, { txHash, code, chain }) {
  const d = await postSigned(PATHS.affiliateDonation, address, sign, { tx_hash: txHash, code, chain });
  return { status: d.status };
}

/** The donor's own affiliate code (created on first call). */
export async function postAffiliateCode(address, sign) {
  const d = await postSigned(PATHS.affiliateCode, address, sign);
  return { code: d.code };
}

/** Attach the referrer's `code` the visitor arrived with to the signing wallet. */
export async function postWalletConnection(address, sign, { code }) {
  const d = await postSigned(PATHS.walletConnection, address, sign, { code });
  return { code: d.code };
}

/** Stake `amount` whole tokens; returns the new totals. */
export async function postStake(address, sign, { amount }) {
  const d = await postSigned(PATHS.stake, address, sign, { amount });
  return userSummary(d.user_data ?? {});
}

/** Start unstaking everything staked; returns the new totals (with the completion time). */
export async function postUnstake(address, sign) {
  const d = await postSigned(PATHS.unstake, address, sign);
  return userSummary(d.user_data ?? {});
}
