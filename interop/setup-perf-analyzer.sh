#!/usr/bin/env bash
# setup-perf-analyzer.sh — makes perf_analyzer 2.60.0 runnable on Debian 12: a minimal Debian trixie
# chroot (glibc 2.41, GCC 14 libstdc++) in .venv-interop/trixie with the binary from the PyPI wheel
# at /opt/perf_analyzer/perf_analyzer. Needs root and Debian's apt mirror (debootstrap). Idempotent.
# Run it with interop/perf_analyzer.sh ARGS... (the chroot shares the host's loopback).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
CHROOT=${INTEROP_HOME:-$ROOT/.venv-interop}/trixie
REQ=$HERE/perf-analyzer/requirements.txt
BIN=$CHROOT/opt/perf_analyzer/perf_analyzer
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

if [[ -x $BIN ]] && chroot "$CHROOT" /opt/perf_analyzer/perf_analyzer --version > /dev/null 2>&1; then
  echo "setup-perf-analyzer: up to date ($BIN)"
  exit 0
fi
start=$(date +%s)
command -v debootstrap > /dev/null || "$ROOT/scripts/apt-install.sh" debootstrap
if [[ ! -x $CHROOT/usr/bin/env ]]; then
  rm -rf "$CHROOT"
  mkdir -p "$(dirname "$CHROOT")"
  debootstrap --variant=minbase --include=libssl3t64,zlib1g,libstdc++6 trixie "$CHROOT" "$MIRROR" > "$CHROOT.debootstrap.log"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# --platform: pip on this glibc-2.36 host would otherwise only accept the 0.1.0 placeholder.
python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_38_x86_64 \
  --python-version 3.11 --require-hashes -r "$REQ" -d "$tmp"
python3 -m zipfile -e "$tmp"/perf_analyzer-*.whl "$tmp/x"
install -D -m 0755 "$tmp/x/perf_analyzer/bin/perf_analyzer" "$BIN"
chroot "$CHROOT" /opt/perf_analyzer/perf_analyzer --version
echo "setup-perf-analyzer: ready in $(( $(date +%s) - start ))s, $(du -sh "$CHROOT" | cut -f1) ($CHROOT)"
