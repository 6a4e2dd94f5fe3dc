// Every wallet extension in the browser, through EIP-6963 (multi injected provider discovery).
//
// Each wallet answers the page's "eip6963:requestProvider" event with an "eip6963:announceProvider"
// event carrying its EIP-1193 provider and a description (uuid, name, icon, rdns); a wallet that loads
// after the page announces itself unasked. That is the whole protocol, so the page listens itself
// rather than vendoring a library for it: one module, no dependency tree, tested directly.
// `window.ethereum` (whichever extension won it) stays the fallback for wallets that do not announce.

const ANNOUNCE = "eip6963:announceProvider";
const REQUEST = "eip6963:requestProvider";
const UUID_RE = /^[0-9a-f-]{1,64}$/i;
const ICON_RE = /^data:image\/(svg\+xml|png|jpeg|webp|gif)[;,]/i;

/** A wallet's description as the page may show it, or null when the announcement is malformed. */
export function walletInfo(detail) {
  const info = detail?.info;
  const provider = detail?.provider;
  if (!info || !provider || typeof provider.request !== "function") return null;
  if (typeof info.uuid !== "string" || !UUID_RE.test(info.uuid)) return null;
  const name = typeof info.name === "string" ? info.name.trim().slice(0, 60) : "";
  if (!name) return null;
  return {
    uuid: info.uuid,
    name,
    rdns: typeof info.rdns === "string" ? info.rdns.slice(0, 100) : "",
    // Shown in an <img>, where an SVG's scripts never run; only an inline image is accepted (the
    // page's Content-Security-Policy allows data: images and nothing from another origin).
    icon: typeof info.icon === "string" && ICON_RE.test(info.icon) ? info.icon : null,
    provider,
  };
}

/**
 * Start listening and ask the wallets to announce themselves. `onChange(wallets)` is called with the
 * list (in the order they announced, one entry per uuid) whenever a wallet is added.
 * Returns a function that gives the current list.
 */
export function discoverWallets(target, onChange) {
  const wallets = [];
  target.addEventListener(ANNOUNCE, (event) => {
    const wallet = walletInfo(event.detail);
    if (!wallet) return;
    const known = wallets.findIndex((w) => w.uuid === wallet.uuid);
    if (known >= 0) {
      wallets[known] = wallet; // the same wallet announcing again (e.g. after a reload of the extension)
    } else {
      wallets.push(wallet);
    }
    onChange([...wallets]);
  });
  target.dispatchEvent(new Event(REQUEST));
  return () => [...wallets];
}
