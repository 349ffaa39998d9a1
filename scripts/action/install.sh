#!/usr/bin/env bash
# The Action's first step: downloads the release archive for this runner, checks it against
# the release's SHA256SUMS (and SHA256SUMS against its cosign bundle when cosign is on the
# runner), unpacks it under RUNNER_TEMP and puts lbguard on the PATH.
# Inputs (action.yml passes them): LBGUARD_VERSION (`0.2.0`, `v0.2.0` or `latest`; empty: the
# release `uses:` pins, by tag or by commit), LBGUARD_DOWNLOAD_URL (the directory holding the
# assets, https:// or file://; empty: this repository's GitHub release), ACTION_REPOSITORY,
# ACTION_REF and ACTION_TOKEN (github.action_repository, github.action_ref, github.token).
# Outputs: path, version.
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

# The action's repository and ref (`uses: OWNER/lbguard@REF`). The runner keeps an action at
# _actions/OWNER/REPO/REF, which also names them where github.action_ref is empty (composite
# actions on some runners).
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

# `uses: OWNER/lbguard@<commit>`: the release whose tag is that commit. The action's own
# Cargo.toml names the version; GitHub's REST API ("get a commit", the SHA media type) says
# which commit that version's tag is. Anything else needs the version input.
release_of_commit() {
  local sha=$1 v got
  v=$(sed -n 's/^version = "\(.*\)"$/\1/p' "${GITHUB_ACTION_PATH:-.}/Cargo.toml" 2>/dev/null | head -n 1)
  [ -n "$v" ] || fail "uses: pins commit $sha, and the action's Cargo.toml names no version; set the version input to the release to run"
  v=v$v
  [ -n "$repo" ] && [ -n "${GITHUB_API_URL:-}" ] ||
    fail "uses: pins commit $sha; cannot ask which release it is (no repository or GITHUB_API_URL); set the version input (version: ${v#v})"
  local auth=()
  [ -z "${ACTION_TOKEN:-}" ] || auth=(-H "Authorization: Bearer $ACTION_TOKEN")
  got=$(curl --fail --silent --show-error --location --retry 3 --proto '=https,file' \
    -H "Accept: application/vnd.github.sha" ${auth[@]+"${auth[@]}"} \
    "${GITHUB_API_URL%/}/repos/$repo/commits/$v" 2>&1) ||
    fail "uses: pins commit $sha; cannot confirm that it is release $v ($got); set the version input (version: ${v#v})"
  got=$(tr -d '[:space:]' <<<"$got")
  [ "$got" = "$sha" ] ||
    fail "uses: pins commit $sha, which is not release $v (tag $v is commit $got); pin a release's commit, or set the version input"
  echo "lbguard: commit $sha is release $v" >&2
  echo "$v"
}

version=${LBGUARD_VERSION:-}
if [ -z "$version" ]; then
  if [[ "$ref" =~ ^v[0-9]+\.[0-9]+\.[0-9]+([.+-].*)?$ ]]; then
    version=$ref
  elif [[ "$ref" =~ ^[0-9a-f]{40}$ ]]; then
    version=$(release_of_commit "$ref") || exit 1
  else
    version=latest
    # A mirror (download-url) holds what it holds; GitHub's latest release is news.
    [ -n "${LBGUARD_DOWNLOAD_URL:-}" ] ||
      echo "::notice title=lbguard::uses: ${repo:-this action}@${ref:-?} is neither a release tag nor a commit: running the latest release (pin a release, or set the version input)"
  fi
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
scheme=$(tr '[:upper:]' '[:lower:]' <<<"${base%%:*}")
case "$scheme://${base#*://}" in
  https://* | file://*) ;;
  http://*) fail "download-url $base is plain HTTP, which anyone on the way can change; serve the mirror over https:// (or give a file:// directory)" ;;
  *) fail "download-url $base is neither https:// nor file://" ;;
esac

dir=${RUNNER_TEMP:?}/lbguard-$version
rm -rf "$dir"
mkdir -p "$dir"
fetch() {
  curl --fail --silent --show-error --location --retry 3 --proto '=https,file' \
    --output "$dir/$1" "$base/$1" || fail "cannot download $base/$1"
}
fetch SHA256SUMS

# SHA256SUMS signed by the release workflow (keyless, GitHub's OIDC identity), when cosign
# is on the runner; then every archive it names is the release's.
if command -v cosign >/dev/null; then
  [ -n "$repo" ] || fail "cosign is on the runner, but which repository's release workflow signed the release is unknown"
  identity="${GITHUB_SERVER_URL:-https://github.com}/$repo/.github/workflows/release.yml@refs/tags/"
  if [ "$version" = latest ]; then
    # sed: bash versions differ on backslashes in ${var//./...} replacements.
    # shellcheck disable=SC2001
    who=(--certificate-identity-regexp "^$(sed 's/[.]/\\./g' <<<"$identity")v")
  else
    who=(--certificate-identity "$identity$version")
  fi
  fetch SHA256SUMS.sigstore.json
  cosign verify-blob "$dir/SHA256SUMS" --bundle "$dir/SHA256SUMS.sigstore.json" \
    --certificate-oidc-issuer https://token.actions.githubusercontent.com "${who[@]}" >&2 ||
    fail "SHA256SUMS of $base is not signed by $repo's release workflow (cosign verify-blob)"
  echo "lbguard: SHA256SUMS is signed by $repo's release workflow (cosign)"
else
  echo "lbguard: cosign is not on the runner: SHA256SUMS's signature is not checked (sigstore/cosign-installer before this step checks it)"
fi
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
