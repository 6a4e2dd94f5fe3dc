import { db } from "ponder:api";
import { donation } from "ponder:schema";
import { Hono } from "hono";
import { count, max } from "ponder";

// GET /count -> {"rows": n, "last_block": b}: what bench/ponder_way.py checks once /ready answers 200.
const app = new Hono();
app.get("/count", async (c) => {
  const [row] = await db.select({ rows: count(), lastBlock: max(donation.blockNumber) }).from(donation);
  return c.json({ rows: row!.rows, last_block: row!.lastBlock === null ? null : Number(row!.lastBlock) });
});
export default app;
