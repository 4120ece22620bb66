#!/usr/bin/env bash
# apt-install.sh [APT-OPTION...] PACKAGE... — installs Debian packages for the project's scripts:
# non-interactive and quiet, as root or through sudo. The package lists are updated only when an
# install fails (a fresh machine has none), so a second call costs no network round trip.
# Every script that needs a Debian package installs it through here.
set -euo pipefail
(( $# )) || { echo "usage: apt-install.sh [APT-OPTION...] PACKAGE..." >&2; exit 2; }
SUDO=()
[[ $(id -u) == 0 ]] || SUDO=(sudo)
install() { "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" > /dev/null; }
install "$@" 2> /dev/null || { "${SUDO[@]}" apt-get update -qq > /dev/null && install "$@"; }
