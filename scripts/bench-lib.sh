# bench-lib.sh — sourced by the bench-*.sh scripts: a scratch directory ($WORK) and the PIDs of
# the servers and clients a script starts (PIDS), all stopped and removed when it exits
# (KEEP_WORK=1 keeps $WORK for a look afterwards).
WORK=$(mktemp -d)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	[[ -n ${KEEP_WORK:-} ]] || rm -rf "$WORK"
}
trap cleanup EXIT
