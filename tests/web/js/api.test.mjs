// The signed-request message and timestamp format the API verifies.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { formatTs, signedMessage } from "../../../web/static/web/js/api.mjs";

describe("signed requests", () => {
  it("formats the timestamp as UTC with seconds and +00:00", () => {
    assert.equal(formatTs(new Date(Date.UTC(2023, 9, 23, 18, 45, 19, 999))), "2023-10-23 18:45:19+00:00");
  });

  it("signs the path words, the lower-case address and the timestamp", () => {
    const ts = "2023-10-23 18:45:19+00:00";
    const address = "0xDED1fe6B3f61C8F1d874bb86F086D10FFC3F0154";
    assert.equal(signedMessage("/affiliate/code", address, ts), `affiliate code, ${address.toLowerCase()}, ${ts}`);
    assert.equal(signedMessage("/affiliate/donation", address, ts).split(",")[0], "affiliate donation");
    assert.equal(signedMessage("/user/unstake", address, ts).split(",")[0], "user unstake");
  });
});
