import { onchainTable } from "ponder";

// One row per donation found: an ETH transaction or a coin Transfer log.
export const donation = onchainTable("donation", (t) => ({
  id: t.text().primaryKey(), // tx hash (ETH) or log id (coin)
  kind: t.text().notNull(), // "eth" | "coin"
  txHash: t.hex().notNull(),
  blockNumber: t.bigint().notNull(),
  amount: t.bigint().notNull(),
}));
