#!/usr/bin/env bash
# Refreshes the dashboard's vendored libraries (web/static/vendor/) from the npm registry:
# the files the page loads and each library's licence, with the version and the registry's
# integrity hash recorded in VERSION. `make web-vendor`; UPLOT_VERSION=x.y.z picks another.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
UPLOT_VERSION=${UPLOT_VERSION:-1.6.32}
command -v npm >/dev/null || { echo "npm is missing: install Node.js (Debian: apt-get install -y npm)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
# npm pack checks the tarball against the registry's integrity hash.
npm pack --silent "uplot@$UPLOT_VERSION" >/dev/null
integrity=$(npm view "uplot@$UPLOT_VERSION" dist.integrity)
tar xzf "uplot-$UPLOT_VERSION.tgz"
dest="$root/web/static/vendor/uplot"
rm -rf "$dest"
mkdir -p "$dest"
cp package/dist/uPlot.iife.min.js package/dist/uPlot.min.css package/LICENSE "$dest/"
printf 'uplot %s from the npm registry (%s)\nintegrity %s\n' "$UPLOT_VERSION" "$(npm view "uplot@$UPLOT_VERSION" license)" "$integrity" >"$dest/VERSION"
echo "web/static/vendor/uplot: uplot $UPLOT_VERSION"
