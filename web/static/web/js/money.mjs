// Exact decimal arithmetic for everything on the page that is money: the amount a donor types, the
// prices the API sends, the token estimate and the base units put into a transaction.
//
// Every value is parsed from a string into big.js (or into a BigInt for base units). The constructor
// below is in strict mode, so passing a JavaScript number anywhere throws instead of silently going
// through a binary float.
import BigModule from "../vendor/big.mjs";

export const Dec = BigModule();
Dec.strict = true;
// Division only ever asks for the whole part here (floor for the positive values we divide);
// the remainder is then checked exactly, so no rounding decision is left to the library.
Dec.DP = 0;
Dec.RM = 0; // towards zero

// ETH amounts are recorded with 8 decimals; a donor should not type digits the ledger drops.
export const ETH_INPUT_DECIMALS = 8;
// The donation table keeps 10 decimals; a coin with more decimals is still entered at 10 at most.
export const MAX_RECORDED_DECIMALS = 10;

const AMOUNT_RE = /^(\d*)(?:\.(\d*))?$/;

/** How many decimals a donor may type for `asset` (`coinDecimals`: the ERC-20's decimals). */
export function inputDecimals(asset, coinDecimals) {
  if (asset === "eth") return ETH_INPUT_DECIMALS;
  return Math.min(coinDecimals, MAX_RECORDED_DECIMALS);
}

/**
 * A typed amount as an exact decimal, or the reason it is not one.
 * Returns { amount: Dec } or { error: "..." }; an empty field is { empty: true }.
 */
export function parseAmount(text, maxDecimals) {
  const trimmed = String(text ?? "").trim();
  if (trimmed === "") return { empty: true };
  const match = AMOUNT_RE.exec(trimmed);
  if (!match || (match[1] === "" && (match[2] ?? "") === "")) {
    return { error: "Enter a number, e.g. 0.5" };
  }
  const whole = match[1] || "0";
  const fraction = match[2] ?? "";
  if (fraction.length > maxDecimals) {
    return { error: `At most ${maxDecimals} decimal places` };
  }
  if (whole.length > 15) return { error: "That amount is too large" };
  const amount = new Dec(fraction ? `${whole}.${fraction}` : whole);
  if (amount.lte(new Dec("0"))) return { error: "Enter an amount greater than zero" };
  return { amount };
}

/** A decimal string from the API (e.g. "0.00150") as Dec; throws on anything else. */
export function decimalFromApi(text) {
  if (typeof text !== "string" || !/^-?\d+(\.\d+)?$/.test(text)) {
    throw new TypeError(`not a decimal string: ${String(text)}`);
  }
  return new Dec(text);
}

function toDec(value) {
  return value instanceof Dec ? value : decimalFromApi(value);
}

/** ceiling(numerator / denominator) for positive decimals, exact; returned as a decimal string. */
export function ceilDiv(numerator, denominator) {
  const n = toDec(numerator);
  const d = toDec(denominator);
  if (d.lte(new Dec("0"))) throw new RangeError("division by a non-positive number");
  const floor = n.div(d); // DP 0, rounding towards zero
  return (floor.times(d).eq(n) ? floor : floor.plus(new Dec("1"))).toFixed(0);
}

/**
 * The tokens a donation buys, by the sale's formulas:
 *   ETH:         ceiling(DA * EP / TP)
 *   stable coin: ceiling(DA / TP)
 * DA donation amount, EP ETH price in USD, TP token price in USD. Returns a whole-number string.
 * The backend credits by the same rule (donations.rules.donation_tokens): exact product, one rounding,
 * the ceiling. tests/vectors/tokens.json holds both to the same numbers.
 */
export function estimateTokens({ asset, amount, ethPrice, tokenPrice }) {
  const da = toDec(amount);
  if (asset === "eth") {
    if (ethPrice === null || ethPrice === undefined) throw new RangeError("an ETH estimate needs the ETH price");
    return ceilDiv(da.times(toDec(ethPrice)), tokenPrice);
  }
  return ceilDiv(da, tokenPrice);
}

/** An exact decimal amount in the asset's smallest unit (wei, or the coin's base unit), as BigInt. */
export function toBaseUnits(amount, decimals) {
  const scaled = toDec(amount).times(new Dec(`1e${decimals}`));
  const whole = scaled.round(0, 0);
  if (!whole.eq(scaled)) throw new RangeError(`more than ${decimals} decimal places`);
  return BigInt(whole.toFixed(0));
}

/** A base-unit BigInt back as a decimal string with trailing zeros dropped. */
export function fromBaseUnits(units, decimals) {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(decimals + 1, "0");
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, "");
  return `${negative ? "-" : ""}${whole}${fraction ? `.${fraction}` : ""}`;
}

function groupThousands(wholeDigits) {
  return wholeDigits.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** "1234567" -> "1,234,567" (any decimal string; decimals kept as given). */
export function formatNumber(text) {
  const value = toDec(text);
  const [whole, fraction] = value.toFixed().split(".");
  const sign = whole.startsWith("-") ? "-" : "";
  const grouped = groupThousands(whole.replace("-", ""));
  return `${sign}${grouped}${fraction ? `.${fraction}` : ""}`;
}

/** USD with two decimals and thousands separators: "1981.4" -> "$1,981.40". */
export function formatUsd(text) {
  const fixed = toDec(text).toFixed(2, 1);
  const [whole, fraction] = fixed.split(".");
  return `$${groupThousands(whole)}.${fraction}`;
}

/** A token price as given by the API, without trailing zeros beyond what it needs: "$0.0015". */
export function formatPrice(text) {
  return `$${toDec(text).toFixed()}`;
}

/** An asset amount without trailing zeros: "1.2345600000" -> "1.23456". */
export function formatAmount(text) {
  return formatNumber(toDec(text).toFixed());
}

/** part / whole as a percentage with one decimal, rounded down ("12.3"); "0" for a zero whole. */
export function percentOf(part, whole) {
  const w = toDec(whole);
  if (w.lte(new Dec("0"))) return "0";
  const ten = new Dec("10");
  let perMille = toDec(part).times(new Dec("1000")).div(w); // floor
  if (perMille.gt(new Dec("1000"))) perMille = new Dec("1000");
  const tenths = perMille.mod(ten);
  return perMille.div(ten).toFixed(0) + (tenths.eq(new Dec("0")) ? "" : `.${tenths.toFixed(0)}`);
}

/** a - b for decimal strings, as a string (used for tokens available to stake). */
export function subtract(a, b) {
  return toDec(a).minus(toDec(b)).toFixed();
}

/** a <= b for decimal strings or Dec values. */
export function lte(a, b) {
  return toDec(a).lte(toDec(b));
}

export function isPositive(text) {
  return toDec(text).gt(new Dec("0"));
}
