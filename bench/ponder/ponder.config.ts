// Benchmark only: Ponder indexing donations to one address on a local anvil chain (see bench/ponder_way.py).
// Everything comes from the environment, so one project serves both configurations:
//   PONDER_MODE=blocks  ETH transactions to the donation address (account indexing: every block is read)
//                       plus the coin's Transfer logs to it
//   PONDER_MODE=logs    only the coin's Transfer logs to it (eth_getLogs; cannot see ETH)
import { createConfig } from "ponder";
import { parseAbi } from "viem";

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const mode = env("PONDER_MODE");
if (mode !== "blocks" && mode !== "logs") throw new Error(`PONDER_MODE must be blocks or logs, not ${mode}`);
const startBlock = Number(env("PONDER_START_BLOCK"));
const donation = env("PONDER_DONATION_ADDRESS") as `0x${string}`;
const coin = env("PONDER_COIN_ADDRESS") as `0x${string}`;
// The same URL given N times makes N "providers": Ponder's RPC scheduler caps each one's requests a second
// (adaptively, from 20 up to 500), with no setting to lift the cap. Default 1 (no fan-out).
const rpcCopies = Number(process.env.PONDER_RPC_COPIES ?? "1");
const rpcUrl = env("PONDER_RPC_URL");

export default createConfig({
  // Explicit, so a DATABASE_URL in the caller's environment (the project's own database) is never used.
  database: process.env.PONDER_DATABASE_URL
    ? { kind: "postgres", connectionString: process.env.PONDER_DATABASE_URL }
    : { kind: "pglite", directory: env("PONDER_PGLITE_DIR") },
  chains: {
    anvil: {
      id: 31337,
      rpc: rpcCopies > 1 ? Array(rpcCopies).fill(rpcUrl) : rpcUrl,
      // Don't read ranges a previous run synced from ponder_sync: every run reads the chain.
      disableCache: true,
      // Realtime polling for the unfinalized tail (Ponder treats the last 30 blocks of chain 31337 as
      // unfinalized); 100 ms is the smallest value Ponder accepts.
      pollingInterval: 100,
      // anvil answers any eth_getLogs range: no splitting of a backfill step into 500-block requests.
      ethGetLogsBlockRange: 100_000,
    },
  },
  contracts: {
    Coin: {
      chain: "anvil",
      abi: parseAbi(["event Transfer(address indexed from, address indexed to, uint256 value)"]),
      address: coin,
      filter: { event: "Transfer", args: { to: donation } },
      startBlock,
    },
  },
  // Typed as always present so src/index.ts type-checks; at run time "logs" has no account (and no handler for it).
  accounts: (mode === "blocks" ? { Donation: { chain: "anvil", address: donation, startBlock } } : {}) as {
    Donation: { chain: "anvil"; address: `0x${string}`; startBlock: number };
  },
});
