// Which network a donation goes to: the chooser (one button per network the server offers; none when it
// offers one), asking the wallet to switch to it (EIP-3326) or, when the wallet lacks it, to add it with the
// public RPC URL the server names (EIP-3085), and the wallet's chain as it last said.
//
// The page never follows the wallet: the network shown changes only when the donor picks one. A wallet on
// another chain (the donor declined the switch, or switched in the wallet later) blocks Donate, and the
// send path asks the wallet's chain again right before sending (widget.mjs).
import { addChainParams } from "./eth.mjs";
import { $, CHAINS, chainName, config, render, selectedChain, show, stableCoins, state, walletErrorText } from "./page.mjs";
import * as wallet from "./wallet.mjs";

/** Read the wallet's chain into the state; unknown (null) when it does not answer with one. */
export async function refreshChain() {
  try {
    state.chainId = await wallet.chainId();
  } catch (error) {
    state.chainId = null;
    state.walletMessage = { text: error.message, kind: "error" };
  }
}

/** True when the wallet is known to be on the network shown. */
export function onSelectedChain() {
  const chain = selectedChain();
  return Boolean(chain) && state.chainId === chain.chainId;
}

/** The donor picked a network: show it, and ask a connected wallet that is elsewhere to switch. */
export async function chooseNetwork(name) {
  const chain = CHAINS.find((c) => c.chain === name);
  if (!chain || state.busy) return; // not a network the server offers, or a donation is being sent
  if (chain.chain !== state.chain) {
    state.chain = chain.chain;
    state.walletMessage = null;
    // A coin this network does not take: back to ETH, which every network takes.
    if (state.asset !== "eth" && !chain.stableCoins.some((c) => c.asset === state.asset)) state.asset = "eth";
  }
  render();
  if (state.account && state.chainId !== chain.chainId) await switchWallet();
}

/** Ask the wallet to switch to the network shown; add it first when the wallet does not know it. */
export async function switchWallet() {
  const chain = selectedChain();
  if (!chain || state.switching) return; // one request at a time: the wallet has one open already
  state.switching = true;
  state.walletMessage = null;
  render();
  try {
    try {
      await wallet.switchChain(chain.chainId);
    } catch (error) {
      if (error.kind !== "unknown-chain") throw error;
      if (!chain.walletRpcUrl) {
        state.walletMessage = {
          text:
            `Your wallet does not know ${chain.label} (chain id ${chain.chainId}) yet. Add this network in your ` +
            `wallet yourself, then switch to it: nothing can be sent on ${chain.label} before that.`,
          kind: "error",
        };
        return;
      }
      const params = addChainParams({
        chainId: chain.chainId,
        label: chain.label,
        rpcUrl: chain.walletRpcUrl,
        explorer: config.explorers?.[chain.chain] ?? null,
      });
      await wallet.addChain(params);
      // Most wallets switch to a chain they have just added; the others are asked again.
      await refreshChain();
      if (state.chainId !== chain.chainId && chain.chain === state.chain) await wallet.switchChain(chain.chainId);
    }
    await refreshChain();
    if (chain.chain === state.chain && state.chainId !== null && state.chainId !== chain.chainId) {
      state.walletMessage = {
        text: `Your wallet is still on ${chainName(state.chainId)}. Switch it to ${chain.label} to donate there.`,
        kind: "error",
      };
    }
  } catch (error) {
    const text =
      error.kind === "rejected"
        ? `You declined to switch your wallet to ${chain.label}. ` +
          `This page stays on ${chain.label} and sends nothing until your wallet is on it.`
        : walletErrorText(error, `switching the wallet to ${chain.label}`);
    state.walletMessage = { text, kind: "error" };
    await refreshChain();
  } finally {
    state.switching = false;
    render();
  }
}

/** The network's own facts on the page: the chooser's state, the badge, the sale address and its checks. */
export function renderNetwork() {
  const chain = selectedChain();
  for (const button of document.querySelectorAll("#network-choice button[data-chain]")) {
    button.setAttribute("aria-pressed", String(button.dataset.chain === state.chain));
    button.disabled = state.busy;
  }
  const badge = $("dev-chain-badge");
  if (badge) {
    show(badge, Boolean(chain?.devChain));
    badge.textContent = chain ? `${chain.label} · chain id ${chain.chainId}` : "";
  }
  $("donation-address").textContent = chain?.donationAddress ?? "";
  $("switch-network-label").textContent = chain?.label ?? "";
  $("pay-network").textContent = chain?.label ?? "";
  // What to check in the wallet: this network's recipient and coin contracts (rendered by the server).
  for (const list of document.querySelectorAll("#wallet-checks ul[data-chain]")) {
    show(list, list.dataset.chain === state.chain);
  }
  for (const input of document.querySelectorAll('input[name="asset"]')) {
    input.checked = input.value === state.asset;
    input.disabled = input.value !== "eth" && !stableCoins().some((c) => c.asset === input.value);
  }
}
