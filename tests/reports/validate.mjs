// Validates policy reports against the published report schemas: the validators that
// @kubernetes-models/kyverno (npm) generates from Kyverno's CRDs, wgpolicyk8s.io/v1alpha2
// PolicyReport whole, openreports.io/v1alpha1 Report by its results and summary (the
// package has no validator for the Report object itself).
// Usage: node validate.mjs <dir with node_modules> < reports.json
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const root = process.argv[2];
const schemas = join(root, "node_modules/@kubernetes-models/kyverno/_schemas");
const load = async (name) =>
  (await import(pathToFileURL(join(schemas, `${name}.js`)).href)).validate;

const policyReport = await load("ComGithubKyvernoKyvernoApiPolicyreportV1alpha2PolicyReport");
const openResult = await load("ComGithubOpenreportsReportsApiApisOpenreportsIoV1alpha1ReportResult");
const openSummary = await load("ComGithubOpenreportsReportsApiApisOpenreportsIoV1alpha1ReportSummary");

const reports = JSON.parse(readFileSync(0, "utf8"));
const problems = [];
const check = (validate, value, where) => {
  if (!validate(value)) problems.push({ where, errors: validate.errors });
};
for (const [i, r] of reports.entries()) {
  if (r.apiVersion === "wgpolicyk8s.io/v1alpha2") {
    check(policyReport, r, `${i} PolicyReport`);
  } else if (r.apiVersion === "openreports.io/v1alpha1" && r.kind === "Report") {
    for (const [j, res] of (r.results ?? []).entries()) check(openResult, res, `${i} results[${j}]`);
    check(openSummary, r.summary ?? {}, `${i} summary`);
  } else {
    problems.push({ where: `${i}`, errors: [`unexpected ${r.apiVersion} ${r.kind}`] });
  }
}
console.log(JSON.stringify({ checked: reports.length, problems }));
process.exit(problems.length ? 1 : 0);
