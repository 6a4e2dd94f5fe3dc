// Evaluates page functions for the pytest cross-checks: reads [{fn, args}] as JSON on stdin and
// writes the results (or {"error": message}) as JSON on stdout. BigInt results are written as strings.
import * as eth from "../../../web/static/web/js/eth.mjs";
import * as money from "../../../web/static/web/js/money.mjs";

const functions = {
  estimateTokens: (args) => money.estimateTokens(args),
  toBaseUnits: ([amount, decimals]) => money.toBaseUnits(amount, decimals),
  erc20TransferData: ([to, units]) => eth.erc20TransferData(to, BigInt(units)),
  utf8ToHex: ([text]) => eth.utf8ToHex(text),
};

let input = "";
for await (const chunk of process.stdin) input += chunk;
const results = JSON.parse(input).map(({ fn, args }) => {
  try {
    const value = functions[fn](args);
    return typeof value === "bigint" ? value.toString() : value;
  } catch (error) {
    return { error: String(error.message) };
  }
});
process.stdout.write(JSON.stringify(results));
