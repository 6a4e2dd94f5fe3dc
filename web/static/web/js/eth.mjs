// Ethereum encodings the page builds by hand: hex quantities, ERC-20 calldata, UTF-8 hex for
// personal_sign. Pure functions over strings and BigInt, so they are unit-tested in Node.

const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/;
const TX_HASH_RE = /^0x[0-9a-fA-F]{64}$/;

// ERC-20 function selectors: the first 4 bytes of keccak256 of the signature.
export const TRANSFER_SELECTOR = "0xa9059cbb"; // transfer(address,uint256)
export const BALANCE_OF_SELECTOR = "0x70a08231"; // balanceOf(address)

export const MAINNET_CHAIN_ID = 1;

export function isAddress(value) {
  return typeof value === "string" && ADDRESS_RE.test(value);
}

export function isTxHash(value) {
  return typeof value === "string" && TX_HASH_RE.test(value);
}

/** A non-negative BigInt as a JSON-RPC quantity ("0x0", "0x1bc16d674ec80000"). */
export function toQuantity(value) {
  if (typeof value !== "bigint" || value < 0n) throw new RangeError("quantity must be a non-negative BigInt");
  return `0x${value.toString(16)}`;
}

/** A JSON-RPC quantity or 32-byte word ("0x…") as BigInt; "0x" alone is zero. */
export function fromQuantity(hex) {
  if (typeof hex !== "string" || !/^0x[0-9a-fA-F]*$/.test(hex)) throw new TypeError(`not a hex quantity: ${hex}`);
  return hex === "0x" ? 0n : BigInt(hex);
}

export function chainIdHex(chainId) {
  return `0x${Number(chainId).toString(16)}`;
}

function word(hexDigits) {
  if (hexDigits.length > 64) throw new RangeError("value does not fit in 32 bytes");
  return hexDigits.padStart(64, "0");
}

function addressWord(address) {
  if (!isAddress(address)) throw new TypeError(`not an address: ${address}`);
  return word(address.slice(2).toLowerCase());
}

/** Calldata of ERC-20 transfer(to, amount), amount in the coin's base units. */
export function erc20TransferData(to, amount) {
  if (typeof amount !== "bigint" || amount <= 0n) throw new RangeError("transfer amount must be a positive BigInt");
  return TRANSFER_SELECTOR + addressWord(to) + word(amount.toString(16));
}

/** Calldata of ERC-20 balanceOf(owner). */
export function erc20BalanceOfData(owner) {
  return BALANCE_OF_SELECTOR + addressWord(owner);
}

/** UTF-8 text as 0x-hex, the form wallets take for personal_sign. */
export function utf8ToHex(text) {
  const bytes = new TextEncoder().encode(text);
  return `0x${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** Whether an eth_getCode answer shows contract code (a Safe, an ERC-4337 account), not a plain key. */
export function hasCode(code) {
  if (typeof code !== "string" || !/^0x[0-9a-fA-F]*$/.test(code)) throw new TypeError(`not eth_getCode hex: ${code}`);
  return /[1-9a-fA-F]/.test(code.slice(2));
}

/** "0xAbC…" shortened for display: "0xabc1…9f0e". */
export function shortHex(value, keep = 4) {
  const lower = String(value).toLowerCase();
  return lower.length <= 2 + keep * 2 ? lower : `${lower.slice(0, 2 + keep)}…${lower.slice(-keep)}`;
}

/**
 * The EIP-3085 `wallet_addEthereumChain` request for a network whose native coin is ETH: its chain id,
 * the name the page shows, the public RPC URL the server names (never its provider's) and, when the
 * explorer is https (wallets refuse others), the explorer's origin.
 */
export function addChainParams({ chainId, label, rpcUrl, explorer = null }) {
  if (!Number.isSafeInteger(chainId) || chainId <= 0) throw new RangeError(`not a chain id: ${chainId}`);
  if (typeof rpcUrl !== "string" || !/^https?:\/\//.test(rpcUrl)) throw new TypeError("an RPC URL is needed");
  const params = {
    chainId: chainIdHex(chainId),
    chainName: label,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: [rpcUrl],
  };
  if (typeof explorer === "string" && explorer.startsWith("https://")) {
    try {
      params.blockExplorerUrls = [new URL(explorer.replace("{tx}", "0x")).origin];
    } catch {
      // not a URL: the wallet does without an explorer
    }
  }
  return params;
}
