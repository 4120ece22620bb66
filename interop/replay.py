#!/usr/bin/env python3
"""replay.py [--all] REPORT_JSON — run the reproducers of a report's findings file again and say
whether each still shows the defect it recorded.

For each failed requirement of REPORT_JSON (blocked ones are not findings of their own) it takes the
finding the findings file (`oipkit report --findings`, conformance/report/findings.go) shows: its
first fail finding, or its first finding when none is a fail (--all: every one of them). It runs that
finding's `reproducer` with bash from the repository root (the gRPC ones read specs/proto), 20 s at
most, and compares the answer with the finding's recorded `evidence.response`:

  REST (curl -i)   the HTTP status, then the body: parsed JSON against parsed JSON (a top-level "id"
                   the server made up for a request that sent none is not compared: it differs every
                   time), bytes against bytes when the body is not JSON; a binary-extension body as
                   its JSON header and its binary tail; a recorded body the suite clipped (…) as far
                   as it was kept. Headers are not compared (Date differs by run).
  gRPC (grpcurl)   the status code and message; on OK, the response message as parsed JSON. A stream
                   whose responses the suite read as plain ModelInferResponse (MLServer's shape)
                   cannot be decoded so by grpcurl, which reads the committed proto's
                   ModelStreamInferResponse: there the number of responses is compared.
  no answer        a finding recorded as "server stopped answering" (the server died on that request)
                   shows when the reproducer gets no answer either: curl's empty reply or reset (52,
                   56), grpcurl's Unavailable.

Prints one line per reproducer, "showed|differs|error|none REQUIREMENT-ID what" (differs with a one-
line diff; error: the reproducer could not run, timed out or its output cannot be read; none: the
finding has no request to send), then "replay: N of M reproducers showed the recorded defect" (M
counts the reproducers run) with the differing and erring counts. Exits 1 if a reproducer erred, 2 if
the report cannot be read, else 0: an answer that changed between two sendings is reported, not a
failure (see interop/README.md). Env: GRPCURL (default .tools/bin/grpcurl, else grpcurl on PATH).
"""
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT = 20

NOT_TEXT = re.compile(r"^\[(\d+) bytes, not text\] ([0-9a-f]*)(…?)$", re.S)
BINARY_TAIL = re.compile(r"^(.*)\n\[binary tail, (\d+) bytes\] ([0-9a-f]*)(…?)$", re.S)
GRPC_STATUS = re.compile(r"^gRPC (\w+)(?:: (.*))?$", re.S)


def chosen_findings(req, every):
    """The findings conformance/report/findings.go's failing() lists for a failed requirement; without
    every, the one findings.md files it with: the first whose reproducer is exact (leadWithExact)."""
    fs = [f for f in req.get("findings") or [] if f.get("class") == "fail"] or req.get("findings") or []
    if every:
        return fs
    for f in fs:
        rep = f.get("reproducer") or ""
        if rep and "NOT EXACT" not in rep:
            return [f]
    return fs[:1]


def run(cmd):
    """Runs a reproducer: (exit status or None on timeout, stdout bytes, stderr text)."""
    env = dict(os.environ)
    grpcurl = os.environ.get("GRPCURL") or os.path.join(ROOT, ".tools", "bin", "grpcurl")
    if os.path.exists(grpcurl):
        env["PATH"] = os.path.dirname(os.path.abspath(grpcurl)) + os.pathsep + env.get("PATH", "")
    try:
        p = subprocess.run(["bash", "-c", cmd], cwd=ROOT, env=env, capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, b"", ""
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def parse_json(b):
    try:
        return True, json.loads(b)
    except (ValueError, UnicodeDecodeError):
        return False, None


def first_difference(got, want, path="$"):
    """The first path at which two parsed JSON values differ, or None."""
    if isinstance(got, dict) and isinstance(want, dict):
        for k in sorted(set(got) | set(want)):
            if k not in want:
                return f"{path}.{k} is new"
            if k not in got:
                return f"{path}.{k} is gone"
            d = first_difference(got[k], want[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(got, list) and isinstance(want, list):
        if len(got) != len(want):
            return f"{path} has {len(got)} items, recorded {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            d = first_difference(g, w, f"{path}[{i}]")
            if d:
                return d
        return None
    if got != want or isinstance(got, bool) != isinstance(want, bool):
        return f"{path} is {clip(json.dumps(got))}, recorded {clip(json.dumps(want))}"
    return None


def clip(s, n=120):
    s = " ".join(str(s).split())
    return s if len(s) <= n else s[:n] + "…"


def compare_json(got, want, sent_id):
    """None when equal, else a one-line difference; a made-up top-level id is not compared."""
    if isinstance(got, dict) and isinstance(want, dict) and not sent_id and "id" in got and "id" in want:
        got, want = dict(got), dict(want)
        del got["id"], want["id"]
    return first_difference(got, want)


def compare_bytes(got, want, clipped):
    if got == want or (clipped and got.startswith(want)):
        return None
    return f"body {clip(got.decode('utf-8', 'replace'))!r}, recorded {clip(want.decode('utf-8', 'replace'))!r}"


def compare_body(got, recorded, sent_id, json_len):
    """None when the body is the recorded one, else a one-line difference."""
    m = BINARY_TAIL.match(recorded)
    if m:
        head, n, tail_hex, cut = m.group(1), int(m.group(2)), m.group(3), m.group(4)
        if json_len is None:
            return "no Inference-Header-Content-Length in the answer, recorded a binary tail"
        d = compare_body(got[:json_len], head, sent_id, None)
        if d:
            return d
        tail = got[json_len:]
        if len(tail) != n:
            return f"binary tail of {len(tail)} bytes, recorded {n}"
        return compare_bytes(tail, bytes.fromhex(tail_hex), bool(cut))
    m = NOT_TEXT.match(recorded)
    if m:
        if len(got) != int(m.group(1)):
            return f"{len(got)}-byte body, recorded {m.group(1)} bytes"
        return compare_bytes(got, bytes.fromhex(m.group(2)), bool(m.group(3)))
    clipped = recorded.endswith("…") and len(recorded.encode()) > 4 << 10
    want = recorded[:-1].encode() if clipped else recorded.encode()
    ok_got, g = parse_json(got)
    ok_want, w = parse_json(want)
    if ok_got and ok_want:
        return compare_json(g, w, sent_id)
    return compare_bytes(got, want, clipped)


def split_http(out):
    """curl -i output: (status code, headers dict lower-cased, body) of the final answer, or None."""
    while out.startswith(b"HTTP/"):
        end = out.find(b"\r\n\r\n")
        if end < 0:
            head, body = out, b""
        else:
            head, body = out[:end], out[end + 4:]
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split()
        if len(parts) < 2 or not parts[1].isdigit():
            return None
        code = int(parts[1])
        if 100 <= code < 200:  # 100 Continue and the like precede the answer
            out = body
            continue
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        return code, headers, body
    return None


def sent_id(ev):
    ok, body = parse_json((ev.get("request") or {}).get("body") or "")
    return ok and isinstance(body, dict) and "id" in body


# curl's exit statuses for a server that took the request and then closed the connection without an
# answer (52: empty reply; 56: failure receiving, a reset): what a server that dies on a request shows.
CURL_NO_ANSWER = {52: "empty reply", 56: "connection reset"}


def replay_rest(ev, rc, out, err):
    want = (ev.get("response") or {})
    if (want.get("status") or "").startswith("no answer"):
        # The suite recorded that the server stopped answering after this request.
        if rc in CURL_NO_ANSWER:
            return "showed", f"no answer (curl exited {rc}, {CURL_NO_ANSWER[rc]}), as recorded"
        if rc == 0:
            return "differs", f"answered {clip(out.decode('utf-8', 'replace').split(chr(10), 1)[0])}, recorded no answer"
    if rc != 0:
        return "error", f"curl exited {rc}: {clip(err)}"
    parsed = split_http(out)
    if parsed is None:
        return "error", f"no HTTP answer in curl's output: {clip(out.decode('utf-8', 'replace'))}"
    code, headers, body = parsed
    status = f"HTTP {code}"
    if status != want.get("status"):
        return "differs", f"{status}, recorded {want.get('status')}"
    json_len = headers.get("inference-header-content-length")
    json_len = int(json_len) if json_len and json_len.isdigit() else None
    d = compare_body(body, want.get("body") or "", sent_id(ev), json_len)
    if d:
        return "differs", f"{status} as recorded, but {d}"
    return "showed", f"{status}, body as recorded ({len(body)} bytes)"


def grpcurl_status(err):
    """grpcurl's error status from its stderr: (code, message), or None."""
    m = re.search(r"^\s*Code: (\w+)\s*\n\s*Message: (.*?)\s*$", err, re.M | re.S)
    if m:
        return m.group(1), m.group(2)
    m = re.search(r"^\s*Code: (\w+)\s*$", err, re.M)
    return (m.group(1), "") if m else None


def json_stream(text):
    """The JSON values grpcurl printed one after another."""
    dec, i, vals = json.JSONDecoder(), 0, []
    text = text.strip()
    while i < len(text):
        v, i = dec.raw_decode(text, i)
        vals.append(v)
        while i < len(text) and text[i].isspace():
            i += 1
    return vals


def replay_grpc(ev, rc, out, err):
    want = ev.get("response") or {}
    if (want.get("status") or "").startswith("no answer"):
        st = grpcurl_status(err)
        if st and st[0] == "Unavailable" or rc != 0 and st is None and re.search(r"EOF|connection reset|closed", err):
            return "showed", f"no answer (grpcurl: {clip(err)}), as recorded"
        return "differs", f"grpcurl exited {rc}: {clip(err or out.decode('utf-8', 'replace'))}, recorded no answer"
    m = GRPC_STATUS.match(want.get("status") or "")
    if not m:
        return "error", f"recorded status {clip(want.get('status'))!r} is no gRPC status to compare"
    want_code, want_msg = m.group(1), (m.group(2) or "")
    st = grpcurl_status(err)
    if st is None and rc != 0:
        return "error", f"grpcurl exited {rc} without a gRPC status: {clip(err)}"
    code, msg = st or ("OK", "")
    if (code, msg) != (want_code, want_msg):
        got = code + (f": {msg}" if msg else "")
        return "differs", f"gRPC {clip(got)}, recorded {clip(want.get('status'))}"
    try:
        got = json_stream(out.decode("utf-8", "replace"))
    except ValueError:
        return "error", f"grpcurl printed no JSON: {clip(out.decode('utf-8', 'replace'))}"
    body = want.get("body") or ""
    if code != "OK" or not body and not got:
        return "showed", f"gRPC {code}{': ' + clip(msg) if msg else ''}, as recorded"
    lines = body.split("\n") if ev["request"].get("method") == "RPC stream" else [body]
    if any(line.startswith("(as ModelInferResponse) ") for line in lines):
        if len(got) != len(lines):
            return "differs", f"{len(got)} stream responses, recorded {len(lines)}"
        return "showed", f"gRPC OK, {len(got)} stream responses as recorded (plain ModelInferResponse: count compared)"
    wants = []
    for line in lines:
        ok, w = parse_json(line)
        if not ok:
            return "error", f"recorded response {clip(line)!r} is not JSON (clipped?)"
        wants.append(w)
    if len(got) != len(wants):
        return "differs", f"{len(got)} responses, recorded {len(wants)}"
    for i, (g, w) in enumerate(zip(got, wants)):
        d = compare_json(g, w, True)
        if d:
            return "differs", f"gRPC OK, but response {i + 1}: {d}"
    return "showed", f"gRPC OK, {len(got)} response(s) as recorded"


def replay(f):
    ev, cmd = f.get("evidence"), f.get("reproducer") or ""
    if not ev or not cmd:
        return "none", "no reproducer: the finding has no request to send"
    rc, out, err = run(cmd)
    if rc is None:
        return "error", f"no answer within {TIMEOUT}s"
    if (ev.get("request") or {}).get("method", "").startswith("RPC"):
        return replay_grpc(ev, rc, out, err)
    return replay_rest(ev, rc, out, err)


def main():
    args = sys.argv[1:]
    every = "--all" in args
    args = [a for a in args if a != "--all"]
    if len(args) != 1:
        print("usage: replay.py [--all] REPORT_JSON", file=sys.stderr)
        sys.exit(2)
    try:
        rep = json.load(open(args[0]))
    except (OSError, ValueError) as e:
        print(f"replay: cannot read {args[0]}: {e}", file=sys.stderr)
        sys.exit(2)
    if not shutil.which("grpcurl") and not os.path.exists(os.environ.get("GRPCURL") or os.path.join(ROOT, ".tools", "bin", "grpcurl")):
        print("replay: grpcurl not found (make grpcurl): gRPC reproducers will err", file=sys.stderr)
    counts = {"showed": 0, "differs": 0, "error": 0, "none": 0}
    named = {"differs": [], "error": [], "none": []}
    # A requirement the server died on (the suite runs those specs last) is replayed last too: its
    # reproducer may stop the runtime, and every reproducer after it would find nothing to answer.
    def killed(q):
        return any("server stopped answering" in (f.get("message") or "") for f in q.get("findings") or [])

    for q in sorted(rep.get("requirements") or [], key=killed):
        if q.get("status") != "failed":
            continue
        for f in chosen_findings(q, every):
            verdict, what = replay(f)
            counts[verdict] += 1
            rid = q["id"]
            if verdict in ("differs", "error") and (f.get("reproducer") or "").startswith("# NOT EXACT"):
                # The report kept only part of the request (findings.md says so above the command).
                what += "; the reproducer is NOT EXACT: " + clip(f["reproducer"].split("\n", 1)[0][len("# NOT EXACT: "):], 100)
                rid += " (NOT EXACT)"
            if verdict in named:
                named[verdict].append(rid)
            print(f"{verdict} {q['id']} {what}", flush=True)
    ran = counts["showed"] + counts["differs"] + counts["error"]
    tail = "".join(f"; {k}: {', '.join(ids)}" for k, ids in named.items() if ids)
    print(f"replay: {counts['showed']} of {ran} reproducers showed the recorded defect{tail}")
    sys.exit(1 if counts["error"] else 0)


if __name__ == "__main__":
    main()
