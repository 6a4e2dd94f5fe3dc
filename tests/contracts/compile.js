// Regenerates artifacts/*.json (ABI + bytecode) from the Solidity sources with the pinned solc-js.
// Run from the repository root: node tests/contracts/compile.js
const fs = require("fs");
const path = require("path");
const solc = require("solc");

const here = __dirname;
const sources = {};
for (const file of fs.readdirSync(here).filter((f) => f.endsWith(".sol"))) {
  sources[file] = { content: fs.readFileSync(path.join(here, file), "utf8") };
}
const input = {
  language: "Solidity",
  sources,
  settings: {
    optimizer: { enabled: true, runs: 200 },
    evmVersion: "cancun",
    outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
  },
};
const output = JSON.parse(solc.compile(JSON.stringify(input)));
const errors = (output.errors || []).filter((e) => e.severity === "error");
if (errors.length) {
  for (const e of errors) console.error(e.formattedMessage);
  process.exit(1);
}
fs.mkdirSync(path.join(here, "artifacts"), { recursive: true });
for (const [file, contracts] of Object.entries(output.contracts)) {
  for (const [name, c] of Object.entries(contracts)) {
    if (!c.evm.bytecode.object) continue; // interfaces have nothing to deploy
    const artifact = { contractName: name, source: file, compiler: solc.version(), abi: c.abi, bytecode: "0x" + c.evm.bytecode.object };
    fs.writeFileSync(path.join(here, "artifacts", name + ".json"), JSON.stringify(artifact, null, 2) + "\n");
    console.log("wrote artifacts/" + name + ".json");
  }
}
