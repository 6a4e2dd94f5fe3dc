// Unit tests of the EIP-681 payment request: the exact URI for ETH and for a coin, and what is refused.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { paymentUri } from "../../../web/static/web/js/payment.mjs";

const SALE = "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720";
const USDC = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512";

describe("paymentUri", () => {
  it("asks for ETH as the value in wei, to the sale address on the chain", () => {
    assert.equal(paymentUri({ chainId: 1, saleAddress: SALE, units: 250000000000000000n }), `ethereum:${SALE}@1?value=250000000000000000`);
  });
  it("asks for a coin as a transfer call on its contract, the sale address as the recipient", () => {
    assert.equal(
      paymentUri({ chainId: 31337, saleAddress: SALE, coinContract: USDC, units: 100000000n }),
      `ethereum:${USDC}@31337/transfer?address=${SALE}&uint256=100000000`,
    );
  });
  it("writes a large amount as a plain integer, never in exponent form", () => {
    const wei = 123456789012345678901234567890n;
    assert.equal(paymentUri({ chainId: 1, saleAddress: SALE, units: wei }), `ethereum:${SALE}@1?value=${wei}`);
  });
  it("refuses a float, a zero amount, a bad address or chain id", () => {
    assert.throws(() => paymentUri({ chainId: 1, saleAddress: SALE, units: 1.5 }), RangeError);
    assert.throws(() => paymentUri({ chainId: 1, saleAddress: SALE, units: 0n }), RangeError);
    assert.throws(() => paymentUri({ chainId: 1, saleAddress: "0x1234", units: 1n }), TypeError);
    assert.throws(() => paymentUri({ chainId: 1, saleAddress: SALE, coinContract: "usdc", units: 1n }), TypeError);
    assert.throws(() => paymentUri({ chainId: 0, saleAddress: SALE, units: 1n }), RangeError);
  });
});
