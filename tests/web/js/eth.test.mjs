// Unit tests of the hand-built Ethereum encodings: ERC-20 calldata, quantities, personal_sign text.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  erc20BalanceOfData,
  erc20TransferData,
  fromQuantity,
  hasCode,
  isTxHash,
  toQuantity,
  utf8ToHex,
} from "../../../web/static/web/js/eth.mjs";

const DONATION_ADDRESS = "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720";

describe("ERC-20 calldata", () => {
  it("encodes transfer(address,uint256) with the address lower-cased and both words padded", () => {
    assert.equal(
      erc20TransferData(DONATION_ADDRESS, 1500000n),
      "0xa9059cbb" +
        "000000000000000000000000a0ee7a142d267c1f36714e4a8f75612f20a79720" +
        "000000000000000000000000000000000000000000000000000000000016e360",
    );
  });

  it("refuses a zero amount, a malformed address and an amount beyond 256 bits", () => {
    assert.throws(() => erc20TransferData(DONATION_ADDRESS, 0n), RangeError);
    assert.throws(() => erc20TransferData("0x1234", 1n), TypeError);
    assert.throws(() => erc20TransferData(DONATION_ADDRESS, 2n ** 256n), RangeError);
  });

  it("encodes balanceOf(address)", () => {
    assert.equal(erc20BalanceOfData(DONATION_ADDRESS), "0x70a08231000000000000000000000000a0ee7a142d267c1f36714e4a8f75612f20a79720");
  });
});

describe("quantities", () => {
  it("round-trips wei amounts beyond 2^53 exactly", () => {
    assert.equal(toQuantity(1234567890000000000n), "0x112210f4768db400");
    assert.equal(fromQuantity("0x112210f4768db400"), 1234567890000000000n);
    assert.equal(toQuantity(0n), "0x0");
    assert.equal(fromQuantity("0x"), 0n);
  });

  it("never takes a JavaScript number", () => {
    assert.throws(() => toQuantity(1), RangeError);
  });
});

describe("personal_sign text", () => {
  it("is the UTF-8 bytes of the message as hex", () => {
    assert.equal(utf8ToHex("user stake, 0xab"), "0x75736572207374616b652c2030786162");
  });

  it("recognises transaction hashes", () => {
    assert.ok(isTxHash(`0x${"ab".repeat(32)}`));
    assert.ok(!isTxHash("0x1234"));
  });
});

describe("contract wallets", () => {
  it("tells contract code from an empty account", () => {
    assert.equal(hasCode("0x"), false);
    assert.equal(hasCode("0x0"), false);
    assert.equal(hasCode("0x00"), false);
    assert.equal(hasCode("0x6080604052"), true);
    assert.throws(() => hasCode(null), TypeError);
    assert.throws(() => hasCode("not hex"), TypeError);
  });
});
