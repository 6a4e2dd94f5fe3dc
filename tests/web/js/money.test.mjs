// Unit tests of the page's money module: the token estimate by the sale's ceiling formulas, exact
// base-unit conversion and input parsing. Run with `node --test tests/web/js/` (pytest does).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";

import {
  ceilDiv,
  estimateTokens,
  formatNumber,
  formatUsd,
  fromBaseUnits,
  inputDecimals,
  parseAmount,
  percentOf,
  toBaseUnits,
} from "../../../web/static/web/js/money.mjs";

// The development tiers (deploy/env.local): 100M tokens at $0.001, to 250M at $0.0015, to 500M at $0.002.
const TIER_PRICES = ["0.001", "0.0015", "0.002"];

describe("stable coin estimate: ceiling(DA / TP)", () => {
  it("is exact when the amount buys a whole number of tokens at every tier price", () => {
    assert.equal(estimateTokens({ asset: "usdc", amount: "150", tokenPrice: "0.001" }), "150000");
    assert.equal(estimateTokens({ asset: "usdc", amount: "150", tokenPrice: "0.0015" }), "100000");
    assert.equal(estimateTokens({ asset: "usdt", amount: "150", tokenPrice: "0.002" }), "75000");
  });

  it("rounds any fraction of a token up, however small", () => {
    assert.equal(estimateTokens({ asset: "usdt", amount: "1.500001", tokenPrice: "0.0015" }), "1001");
    assert.equal(estimateTokens({ asset: "usdc", amount: "0.000001", tokenPrice: "0.002" }), "1");
    assert.equal(estimateTokens({ asset: "usdc", amount: "0.001001", tokenPrice: "0.001" }), "2");
  });

  it("does not pick up binary-float noise (0.07 / 0.001 is 70, not 71)", () => {
    assert.equal(estimateTokens({ asset: "usdt", amount: "0.07", tokenPrice: "0.001" }), "70");
    assert.equal(estimateTokens({ asset: "usdt", amount: "0.0045", tokenPrice: "0.0015" }), "3");
    assert.equal(estimateTokens({ asset: "usdc", amount: "4.35", tokenPrice: "0.0015" }), "2900");
  });

  it("changes at a tier boundary only through the token price it is given", () => {
    // The same 100 USDT: the last purchase of tier 1, the first of tier 2 and of tier 3.
    const estimates = TIER_PRICES.map((tokenPrice) => estimateTokens({ asset: "usdt", amount: "100", tokenPrice }));
    assert.deepEqual(estimates, ["100000", "66667", "50000"]);
  });
});

describe("ETH estimate: ceiling(DA * EP / TP)", () => {
  it("is exact when DA * EP / TP is a whole number", () => {
    assert.equal(estimateTokens({ asset: "eth", amount: "2", ethPrice: "1500.75", tokenPrice: "0.0015" }), "2001000");
  });

  it("rounds up one wei-sized step above a whole number", () => {
    assert.equal(
      estimateTokens({ asset: "eth", amount: "2.00000001", ethPrice: "1500.75", tokenPrice: "0.0015" }),
      "2001001",
    );
  });

  it("gives at least one token for the smallest amount the page accepts", () => {
    assert.equal(estimateTokens({ asset: "eth", amount: "0.00000001", ethPrice: "3000", tokenPrice: "0.0015" }), "1");
  });

  it("gives the specification's example: 1.23456 ETH at 1604.955 USD and 0.001 USD a token", () => {
    // 1.23456 * 1604.955 = 1981.4132448 USD (1981.41 to the cent); / 0.001 = 1981413.2448 tokens
    assert.equal(
      estimateTokens({ asset: "eth", amount: "1.2345600000", ethPrice: "1604.955", tokenPrice: "0.00100" }),
      "1981414",
    );
  });

  it("keeps every digit of large amounts and long prices", () => {
    assert.equal(
      estimateTokens({ asset: "eth", amount: "123456789.12345678", ethPrice: "4000.12345678", tokenPrice: "0.0015" }),
      // 123456789.12345678 * 4000.12345678 = 493842398071.4814409965279684 USD
      "329228265380988",
    );
  });

  it("refuses to estimate ETH without an ETH price", () => {
    assert.throws(() => estimateTokens({ asset: "eth", amount: "1", ethPrice: null, tokenPrice: "0.001" }));
  });
});

// The vectors the backend's token rule is tested with too (tests/donations/test_token_rule.py).
const SHARED = JSON.parse(readFileSync(new URL("../../vectors/tokens.json", import.meta.url), "utf8")).vectors;

describe("the shared crediting vectors (tests/vectors/tokens.json)", () => {
  it("holds the specification's example and the dust cases", () => {
    const notes = SHARED.map((v) => v.note);
    assert.ok(notes.includes("seed 000 user data example, first donation (usd_amount 1981.41)"));
    assert.ok(notes.includes("issue 11: one unit of USDT buys one token"));
    assert.ok(SHARED.length > 50);
  });

  for (const v of SHARED) {
    it(`${v.note}: ${v.tokens} tokens`, () => {
      const got = estimateTokens({ asset: v.asset, amount: v.amount, ethPrice: v.eth_price, tokenPrice: v.token_price });
      assert.equal(got, v.tokens);
    });
  }
});

describe("ceilDiv", () => {
  it("never goes through a JavaScript number", () => {
    assert.throws(() => ceilDiv(1, "0.001"), TypeError);
  });

  it("rejects a zero or negative divisor", () => {
    assert.throws(() => ceilDiv("1", "0"), RangeError);
  });
});

describe("parseAmount", () => {
  it("accepts plain decimals up to the allowed places", () => {
    assert.equal(parseAmount("0.5", 8).amount.toFixed(), "0.5");
    assert.equal(parseAmount(" .25 ", 8).amount.toFixed(), "0.25");
    assert.equal(parseAmount("12.", 8).amount.toFixed(), "12");
    assert.equal(parseAmount("1.12345678", 8).amount.toFixed(), "1.12345678");
  });

  it("says what is wrong with anything else", () => {
    assert.deepEqual(parseAmount("", 8), { empty: true });
    assert.match(parseAmount("1.123456789", 8).error, /8 decimal places/);
    assert.match(parseAmount("1e3", 8).error, /Enter a number/);
    assert.match(parseAmount("-1", 8).error, /Enter a number/);
    assert.match(parseAmount("1,5", 8).error, /Enter a number/);
    assert.match(parseAmount(".", 8).error, /Enter a number/);
    assert.match(parseAmount("0.000", 8).error, /greater than zero/);
    assert.match(parseAmount("9999999999999999", 8).error, /too large/);
  });

  it("allows 8 decimals for ETH and the coin's decimals (at most 10) for stable coins", () => {
    assert.equal(inputDecimals("eth", 18), 8);
    assert.equal(inputDecimals("usdt", 6), 6);
    assert.equal(inputDecimals("usdc", 18), 10);
  });
});

describe("base units", () => {
  it("converts exactly to wei and to a 6-decimal coin's units", () => {
    assert.equal(toBaseUnits("1.23456789", 18), 1234567890000000000n);
    assert.equal(toBaseUnits("0.07", 18), 70000000000000000n);
    assert.equal(toBaseUnits("1000000.000001", 6), 1000000000001n);
  });

  it("refuses an amount with more places than the unit has", () => {
    assert.throws(() => toBaseUnits("0.0000001", 6), RangeError);
  });

  it("converts back without trailing zeros", () => {
    assert.equal(fromBaseUnits(1500000n, 6), "1.5");
    assert.equal(fromBaseUnits(1n, 18), "0.000000000000000001");
    assert.equal(fromBaseUnits(0n, 6), "0");
  });
});

describe("formatting", () => {
  it("groups thousands and keeps decimals as given", () => {
    assert.equal(formatNumber("1981414"), "1,981,414");
    assert.equal(formatNumber("1234.5678"), "1,234.5678");
    assert.equal(formatUsd("3568.31"), "$3,568.31");
    assert.equal(formatUsd("0"), "$0.00");
  });

  it("shows progress rounded down to a tenth of a percent", () => {
    assert.equal(percentOf("0", "500000000"), "0");
    assert.equal(percentOf("123456789", "500000000"), "24.6");
    assert.equal(percentOf("499999999", "500000000"), "99.9");
    assert.equal(percentOf("500000000", "500000000"), "100");
  });
});
