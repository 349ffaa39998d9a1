#!/usr/bin/env bash
# The Action's check step: runs `lbguard check` on the inputs' paths, prints the findings to
# the log, writes the report in the asked format and decides the step's result by the
# failure level. Exit codes: 0 passed, 1 findings at the failure level, 2 lbguard could not
# check (usage, unreadable or unparsable files: always a failure). Outputs: report,
# exit-code, checked, denied, warned.
set -uo pipefail
# `${args[@]+...}`: macOS runners may run bash 3.2, where an empty array is "unbound".

bin=${LBGUARD:-lbguard}
level=${LBGUARD_FAILURE_LEVEL:-deny}
output=${LBGUARD_OUTPUT:-sarif}
case "$level" in
  deny | warn | none) ;;
  *) echo "::error title=lbguard::failure-level is '$level'; use deny, warn or none" >&2; exit 2 ;;
esac
case "$output" in
  sarif) ext=sarif ;;
  json) ext=json ;;
  junit) ext=xml ;;
  text) ext=txt ;;
  *) echo "::error title=lbguard::output is '$output'; use sarif, json, junit or text" >&2; exit 2 ;;
esac
report=${LBGUARD_OUTPUT_FILE:-lbguard.$ext}
# The counts come from the JSON summary; every GitHub-hosted runner has jq.
if [ "$level" = warn ] && ! command -v jq >/dev/null; then
  echo "::error title=lbguard::failure-level warn needs jq on the runner" >&2
  exit 2
fi

args=()
[ -z "${LBGUARD_CONFIG:-}" ] || args+=(--config "$LBGUARD_CONFIG")
[ -z "${LBGUARD_PROVIDER:-}" ] || args+=(--provider "$LBGUARD_PROVIDER")
[ -z "${LBGUARD_CLUSTER_VERSION:-}" ] || args+=(--cluster-version "$LBGUARD_CLUSTER_VERSION")
[ -z "${LBGUARD_CCM_VERSION:-}" ] || args+=(--ccm-version "$LBGUARD_CCM_VERSION")
[ -z "${LBGUARD_INVENTORY:-}" ] || args+=(--inventory "$LBGUARD_INVENTORY")
# Extra flags and the paths: whitespace-separated, globs expanded (`manifests/*.yaml`).
# shellcheck disable=SC2206
args+=(${LBGUARD_ARGS:-})
# shellcheck disable=SC2206
paths=(${LBGUARD_PATHS:-.})
[ ${#paths[@]} -gt 0 ] || paths=(.)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The log: the compiler-style lines, each with its file:line:column.
"$bin" check ${args[@]+"${args[@]}"} --output text -- "${paths[@]}" | tee "$tmp/text"
# The verdict and the counts, from the JSON summary (its errors were printed above).
"$bin" check ${args[@]+"${args[@]}"} --output json -- "${paths[@]}" >"$tmp/json" 2>/dev/null
code=$?
count() { jq -r ".summary.$1 // 0" "$tmp/json" 2>/dev/null || echo 0; }
checked=$(count checked) denied=$(count denied) warned=$(count warned)

case "$output" in
  text) cp "$tmp/text" "$report" ;;
  json) cp "$tmp/json" "$report" ;;
  *) "$bin" check ${args[@]+"${args[@]}"} --output "$output" -- "${paths[@]}" >"$report" 2>/dev/null ;;
esac

if [ -n "${GITHUB_OUTPUT:-}" ]; then
  {
    echo "report=$report"
    echo "exit-code=$code"
    echo "checked=$checked"
    echo "denied=$denied"
    echo "warned=$warned"
  } >>"$GITHUB_OUTPUT"
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  echo "lbguard: $checked Service(s) checked, $denied denied, $warned allowed with warnings (failure level: $level)" >>"$GITHUB_STEP_SUMMARY"
fi

if [ "$code" -ne 0 ] && [ "$code" -ne 1 ]; then
  echo "::error title=lbguard::lbguard check could not check everything (exit $code); see the lines above" >&2
  exit 2
fi
case "$level" in
  none) exit 0 ;;
  warn) [ "$denied" -eq 0 ] && [ "$warned" -eq 0 ] || exit 1 ;;
  deny) [ "$code" -eq 0 ] || exit 1 ;;
esac
exit 0
