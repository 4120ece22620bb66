#!/usr/bin/env bash
# Installs protoc from Debian's protobuf-compiler package (needs root or sudo).
set -euo pipefail
if command -v protoc >/dev/null; then exit 0; fi
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq protobuf-compiler
