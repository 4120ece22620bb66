#!/usr/bin/env bash
# Renders the committed conformance pages from the committed reports, without running anything:
#   reports/runtimes/RUNTIME/report.html  oipkit conform --from RUNTIME/report.json (report.md too)
#   reports/runtimes/RUNTIME/findings.md  oipkit report --findings: the defects as upstream bug reports
#   reports/compatibility.{md,html}       oipkit matrix, columns in interop/all.sh's order, then the
#                                         blocked implementations (blocked.json)
#   reports/compatibility.png             headless chromium screenshots (cmd/pagecheck: no console
#   reports/runtimes/mlserver/report.png  error, no network fetch) of the top of two pages
# make interop writes the same files from fresh runs; this is for a change of the rendering.
set -euo pipefail
cd "$(dirname "$0")/.."
REPORTS=reports/runtimes
mkdir -p bin
go build -o bin/oipkit ./cmd/oipkit
go build -o bin/pagecheck ./cmd/pagecheck

reports=()
for r in reference triton pytriton mlserver kserve torchserve; do
  [[ -f $REPORTS/$r/report.json ]] || continue
  # The exit status is the report's verdict (3: a requirement failed); only a usage error stops us.
  rc=0
  bin/oipkit conform --from "$REPORTS/$r/report.json" > /dev/null || rc=$?
  (( rc != 1 )) || exit 1
  rm -f "$REPORTS/$r/junit.xml" # not committed
  bin/oipkit report --findings "$REPORTS/$r/findings.md" "$REPORTS/$r/report.json"
  reports+=("$REPORTS/$r/report.json")
done
blocked=()
for f in "$REPORTS"/*/blocked.json; do
  [[ -f $f ]] && blocked+=("$f")
done
bin/oipkit matrix -o reports/compatibility.md --html reports/compatibility.html "${reports[@]}" "${blocked[@]}"

bin/pagecheck -screenshot reports -height 1400 reports/compatibility.html
bin/pagecheck -screenshot "$REPORTS/mlserver" -height 1400 "$REPORTS/mlserver/report.html"
