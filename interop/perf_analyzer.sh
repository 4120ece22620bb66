#!/usr/bin/env bash
# perf_analyzer.sh ARGS... — runs perf_analyzer 2.60.0 inside the trixie chroot made by
# setup-perf-analyzer.sh. Paths in ARGS (-f, --profile-export-file, --input-data) are inside the
# chroot: use /tmp/... and read them from .venv-interop/trixie/tmp/... . Targets: 127.0.0.1 only.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
exec chroot "${INTEROP_HOME:-$ROOT/.venv-interop}/trixie" /opt/perf_analyzer/perf_analyzer "$@"
