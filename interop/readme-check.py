#!/usr/bin/env python3
"""readme-check.py REPORTS_DIR RUNTIME... — each runtime's README.md must agree with its report.json.

The README's "Requirements: N passed, N failed, N blocked, N lenient, N warnings, N skipped, N n/a,
N not covered" sentence must give the report's counts (blocked: not graded, every failing check of it
failed on an answer that fails another requirement), and every requirement the report fails or grades
lenient must be named in the README (its triage; skipped ones are triaged by cause, not one by one). Prints one line per disagreement and
exits 1 if there is any; `make interop` runs it after regenerating the reports, so a triage that no
longer describes the committed run fails the run instead of misleading its reader.
"""
import collections
import json
import os
import re
import sys

WORDS = [("passed", "passed"), ("failed", "failed"), ("blocked", "blocked"), ("lenient", "lenient"), ("warning", "warnings"),
         ("skipped", "skipped"), ("not-supported", "n/a"), ("not-covered", "not covered")]


def check(reports, runtime):
    problems = []
    rep_path = os.path.join(reports, runtime, "report.json")
    readme_path = os.path.join(reports, runtime, "README.md")
    if not os.path.exists(rep_path) or not os.path.exists(readme_path):
        return problems
    rep = json.load(open(rep_path))
    text = " ".join(open(readme_path).read().split())  # sentences wrap across lines
    counts = collections.Counter(q["status"] for q in rep["requirements"])
    m = re.search(r"Requirements: (\d+) passed, (\d+) failed, (\d+) blocked, (\d+) lenient, (\d+) warnings?, (\d+) skipped, "
                  r"(\d+) n/a, (\d+) not covered", text)
    if not m:
        problems.append(f"{runtime}: README.md has no 'Requirements: N passed, N failed, …' sentence")
    else:
        for (status, word), said in zip(WORDS, m.groups()):
            if int(said) != counts.get(status, 0):
                problems.append(f"{runtime}: README.md says {said} {word}, report.json has {counts.get(status, 0)}")
    for q in rep["requirements"]:
        if q["status"] in ("failed", "lenient") and not mentions(text, q["id"]):
            problems.append(f"{runtime}: {q['id']} is {q['status']} in report.json but README.md does not triage it")
    return problems


def mentions(text, rid):
    """The README names rid in full (OIP-REST-INFER-006) or abbreviated after its group (-INFER-006)."""
    if re.search(re.escape(rid) + r"\b", text):
        return True
    parts = rid.split("-")  # OIP, REST, INFER, 006
    return any(re.search(r"(?<![\w])-" + re.escape("-".join(parts[i:])) + r"\b", text) for i in range(2, len(parts) - 1))


def main():
    reports, runtimes = sys.argv[1], sys.argv[2:]
    problems = [p for r in runtimes for p in check(reports, r)]
    for p in problems:
        print("readme-check: " + p)
    if not problems:
        print(f"readme-check: {len(runtimes)} runtime READMEs agree with their report.json")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
