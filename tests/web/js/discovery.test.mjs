// Unit tests of the EIP-6963 listener: what an announcement must carry to be offered, one entry per
// wallet, late announcements, and the request the page sends.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { discoverWallets, walletInfo } from "../../../web/static/web/js/discovery.mjs";

const provider = { request: async () => null };
const info = (n, extra = {}) => ({ uuid: `00000000-0000-4000-8000-00000000000${n}`, name: `Wallet ${n}`, icon: "data:image/png;base64,AA==", rdns: `io.w${n}`, ...extra });
const announce = (target, detail) => target.dispatchEvent(new CustomEvent("eip6963:announceProvider", { detail }));

describe("walletInfo", () => {
  it("keeps a well-formed announcement", () => {
    const entry = walletInfo({ info: info(1), provider });
    assert.equal(entry.name, "Wallet 1");
    assert.equal(entry.rdns, "io.w1");
    assert.equal(entry.provider, provider);
  });
  it("refuses an announcement without a provider, a uuid or a name", () => {
    assert.equal(walletInfo({ info: info(1), provider: {} }), null);
    assert.equal(walletInfo({ info: info(1, { uuid: "<script>" }), provider }), null);
    assert.equal(walletInfo({ info: info(1, { name: "  " }), provider }), null);
    assert.equal(walletInfo(undefined), null);
  });
  it("drops an icon that is not an inline image", () => {
    assert.equal(walletInfo({ info: info(1, { icon: "https://tracker.example/i.png" }), provider }).icon, null);
    assert.equal(walletInfo({ info: info(1, { icon: "javascript:alert(1)" }), provider }).icon, null);
  });
});

describe("discoverWallets", () => {
  it("asks the wallets to announce, lists each once, and hears a wallet that loads later", () => {
    const target = new EventTarget();
    let requests = 0;
    target.addEventListener("eip6963:requestProvider", () => {
      requests += 1;
      announce(target, { info: info(1), provider });
    });
    const seen = [];
    const current = discoverWallets(target, (wallets) => seen.push(wallets.map((w) => w.name)));
    assert.equal(requests, 1);
    announce(target, { info: info(1), provider }); // the same wallet again
    announce(target, { info: info(2), provider }); // a late one, unasked
    announce(target, { info: info(3, { name: "" }), provider }); // malformed: ignored
    assert.deepEqual(current().map((w) => w.name), ["Wallet 1", "Wallet 2"]);
    assert.deepEqual(seen, [["Wallet 1"], ["Wallet 1"], ["Wallet 1", "Wallet 2"]]);
  });
});
