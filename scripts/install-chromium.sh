#!/usr/bin/env bash
# Installs Debian's headless-capable chromium, which the HTML page checks
# (cmd/pagecheck, the htmlpage/browser tests) drive over the DevTools
# protocol. Needs root or sudo; does nothing when chromium is installed.
set -euo pipefail
if command -v chromium >/dev/null; then exit 0; fi
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core
