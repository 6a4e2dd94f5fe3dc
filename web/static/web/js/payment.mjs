// The phone's way to pay: an EIP-681 payment request (a URI a wallet app scans as a QR code or opens as
// a link) for the exact amount and asset, built from the server-pinned sale address and coin contracts.
//
//   ETH:  ethereum:<sale address>@<chain id>?value=<wei>
//   coin: ethereum:<coin contract>@<chain id>/transfer?address=<sale address>&uint256=<coin units>
//
// Amounts are base units (BigInt), written as plain integers: no float, no exponent form.
import { encode } from "../vendor/uqr.mjs";
import { isAddress } from "./eth.mjs";

const SVG = "http://www.w3.org/2000/svg";

/** The EIP-681 URI paying `units` of `asset` (null coin: ETH) to `saleAddress` on `chainId`. */
export function paymentUri({ chainId, saleAddress, coinContract = null, units }) {
  if (!Number.isSafeInteger(chainId) || chainId <= 0) throw new RangeError(`not a chain id: ${chainId}`);
  if (!isAddress(saleAddress)) throw new TypeError(`not an address: ${saleAddress}`);
  if (typeof units !== "bigint" || units <= 0n) throw new RangeError("the amount must be a positive BigInt of base units");
  if (coinContract === null) return `ethereum:${saleAddress}@${chainId}?value=${units}`;
  if (!isAddress(coinContract)) throw new TypeError(`not an address: ${coinContract}`);
  return `ethereum:${coinContract}@${chainId}/transfer?address=${saleAddress}&uint256=${units}`;
}

/**
 * Draw `text` as a QR code into `svg` (an <svg> element): dark modules on white with the standard
 * four-module quiet zone, error correction M. Drawn here, never fetched from a QR service.
 */
export function drawQr(svg, text) {
  const qr = encode(text, { ecc: "M", border: 4 });
  const dark = [];
  qr.data.forEach((row, y) =>
    row.forEach((on, x) => {
      if (on) dark.push(`M${x} ${y}h1v1h-1z`);
    }),
  );
  const background = document.createElementNS(SVG, "rect");
  background.setAttribute("width", String(qr.size));
  background.setAttribute("height", String(qr.size));
  background.setAttribute("fill", "#fff");
  const modules = document.createElementNS(SVG, "path");
  modules.setAttribute("d", dark.join(""));
  modules.setAttribute("fill", "#000");
  svg.setAttribute("viewBox", `0 0 ${qr.size} ${qr.size}`);
  svg.setAttribute("shape-rendering", "crispEdges");
  for (const old of svg.querySelectorAll("rect, path")) old.remove();
  svg.append(background, modules);
}
