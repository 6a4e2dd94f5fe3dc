// Unit tests of the hand-built Ethereum encodings: ERC-20 calldata, quantities, personal_sign text.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  addChainParams,
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

describe("wallet_addEthereumChain (EIP-3085)", () => {
  it("asks for the chain by hex id, with ETH as its coin and the public RPC URL", () => {
    const base = { chainId: 8453, label: "Base", rpcUrl: "https://mainnet.base.org", explorer: "https://basescan.org/tx/{tx}" };
    assert.deepEqual(addChainParams(base), {
      chainId: "0x2105",
      chainName: "Base",
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: ["https://mainnet.base.org"],
      blockExplorerUrls: ["https://basescan.org"],
    });
  });

  it("leaves out an explorer a wallet would refuse (not https) and does without one", () => {
    const rollup = { chainId: 1337, label: "Local rollup", rpcUrl: "http://127.0.0.1:8546" };
    const local = addChainParams({ ...rollup, explorer: "http://127.0.0.1:4000/tx/{tx}" });
    assert.equal(local.chainId, "0x539");
    assert.equal("blockExplorerUrls" in local, false);
    assert.equal("blockExplorerUrls" in addChainParams(rollup), false);
  });

  it("refuses what is not a chain id or an RPC URL", () => {
    assert.throws(() => addChainParams({ chainId: 0, label: "x", rpcUrl: "https://rpc.example" }), RangeError);
    assert.throws(() => addChainParams({ chainId: "0x1", label: "x", rpcUrl: "https://rpc.example" }), RangeError);
    assert.throws(() => addChainParams({ chainId: 10, label: "x", rpcUrl: null }), TypeError);
    assert.throws(() => addChainParams({ chainId: 10, label: "x", rpcUrl: "javascript:alert(1)" }), TypeError);
  });
});
