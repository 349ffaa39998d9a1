#!/usr/bin/env bash
# The Action's check step: one `lbguard check` run over the inputs' paths, shown four ways:
# the log (the compiler-style text), an annotation per finding on its file and line (workflow
# commands, which a pull request shows without code scanning), the step summary (the counts,
# a table of findings, what could not be checked) and the report in the asked format. The
# failure level decides the step's result.
# Exit codes: 0 passed, 1 findings at the failure level, 2 lbguard could not check (usage,
# unreadable or unparsable files: always a failure). Outputs: report (empty when none was
# written), exit-code, checked, denied, warned.
set -uo pipefail
# `${args[@]+...}`: macOS runners may run bash 3.2, where an empty array is "unbound".

fail() {
  echo "::error title=lbguard::$*" >&2
  exit 2
}

bin=${LBGUARD:-lbguard}
level=${LBGUARD_FAILURE_LEVEL:-deny}
output=${LBGUARD_OUTPUT:-sarif}
case "$level" in
  deny | warn | none) ;;
  *) fail "failure-level is '$level'; use deny, warn or none" ;;
esac
case "$output" in
  sarif) ext=sarif ;;
  json) ext=json ;;
  junit) ext=xml ;;
  text) ext=txt ;;
  *) fail "output is '$output'; use sarif, json, junit or text" ;;
esac
report=${LBGUARD_OUTPUT_FILE:-lbguard.$ext}
# The counts come from the JSON report; every GitHub-hosted runner has jq.
jq=true
command -v jq >/dev/null || jq=false
if [ "$level" = warn ] && [ "$jq" = false ]; then
  fail "failure-level warn needs jq on the runner"
fi
if [ "${LBGUARD_UPLOAD_SARIF:-false}" = true ] && [ "$output" != sarif ]; then
  echo "::warning title=lbguard::upload-sarif is true, but output is $output: code scanning takes SARIF, so nothing is uploaded; set output: sarif (or upload-sarif: false)"
fi
# The report's directory (`reports/lbguard.sarif`): made here, or the step fails saying why.
report_dir=$(dirname -- "$report")
mkdir -p -- "$report_dir" 2>/dev/null && [ -w "$report_dir" ] ||
  fail "cannot write the report $report: its directory $report_dir cannot be created or written"

args=()
[ -z "${LBGUARD_CONFIG:-}" ] || args+=(--config "$LBGUARD_CONFIG")
[ -z "${LBGUARD_PROVIDER:-}" ] || args+=(--provider "$LBGUARD_PROVIDER")
[ -z "${LBGUARD_CLUSTER_VERSION:-}" ] || args+=(--cluster-version "$LBGUARD_CLUSTER_VERSION")
[ -z "${LBGUARD_CCM_VERSION:-}" ] || args+=(--ccm-version "$LBGUARD_CCM_VERSION")
[ -z "${LBGUARD_INVENTORY:-}" ] || args+=(--inventory "$LBGUARD_INVENTORY")
# The exclude globs reach lbguard as written (no expansion here).
set -f
# shellcheck disable=SC2206
excluded=(${LBGUARD_EXCLUDE:-})
set +f
for glob in ${excluded[@]+"${excluded[@]}"}; do
  args+=(--exclude "$glob")
done
# Extra flags and the paths: whitespace-separated, globs expanded (`manifests/*.yaml`).
# shellcheck disable=SC2206
args+=(${LBGUARD_ARGS:-})
# shellcheck disable=SC2206
paths=(${LBGUARD_PATHS:-.})
[ ${#paths[@]} -gt 0 ] || paths=(.)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -f -- "$report"

# One run: the log gets the text; the other views are reports of the same run.
"$bin" check ${args[@]+"${args[@]}"} --output text \
  --report "json=$tmp/json" --report "github=$tmp/annotations" \
  --report "markdown=$tmp/summary.md" --report "$output=$report" \
  -- "${paths[@]}"
code=$?

# The annotations: one per finding on its file, line and column, and what stopped the run.
[ ! -f "$tmp/annotations" ] || cat "$tmp/annotations"

count() {
  if [ "$jq" = true ] && [ -f "$tmp/json" ]; then
    jq -r ".summary.$1 // empty" "$tmp/json"
  fi
}
checked=$(count checked) denied=$(count denied) warned=$(count warned)
[ -f "$report" ] || report=

if [ -n "${GITHUB_OUTPUT:-}" ]; then
  {
    echo "report=$report"
    echo "exit-code=$code"
    echo "checked=$checked"
    echo "denied=$denied"
    echo "warned=$warned"
  } >>"$GITHUB_OUTPUT"
fi
case "$level" in
  deny) rule="the step fails when a Service is denied" ;;
  warn) rule="the step fails when a Service is denied or warned about" ;;
  none) rule="findings do not fail the step" ;;
esac
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  {
    if [ -f "$tmp/summary.md" ]; then
      cat "$tmp/summary.md"
    else
      printf '### lbguard check\n\nlbguard could not check (exit %s): see the step'"'"'s log.\n\n' "$code"
    fi
    echo "Failure level \`$level\`: $rule. Exit code $code.${report:+ Report: \`$report\`.}"
  } >>"$GITHUB_STEP_SUMMARY"
fi

if [ "$code" -ne 0 ] && [ "$code" -ne 1 ]; then
  fail "lbguard check could not check everything (exit $code); see the lines above"
fi
case "$level" in
  none) exit 0 ;;
  warn) [ "${denied:-0}" -eq 0 ] && [ "${warned:-0}" -eq 0 ] || exit 1 ;;
  deny) [ "$code" -eq 0 ] || exit 1 ;;
esac
exit 0
