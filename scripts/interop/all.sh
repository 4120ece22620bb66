#!/usr/bin/env bash
# all.sh [RUNTIME...] — runs scripts/interop/run.sh for each runtime in turn (default: reference
# mlserver kserve pytriton), each bounded by RUNTIME_TIMEOUT seconds (default 900, venv install
# included), never two servers at once. Prints a summary and "interop: N passed, N failed".
# INTEROP_ALLOW_SETUP_FAILURE=1: a runtime whose venv cannot be installed (registry trouble) is
# reported as skipped instead of failed; a failing check is always a failure.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
RUNTIMES=("$@")
(( ${#RUNTIMES[@]} )) || RUNTIMES=(reference mlserver kserve pytriton)
LOGDIR=${INTEROP_HOME:-$ROOT/.venv-interop}/run
mkdir -p "$LOGDIR"
passed=0 failed=0 skipped=0 summary=()

for r in "${RUNTIMES[@]}"; do
  t0=$(date +%s)
  if [[ $r != reference ]] && ! timeout "${RUNTIME_TIMEOUT:-900}" "$HERE/setup-venv.sh" "$r"; then
    if [[ ${INTEROP_ALLOW_SETUP_FAILURE:-0} == 1 ]]; then
      skipped=$((skipped + 1)); summary+=("$r: SKIPPED (venv install failed)")
    else
      failed=$((failed + 1)); summary+=("$r: FAILED (venv install failed)")
    fi
    continue
  fi
  timeout "${RUNTIME_TIMEOUT:-900}" "$HERE/run.sh" "$r" 2>&1 | tee "$LOGDIR/$r-check.txt"
  rc=${PIPESTATUS[0]}
  "$HERE/stop.sh" "$r" > /dev/null 2>&1  # in case timeout cut run.sh short
  last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$LOGDIR/$r-check.txt" | tail -1)
  if (( rc == 0 )); then
    passed=$((passed + 1)); summary+=("$r: ok in $(( $(date +%s) - t0 ))s (${last:-no check summary})")
  else
    failed=$((failed + 1)); summary+=("$r: FAILED rc=$rc in $(( $(date +%s) - t0 ))s (${last:-no check summary}); log $LOGDIR/$r-check.txt")
  fi
done

printf '%s\n' "${summary[@]}"
if (( skipped )); then
  echo "interop: $passed passed, $failed failed, $skipped skipped"
else
  echo "interop: $passed passed, $failed failed"
fi
(( failed == 0 ))
