// Prints the scores of Lighthouse JSON reports and fails when one is below its floor (issue #23).
//   node bench/lighthouse/scores.mjs var/lighthouse/phone.json var/lighthouse/desktop.json
import { readFileSync } from "node:fs";
import { basename } from "node:path";

const FLOORS = { performance: 90, accessibility: 95, "best-practices": 95 };
const METRICS = ["first-contentful-paint", "largest-contentful-paint", "total-blocking-time", "cumulative-layout-shift", "speed-index"];

let failed = false;
for (const file of process.argv.slice(2)) {
  const report = JSON.parse(readFileSync(file, "utf8"));
  const scores = Object.entries(FLOORS).map(([id, floor]) => {
    const score = Math.round((report.categories[id]?.score ?? 0) * 100);
    if (score < floor) failed = true;
    return `${id} ${score}${score < floor ? ` (below ${floor})` : ""}`;
  });
  const metrics = METRICS.map((id) => `${id.replace(/-/g, " ")} ${report.audits[id]?.displayValue ?? "?"}`);
  console.log(`${basename(file, ".json")} (Lighthouse ${report.lighthouseVersion}, ${report.finalDisplayedUrl}): ${scores.join(", ")}`);
  console.log(`  ${metrics.join("; ")}`);
  // What cost points, so a regression names itself.
  for (const [id, category] of Object.entries(report.categories)) {
    for (const ref of category.auditRefs) {
      const audit = report.audits[ref.id];
      if (ref.weight > 0 && audit.score !== null && audit.score < 1) console.log(`  ${id}: ${ref.id} (${audit.title}) scored ${audit.score}`);
    }
  }
}
process.exit(failed ? 1 : 0);
