#!/usr/bin/env bash
# Installs protoc from Debian's protobuf-compiler package (needs root or sudo).
set -euo pipefail
if command -v protoc >/dev/null; then exit 0; fi
"$(dirname "$0")/apt-install.sh" protobuf-compiler
