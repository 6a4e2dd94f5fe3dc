// Vendors the page's npm dependencies into web/static/web/vendor/ so the page never needs a CDN.
//
// Run by `make assets` (part of `make run` and `make test`). It copies each pinned package's ESM
// build and licence out of node_modules, refuses a package whose installed version is not the exact
// pin in package.json, and writes manifest.json (package -> version, file -> sha256) so a test can
// prove the committed copies are exactly what the pins say.
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const target = join(root, "web", "static", "web", "vendor");

// package -> { file in the package: name under vendor/ }
const VENDORED = {
  "big.js": { "big.mjs": "big.mjs", "LICENCE.md": "big.js-LICENCE.md" },
  // The QR encoder of the phone payment request (one ES module, no imports): the code is drawn on the
  // page, never fetched from a QR service.
  uqr: { "dist/index.mjs": "uqr.mjs", LICENSE: "uqr-LICENSE" },
};

const pins = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).dependencies ?? {};
const manifest = { packages: {}, files: {} };
mkdirSync(target, { recursive: true });

for (const [name, files] of Object.entries(VENDORED)) {
  const pin = pins[name];
  if (!pin || !/^\d+\.\d+\.\d+$/.test(pin)) {
    throw new Error(`${name}: package.json must pin an exact version under "dependencies", found ${pin}`);
  }
  const source = join(root, "node_modules", name);
  const installed = JSON.parse(readFileSync(join(source, "package.json"), "utf8")).version;
  if (installed !== pin) {
    throw new Error(`${name}: node_modules has ${installed} but package.json pins ${pin}; run npm ci`);
  }
  manifest.packages[name] = pin;
  for (const [from, to] of Object.entries(files)) {
    copyFileSync(join(source, from), join(target, to));
    manifest.files[to] = createHash("sha256").update(readFileSync(join(target, to))).digest("hex");
  }
}

writeFileSync(join(target, "manifest.json"), JSON.stringify(manifest, null, 2) + "\n");
console.log(`vendored ${Object.keys(manifest.files).length} files into ${target}`);
