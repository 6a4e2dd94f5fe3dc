// Which wallet the page talks to when several are installed, and the chooser that asks the donor.
//
// One wallet announced (EIP-6963): that one. Several: the donor picks on Connect, and the pick is
// remembered in this browser (by the wallet's rdns) so the next visit reconnects to the same wallet
// without asking. None announced: `window.ethereum`, as before EIP-6963.
import { discoverWallets } from "./discovery.mjs";
import * as wallet from "./wallet.mjs";

const REMEMBER_KEY = "dws.wallet";

const choice = { wallets: [], picked: null, open: false, onChange: () => {} };

function remembered() {
  try {
    return localStorage.getItem(REMEMBER_KEY);
  } catch {
    return null; // storage disabled: ask every visit
  }
}

function remember(entry) {
  try {
    localStorage.setItem(REMEMBER_KEY, entry.rdns || entry.uuid);
  } catch {
    // storage disabled: nothing to keep
  }
}

/** The wallet in use: the donor's pick (now or on an earlier visit), else the only one announced. */
function inUse() {
  return choice.picked ?? (choice.wallets.length === 1 ? choice.wallets[0] : null);
}

function apply() {
  if (!choice.picked) {
    const key = remembered();
    choice.picked = (key && choice.wallets.find((w) => w.rdns === key || w.uuid === key)) || null;
  } else {
    // the same wallet announcing again brings its provider anew
    choice.picked = choice.wallets.find((w) => w.uuid === choice.picked.uuid) ?? choice.picked;
  }
  wallet.useProvider(inUse()?.provider ?? null);
}

/** Listen for wallets; `onChange()` is called when the list or the pick changes. */
export function start(onChange) {
  choice.onChange = onChange;
  discoverWallets(window, (wallets) => {
    choice.wallets = wallets;
    apply();
    onChange();
  });
}

/** Whether this browser has any wallet: one announced (picked or not), or `window.ethereum`. */
export function anyWallet() {
  return choice.wallets.length > 0 || wallet.provider() !== null;
}

/** True when several wallets announced themselves and the donor has not said which one to use. */
export function needed() {
  return choice.wallets.length > 1 && !choice.picked;
}

export function open() {
  choice.open = true;
}

export function isOpen() {
  return choice.open && choice.wallets.length > 1;
}

/** The wallet in use, by name, or null (window.ethereum or none). */
export function pickedName() {
  return inUse()?.name ?? null;
}

export function pick(uuid) {
  const entry = choice.wallets.find((w) => w.uuid === uuid);
  if (!entry) return false;
  choice.picked = entry;
  choice.open = false;
  remember(entry);
  wallet.useProvider(entry.provider);
  return true;
}

/** Draw the chooser into `list` (a <ul>): one button per wallet, with its icon and name. */
export function render(list, onPick) {
  const buttons = choice.wallets.map((entry) => {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "button button-secondary wallet-option";
    button.dataset.uuid = entry.uuid;
    if (entry.icon) {
      const icon = document.createElement("img");
      icon.src = entry.icon;
      icon.alt = "";
      icon.width = 24;
      icon.height = 24;
      button.append(icon);
    }
    button.append(document.createTextNode(entry.name));
    button.addEventListener("click", () => onPick(entry.uuid));
    const item = document.createElement("li");
    item.append(button);
    return item;
  });
  list.replaceChildren(...buttons);
}
