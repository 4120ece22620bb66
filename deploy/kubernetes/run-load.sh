#!/usr/bin/env bash
# Runs the distributed load test of a kustomization (default: the load base
# beside this script) on the current kubectl context and exits with the
# verdict of the merge: 0 pass, 3 a threshold failed, 4 inconclusive (a
# segment missing or generator-bound), 2 the test could not run.
#
#   run-load.sh [-k DIR] [-n SEGMENTS] [--lead SECONDS] [--run NAME]
#               [--namespace NS] [--timeout SECONDS] [--overlay-only DIR]
#
# It writes an overlay that sets SEGMENTS (with the Job's completions and
# parallelism), RUN (the results directory) and START_AT (now + lead: time
# for every segment pod to be scheduled, pull the image and connect), deletes
# the Jobs of an earlier run, applies, waits for every segment to finish,
# resumes the merge Job and prints its report. --overlay-only writes the
# overlay to DIR and stops (nothing is sent to the cluster).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
dir=$here/load
segments=""
lead=60
run="run-$(date -u +%Y%m%d-%H%M%S)"
namespace=""
timeout=7200
overlay_only=""

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 1; }
while [[ $# -gt 0 ]]; do
	case $1 in
	-k) dir=$2; shift 2 ;;
	-n) segments=$2; shift 2 ;;
	--lead) lead=$2; shift 2 ;;
	--run) run=$2; shift 2 ;;
	--namespace) namespace=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--overlay-only) overlay_only=$2; shift 2 ;;
	-h|--help) usage ;;
	*) echo "run-load.sh: unknown argument $1" >&2; usage ;;
	esac
done
[[ -z $segments || $segments =~ ^[1-9][0-9]*$ ]] || { echo "run-load.sh: -n wants a positive number, got $segments" >&2; exit 1; }
[[ $lead =~ ^[0-9]+$ ]] || { echo "run-load.sh: --lead wants seconds, got $lead" >&2; exit 1; }
[[ $run =~ ^[A-Za-z0-9._-]+$ ]] || { echo "run-load.sh: --run wants a plain directory name, got $run" >&2; exit 1; }
dir=$(cd "$dir" && pwd)
start_at=$(date -u -d "@$(( $(date +%s) + lead ))" +%Y-%m-%dT%H:%M:%SZ)

overlay=${overlay_only:-$(mktemp -d)}
[[ -n $overlay_only ]] || trap 'rm -rf "$overlay"' EXIT
mkdir -p "$overlay"
{
	echo "apiVersion: kustomize.config.k8s.io/v1beta1"
	echo "kind: Kustomization"
	echo "resources:"
	echo "  - $(realpath --relative-to="$overlay" "$dir")"
	echo "configMapGenerator:"
	echo "  - name: oipkit-load"
	echo "    behavior: merge"
	echo "    literals:"
	echo "      - RUN=$run"
	echo "      - START_AT=$start_at"
	if [[ -n $segments ]]; then
		echo "      - SEGMENTS=$segments"
		echo "patches:"
		echo "  - target: {kind: Job, name: oipkit-load}"
		echo "    patch: |-"
		echo "      - {op: replace, path: /spec/completions, value: $segments}"
		echo "      - {op: replace, path: /spec/parallelism, value: $segments}"
	fi
} > "$overlay/kustomization.yaml"
if [[ -n $overlay_only ]]; then
	echo "run-load.sh: overlay written to $overlay/kustomization.yaml"
	exit 0
fi

kc=(kubectl)
[[ -z $namespace ]] || kc+=(--namespace "$namespace")

# conditions JOB prints the Job's true conditions (Complete, Failed, ...).
conditions() { "${kc[@]}" get job "$1" -o 'jsonpath={range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}'; }
# wait_done JOB waits until the Job has completed or failed.
wait_done() {
	local deadline=$(( $(date +%s) + timeout )) c
	while :; do
		c=$(conditions "$1")
		if [[ $c == *Complete* || $c == *Failed* ]]; then
			echo "run-load.sh: job/$1: $c"
			return 0
		fi
		if (( $(date +%s) > deadline )); then
			echo "run-load.sh: job/$1 did not finish within ${timeout}s" >&2
			return 1
		fi
		sleep 5
	done
}

echo "run-load.sh: run $run, ${segments:-all} segments starting at $start_at"
"${kc[@]}" delete job oipkit-load oipkit-load-merge --ignore-not-found --wait=true
"${kc[@]}" apply -k "$overlay"
wait_done oipkit-load || exit 2
"${kc[@]}" patch job oipkit-load-merge --type merge -p '{"spec":{"suspend":false}}'
wait_done oipkit-load-merge || exit 2
"${kc[@]}" logs job/oipkit-load-merge || true
code=$("${kc[@]}" get pods -l batch.kubernetes.io/job-name=oipkit-load-merge \
	-o 'jsonpath={.items[0].status.containerStatuses[0].state.terminated.exitCode}')
[[ $code =~ ^[0-9]+$ ]] || { echo "run-load.sh: no exit status from the merge pod" >&2; exit 2; }
echo "run-load.sh: merged result in RUN=$run/merged/result.json on the results volume; exit status $code"
exit "$code"
