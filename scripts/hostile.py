#!/usr/bin/env python3
"""Sends the hostile requests of the protocol-core acceptance list to a running
oipkit serve (REST port as argv[1]) and checks the server is still live after
each. Pair with /proc/<pid>/status VmHWM to read peak RSS, e.g.
  bin/oipkit serve --http 127.0.0.1:18901 --grpc 127.0.0.1:18902 --read-timeout 5s &
  python3 scripts/hostile.py 18901; grep VmHWM /proc/$!/status
"""
import socket, json, time, urllib.request, sys
H, P = "127.0.0.1", int(sys.argv[1])
def raw(data, wait=5.0):
    s = socket.create_connection((H, P)); s.settimeout(wait)
    out = b""
    try:
        s.sendall(data)
    except Exception as e:
        out += b"<send: " + str(e).encode() + b">"
    try:
        while True:
            b = s.recv(65536)
            if not b: break
            out += b
    except Exception as e:
        out += b" <" + str(e).encode() + b">"
    s.close(); return out.split(b"\r\n")[0] + b" | " + out[-160:].replace(b"\r\n", b" ")
def post(body, headers=b""):
    return raw(b"POST /v2/models/add_sub/infer HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %d\r\n%s\r\n" % (len(body), headers) + body)
def live():
    return urllib.request.urlopen(f"http://{H}:{P}/v2/health/live").status
cases = [
 ("IHCL 1GiB", lambda: post(b'{"inputs":[]}', b"Inference-Header-Content-Length: 1073741824\r\n")),
 ("shape overflow", lambda: post(json.dumps({"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[9223372036854775807,2],"data":[1,2,3]}]}).encode())),
 ("1e9 elements, 3 values", lambda: post(json.dumps({"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1000000000],"data":[1,2,3]}]}).encode())),
 ("1e9 elements binary 3 values", lambda: post(b'{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1000000000,16],"parameters":{"binary_data_size":12}}]}' + b"\x00"*12, b"Inference-Header-Content-Length: 110\r\n")),
 ("truncated binary", lambda: post(b'{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1,16],"parameters":{"binary_data_size":64}}]}' + b"\x00"*10, b"Inference-Header-Content-Length: 101\r\n")),
 ("nested 100000", lambda: post(b'{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1,16],"data":' + b"["*100000 + b"1" + b"]"*100000 + b'}]}')),
 ("body never finishes", lambda: raw(b"POST /v2/models/add_sub/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n0123456789", wait=90)),
 ("body 100 MiB", lambda: post(b'{"inputs":[{"name":"INPUT0","datatype":"BYTES","shape":[1],"data":["' + b"a"*(100<<20) + b'"]}]}')),
]
for k, f in cases:
    v = f()
    print(f"{k:30s} -> {v[:200]!r}  live={live()}", flush=True)
