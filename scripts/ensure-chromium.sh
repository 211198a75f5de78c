#!/usr/bin/env bash
# Makes sure a headless-capable Chromium exists for the dashboard's browser test,
# installing Debian's chromium package when it does not. Prints the binary's path.
set -euo pipefail
find_chromium() {
  for c in "${TICKGATE_CHROMIUM:-}" chromium chromium-browser google-chrome; do
    if [ -n "$c" ] && command -v "$c" >/dev/null 2>&1; then command -v "$c"; return 0; fi
  done
  return 1
}
if find_chromium; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
  echo "Chromium is missing: run 'sudo apt-get install -y chromium'" >&2
  exit 1
fi
echo "installing Debian's chromium package" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >&2
apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core >&2
find_chromium
