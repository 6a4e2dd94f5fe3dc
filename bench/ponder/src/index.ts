import { ponder } from "ponder:registry";
import { donation } from "ponder:schema";

ponder.on("Coin:Transfer", async ({ event, context }) => {
  await context.db.insert(donation).values({
    id: event.id,
    kind: "coin",
    txHash: event.transaction.hash,
    blockNumber: event.block.number,
    amount: event.args.value,
  });
});

// Registered only when the config has the account (Ponder rejects handlers for unknown sources).
if (process.env.PONDER_MODE === "blocks") {
  ponder.on("Donation:transaction:to", async ({ event, context }) => {
    if (event.transaction.value === 0n) return; // a contract call, not an ETH donation
    await context.db.insert(donation).values({
      id: event.transaction.hash,
      kind: "eth",
      txHash: event.transaction.hash,
      blockNumber: event.block.number,
      amount: event.transaction.value,
    });
  });
}
