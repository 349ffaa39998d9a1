#!/usr/bin/env bash
# The Action's first step: downloads the release archive for this runner, checks it against
# the release's SHA256SUMS, unpacks it under RUNNER_TEMP and puts lbguard on the PATH.
# Inputs (action.yml passes them): LBGUARD_VERSION (`0.2.0`, `v0.2.0` or `latest`; empty:
# the tag the workflow's `uses:` names, else latest), LBGUARD_DOWNLOAD_URL (the directory
# holding the assets; empty: this repository's GitHub release). Outputs: path, version.
set -euo pipefail

fail() {
  echo "::error title=lbguard::$*" >&2
  exit 1
}

case "${RUNNER_OS:-}/${RUNNER_ARCH:-}" in
  Linux/X64) target=x86_64-unknown-linux-musl ;;
  Linux/ARM64) target=aarch64-unknown-linux-musl ;;
  macOS/X64) target=x86_64-apple-darwin ;;
  macOS/ARM64) target=aarch64-apple-darwin ;;
  Windows/X64) target=x86_64-pc-windows-msvc ;;
  *) fail "no lbguard release binary for ${RUNNER_OS:-?} ${RUNNER_ARCH:-?}; use the image (docs: lbguard check in CI)" ;;
esac
case "$target" in
  *-windows-*) asset=lbguard-$target.zip exe=lbguard.exe ;;
  *) asset=lbguard-$target.tar.gz exe=lbguard ;;
esac

# Which release: the input, else the action's own tag (`uses: OWNER/lbguard@v0.2.0`). The
# runner keeps an action at _actions/OWNER/REPO/REF, which also names it where
# github.action_ref is empty (composite actions on some runners).
repo=${ACTION_REPOSITORY:-} ref=${ACTION_REF:-}
if [ -z "$repo" ] || [ -z "$ref" ]; then
  case "${GITHUB_ACTION_PATH:-}" in
    */_actions/*/*/*)
      rest=${GITHUB_ACTION_PATH#*/_actions/}
      IFS=/ read -r owner name aref _ <<<"$rest"
      repo=${repo:-$owner/$name} ref=${ref:-$aref}
      ;;
  esac
fi
version=${LBGUARD_VERSION:-}
if [ -z "$version" ]; then
  if [[ "$ref" =~ ^v[0-9]+\.[0-9]+\.[0-9]+([.+-].*)?$ ]]; then version=$ref; else version=latest; fi
fi
if [ "$version" != latest ]; then
  version=v${version#v}
  [[ "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+([.+-][0-9A-Za-z.+-]*)?$ ]] || fail "version '$version' is not a release version (0.2.0, v0.2.0 or latest)"
fi
base=${LBGUARD_DOWNLOAD_URL:-}
if [ -z "$base" ]; then
  [ -n "$repo" ] || fail "cannot tell which repository's releases to use; set the download-url input"
  server=${GITHUB_SERVER_URL:-https://github.com}
  if [ "$version" = latest ]; then
    base=$server/$repo/releases/latest/download
  else
    base=$server/$repo/releases/download/$version
  fi
fi
base=${base%/}

dir=${RUNNER_TEMP:?}/lbguard-$version
rm -rf "$dir"
mkdir -p "$dir"
fetch() {
  curl --fail --silent --show-error --location --retry 3 --proto '=https,file' \
    --output "$dir/$1" "$base/$1" || fail "cannot download $base/$1"
}
fetch SHA256SUMS
fetch "$asset"

# `HASH  NAME` or `HASH *NAME` (binary mode).
want=$(awk -v n="$asset" '$2 == n || $2 == "*" n { print $1; exit }' "$dir/SHA256SUMS")
[ -n "$want" ] || fail "SHA256SUMS of $base names no $asset"
if command -v sha256sum >/dev/null; then
  got=$(sha256sum "$dir/$asset" | awk '{ print $1 }')
else
  got=$(shasum -a 256 "$dir/$asset" | awk '{ print $1 }')
fi
[ "$got" = "$want" ] || fail "$asset: SHA-256 is $got, SHA256SUMS says $want"
echo "lbguard: $asset matches SHA256SUMS ($got)"

case "$asset" in
  *.zip)
    if command -v unzip >/dev/null; then
      unzip -q -o "$dir/$asset" -d "$dir"
    else
      7z x -y -bd -o"$dir" "$dir/$asset" >/dev/null
    fi
    ;;
  *) tar -xzf "$dir/$asset" -C "$dir" ;;
esac
bin=$dir/lbguard-$target
[ -f "$bin/$exe" ] || fail "$asset holds no lbguard-$target/$exe"
chmod +x "$bin/$exe"
"$bin/$exe" --version || fail "$bin/$exe does not run on this runner"

echo "$bin" >>"${GITHUB_PATH:?}"
{
  echo "path=$bin/$exe"
  echo "version=$("$bin/$exe" --version | awk '{ print $2 }')"
} >>"${GITHUB_OUTPUT:?}"
