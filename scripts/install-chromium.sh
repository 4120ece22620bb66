#!/usr/bin/env bash
# Installs Debian's headless-capable chromium, which the HTML page checks
# (cmd/pagecheck, the htmlpage/browser tests) drive over the DevTools
# protocol. Needs root or sudo; does nothing when chromium is installed.
set -euo pipefail
if command -v chromium >/dev/null; then exit 0; fi
"$(dirname "$0")/apt-install.sh" --no-install-recommends chromium fonts-dejavu-core
