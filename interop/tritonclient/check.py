#!/usr/bin/env python3
"""Checks an OIP (KServe v2) server with NVIDIA's own client library, tritonclient.

usage: tritonclient/check.py --http HOST:PORT --grpc HOST:PORT
                             [--transports json,binary,grpc] [--skip-model NAME ...] [--json-content-type]
                             [--known-failure CHECK ...]

The server must deploy the fixture models of shared/spec/fixtures.md. Every datatype goes
through identity_<t>; add_sub, versioned, metadata, readiness and error answers are checked
over three transports:
  json    HTTP/REST with JSON tensor data (binary_data=False on inputs and outputs)
  binary  HTTP/REST with the binary tensor data extension (binary_data=True)
  grpc    gRPC (tritonclient always sends raw_input_contents and reads raw_output_contents)
HTTP metadata and readiness calls run under json and binary alike, so they are checked once,
under "http". FP16 is checked only over binary and gRPC (it has no JSON form); BF16 only when
the server deploys the optional identity_bf16.

Prints one line per check (PASS/FAIL/SKIP/XFAIL/XPASS), then "N passed, N failed, N skipped";
exits 1 if any check failed. --skip-model turns the checks that need that model into SKIPs, for runtimes
that cannot deploy it (see interop/*/README.md).
"""

import argparse
import math
import sys

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

# identity_<t> suffix -> (OIP datatype, numpy dtype, values for a [2,3] tensor).
# JSON cannot carry NaN, infinities or the sign of zero, so those only go in the raw variants.
IDENTITY = {
    "bool": ("BOOL", np.bool_, [True, False, True, False, False, True]),
    "uint8": ("UINT8", np.uint8, [0, 1, 127, 128, 254, 255]),
    "uint16": ("UINT16", np.uint16, [0, 1, 255, 256, 65534, 65535]),
    "uint32": ("UINT32", np.uint32, [0, 1, 2**31 - 1, 2**31, 2**32 - 2, 2**32 - 1]),
    "uint64": ("UINT64", np.uint64, [0, 1, 2**53 + 1, 2**63, 2**64 - 2, 2**64 - 1]),
    "int8": ("INT8", np.int8, [-128, -1, 0, 1, 126, 127]),
    "int16": ("INT16", np.int16, [-32768, -1, 0, 1, 255, 32767]),
    "int32": ("INT32", np.int32, [-(2**31), -1, 0, 1, 2**24 + 1, 2**31 - 1]),
    "int64": ("INT64", np.int64, [-(2**63), -1, 0, 2**53 + 1, 2**62, 2**63 - 1]),
    "fp16": ("FP16", np.float16, [0.0, 1.5, -2.0, 65504.0, 5.960464477539063e-08, 0.0999755859375]),
    "fp32": ("FP32", np.float32, [0.5, -1.25, 3.4028234663852886e38, 1.401298464324817e-45, 0.1, -7.0]),
    "fp64": ("FP64", np.float64, [0.1, -2.5, 1.7976931348623157e308, 5e-324, math.pi, 1e-300]),
    "bytes": ("BYTES", np.object_, [b"hello", b"", "w\u00f6rld".encode(), b"a b", b"0", b'"q"']),
}
# Extra values for the raw (binary/gRPC) variants: replace the first elements.
RAW_EXTRAS = {
    "fp16": [float("nan"), float("-inf"), -0.0],
    "fp32": [float("nan"), float("inf"), -0.0],
    "fp64": [float("-nan"), float("-inf"), -0.0],
    "bytes": [b"\x00\xff", b"\x01\x02\x03" * 50],
}
BF16_VALUES = [0.0, 1.0, -2.5, 3.3895313892515355e38, float("inf"), 0.0078125]

TRANSPORTS = ("json", "binary", "grpc")
DECLARED_OUTPUTS = {"add_sub": ["OUTPUT0", "OUTPUT1"]}


class Report:
    def __init__(self, known_failures=()):
        self.passed = self.failed = self.skipped = self.xfailed = 0
        self.known_failures = set(known_failures)

    def check(self, name, fn):
        known = name in self.known_failures
        try:
            detail = fn()
        except Skip as s:
            self.skipped += 1
            print(f"SKIP {name}: {s}")
            return
        except Exception as err:  # noqa: BLE001 - any failure of a check is reported, not raised
            if known:
                self.xfailed += 1
                print(f"XFAIL {name}: {type(err).__name__}: {err}")
            else:
                self.failed += 1
                print(f"FAIL {name}: {type(err).__name__}: {err}")
            return
        if known:
            # The runtime stopped failing this check: drop it from its known failures.
            self.failed += 1
            print(f"XPASS {name}: listed with --known-failure but passed")
            return
        self.passed += 1
        print(f"PASS {name}" + (f" ({detail})" if detail else ""))


class Skip(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise AssertionError(msg)


class Transport:
    """One way of talking to the server: json, binary (both HTTP) or grpc."""

    def __init__(self, kind, http_url, grpc_url, json_content_type=False):
        self.kind = kind
        # tritonclient sends pure-JSON requests without a Content-Type header.
        self.headers = {"Content-Type": "application/json"} if kind == "json" and json_content_type else None
        self.mod = grpcclient if kind == "grpc" else httpclient
        self.http_url = http_url
        self.client = grpcclient.InferenceServerClient(grpc_url) if kind == "grpc" else httpclient.InferenceServerClient(http_url)

    @property
    def binary(self):
        return self.kind != "json"

    def infer(self, model, tensors, version="", outputs=None):
        """tensors: list of (name, datatype, ndarray); outputs: names to request, None for the
        model's declared outputs over HTTP (all, unnamed, over gRPC), () to name none.
        Returns (result, {output name: ndarray})."""
        inputs = []
        for name, datatype, arr in tensors:
            inp = self.mod.InferInput(name, list(arr.shape), datatype)
            if self.kind == "grpc":
                inp.set_data_from_numpy(arr)
            else:
                inp.set_data_from_numpy(arr, binary_data=self.binary)
            inputs.append(inp)
        if outputs is None and self.kind != "grpc":
            # Named explicitly so binary_data applies per output: with none named, tritonclient
            # sets "binary_data_output": true, which a JSON-only request must not do.
            outputs = DECLARED_OUTPUTS.get(model, ["OUTPUT0"])
        requested = None
        if outputs:
            if self.kind == "grpc":
                requested = [grpcclient.InferRequestedOutput(o) for o in outputs]
            else:
                requested = [httpclient.InferRequestedOutput(o, binary_data=self.binary) for o in outputs]
        if self.kind == "grpc":
            result = self.client.infer(model, inputs, model_version=version, outputs=requested, headers=self.headers)
        else:
            # One HTTP connection per inference: uvicorn (MLServer, KServe) closes a kept-alive
            # connection after a 500 without "Connection: close", and tritonclient does not retry,
            # so the next check would fail for the previous one's answer.
            client = httpclient.InferenceServerClient(self.http_url)
            try:
                result = client.infer(model, inputs, model_version=version, outputs=requested, headers=self.headers)
            finally:
                client.close()
        return result, {name: result.as_numpy(name) for name in self.output_names(result)}

    def output_names(self, result):
        resp = result.get_response()
        if self.kind == "grpc":
            return [o.name for o in resp.outputs]
        return [o["name"] for o in resp["outputs"]]

    def output_meta(self, result, name):
        """(datatype, shape) of one output as the server described it."""
        out = result.get_output(name)
        if self.kind == "grpc":
            return out.datatype, [int(d) for d in out.shape]
        return out["datatype"], [int(d) for d in out["shape"]]

    def response_field(self, result, field):
        resp = result.get_response()
        return getattr(resp, field) if self.kind == "grpc" else resp.get(field)


def normalize_metadata(md, grpc):
    """Model metadata as {name, versions, inputs: [(name, datatype, shape)], outputs: [...]}."""
    if grpc:
        tensors = lambda ts: [(t.name, t.datatype, [int(d) for d in t.shape]) for t in ts]  # noqa: E731
        return {"name": md.name, "versions": list(md.versions), "inputs": tensors(md.inputs), "outputs": tensors(md.outputs)}
    tensors = lambda ts: [(t["name"], t["datatype"], [int(d) for d in t["shape"]]) for t in ts or []]  # noqa: E731
    return {"name": md["name"], "versions": list(md.get("versions") or []), "inputs": tensors(md.get("inputs")), "outputs": tensors(md.get("outputs"))}


def fixture_metadata():
    """The contract of shared/spec/fixtures.md: model -> (inputs, outputs)."""
    i32 = lambda n, s: (n, "INT32", s)  # noqa: E731
    fx = {
        "add_sub": ([i32("INPUT0", [-1, 16]), i32("INPUT1", [-1, 16])], [i32("OUTPUT0", [-1, 16]), i32("OUTPUT1", [-1, 16])]),
        "versioned": ([i32("INPUT0", [-1])], [i32("OUTPUT0", [-1])]),
    }
    for suffix, (dt, _, _) in IDENTITY.items():
        fx[f"identity_{suffix}"] = ([("INPUT0", dt, [-1, -1])], [("OUTPUT0", dt, [-1, -1])])
    return fx


def same_elements(got, want, datatype):
    """Bit-exact comparison (NaN payloads aside) of two arrays of one datatype."""
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, want {list(want.shape)}"
    if datatype == "BYTES":
        g = [x if isinstance(x, bytes) else str(x).encode() for x in got.flatten()]
        w = [x if isinstance(x, bytes) else str(x).encode() for x in want.flatten()]
        return None if g == w else f"{g!r}, want {w!r}"
    if datatype in ("FP16", "FP32", "FP64", "BF16"):
        g, w = got.astype(want.dtype).flatten(), want.flatten()
        gn, wn = np.isnan(g.astype(np.float64)), np.isnan(w.astype(np.float64))
        uint = {2: np.uint16, 4: np.uint32, 8: np.uint64}[w.dtype.itemsize]
        same_bits = g.view(uint) == w.view(uint)
        ok = np.all(gn == wn) and np.all(same_bits | wn)
        return None if ok else f"{g.tolist()}, want {w.tolist()}"
    if got.dtype != want.dtype:
        return f"numpy dtype {got.dtype}, want {want.dtype}"
    return None if np.array_equal(got, want) else f"{got.tolist()}, want {want.tolist()}"


def raises_client_error(fn, http):
    """Runs fn, which must raise InferenceServerException; over HTTP the status must be 4xx."""
    try:
        fn()
    except InferenceServerException as err:
        status = str(err.status())
        if http:
            expect(status.isdigit() and 400 <= int(status) < 500, f"HTTP status {status}, want 4xx: {err.message()}")
        return f"status {status}"
    raise AssertionError("no error")


def run(args):
    report = Report(args.known_failure)
    skip_models = set(args.skip_model)
    fixtures = fixture_metadata()
    transports = {k: Transport(k, args.http, args.grpc, args.json_content_type) for k in args.transports}

    def needs(model):
        if model in skip_models:
            raise Skip(f"{model} not deployed on this runtime (--skip-model)")

    # Metadata and readiness: once over HTTP, once over gRPC.
    planes = []
    if "json" in transports or "binary" in transports:
        planes.append(("http", transports.get("json") or transports.get("binary")))
    if "grpc" in transports:
        planes.append(("grpc", transports["grpc"]))
    for plane, t in planes:
        grpc = plane == "grpc"
        c = t.client
        report.check(f"{plane} server live", lambda: expect(c.is_server_live() is True, "not live"))
        report.check(f"{plane} server ready", lambda: expect(c.is_server_ready() is True, "not ready"))

        def server_metadata():
            md = c.get_server_metadata()
            name, version, ext = (md.name, md.version, list(md.extensions)) if grpc else (md["name"], md["version"], md.get("extensions"))
            expect(isinstance(name, str) and name, f"name {name!r}")
            expect(isinstance(version, str) and version, f"version {version!r}")
            expect(isinstance(ext, list), f"extensions {ext!r}")
            return f"{name} {version}, extensions {ext}"

        report.check(f"{plane} server metadata", server_metadata)

        for model, (ins, outs) in fixtures.items():

            def model_metadata(model=model, ins=ins, outs=outs):
                needs(model)
                md = normalize_metadata(c.get_model_metadata(model), grpc)
                expect(md["name"] == model, f"name {md['name']!r}")
                expect(md["inputs"] == ins, f"inputs {md['inputs']}, want {ins}")
                expect(md["outputs"] == outs, f"outputs {md['outputs']}, want {outs}")
                if model == "versioned":
                    expect({"1", "2"} <= set(md["versions"]), f"versions {md['versions']}, want 1 and 2")
                for v in (["1", "2"] if model == "versioned" else []):
                    mv = normalize_metadata(c.get_model_metadata(model, model_version=v), grpc)
                    expect(mv["inputs"] == ins and mv["outputs"] == outs, f"version {v} metadata {mv}")

            report.check(f"{plane} model metadata {model}", model_metadata)

        def ready(model, version=""):
            needs(model)
            expect(c.is_model_ready(model, model_version=version) is True, "not ready")

        report.check(f"{plane} model ready add_sub", lambda: ready("add_sub"))
        report.check(f"{plane} model ready versioned v1", lambda: ready("versioned", "1"))
        report.check(f"{plane} model ready versioned v2", lambda: ready("versioned", "2"))

        def unknown_not_ready():
            try:
                r = c.is_model_ready("no_such_model")
            except InferenceServerException as err:
                return f"raised, status {err.status()}"
            expect(r is False, f"is_model_ready returned {r!r}")
            return "False"

        report.check(f"{plane} model ready unknown model is not ready", unknown_not_ready)
        report.check(
            f"{plane} model metadata unknown model -> error",
            lambda: raises_client_error(lambda: c.get_model_metadata("no_such_model"), not grpc),
        )

    # Inference, per transport.
    for kind, t in transports.items():
        http = kind != "grpc"
        for suffix, (datatype, dtype, values) in IDENTITY.items():
            model = f"identity_{suffix}"

            def identity(model=model, datatype=datatype, dtype=dtype, values=values, suffix=suffix):
                needs(model)
                if datatype == "FP16" and kind == "json":
                    raise Skip("FP16 has no JSON form")
                vals = list(values)
                if t.binary and suffix in RAW_EXTRAS:
                    extra = RAW_EXTRAS[suffix]
                    vals[: len(extra)] = extra
                arr = np.array(vals, dtype=dtype).reshape(2, 3)
                result, out = t.infer(model, [("INPUT0", datatype, arr)])
                expect(list(out) == ["OUTPUT0"], f"outputs {list(out)}")
                dt, shape = t.output_meta(result, "OUTPUT0")
                expect(dt == datatype and shape == [2, 3], f"OUTPUT0 {dt} {shape}, want {datatype} [2, 3]")
                diff = same_elements(out["OUTPUT0"], arr, datatype)
                expect(diff is None, f"OUTPUT0 {diff}")

            report.check(f"{kind} infer {model}", identity)

        def identity_bf16():
            if kind == "json":
                raise Skip("BF16 has no JSON form")
            try:
                import ml_dtypes
            except ImportError:
                raise Skip("ml_dtypes not installed") from None
            try:
                t.client.get_model_metadata("identity_bf16")
            except InferenceServerException:
                raise Skip("identity_bf16 (optional) not deployed") from None
            arr = np.array(BF16_VALUES, dtype=ml_dtypes.bfloat16).reshape(2, 3)
            result, out = t.infer("identity_bf16", [("INPUT0", "BF16", arr)])
            diff = same_elements(out["OUTPUT0"], arr, "BF16")
            expect(diff is None, f"OUTPUT0 {diff}")

        report.check(f"{kind} infer identity_bf16", identity_bf16)

        def wide_fp32():
            if not t.binary:
                raise Skip("raw transports only")
            needs("identity_fp32")
            arr = np.random.default_rng(7).standard_normal((4, 1000)).astype(np.float32)
            _, out = t.infer("identity_fp32", [("INPUT0", "FP32", arr)])
            expect(same_elements(out["OUTPUT0"], arr, "FP32") is None, "4x1000 FP32 differs")

        report.check(f"{kind} infer identity_fp32 4x1000", wide_fp32)

        a = np.arange(32, dtype=np.int32).reshape(2, 16) * 1000 - 7
        b = np.full((2, 16), 3, dtype=np.int32)
        a[0, 0], b[0, 0] = 2**31 - 1, 1  # + wraps to INT32 min
        a[0, 1], b[0, 1] = -(2**31), 1  # - wraps to INT32 max
        a[1, 0], b[1, 0] = -(2**31), -(2**31)

        def add_sub():
            needs("add_sub")
            result, out = t.infer("add_sub", [("INPUT0", "INT32", a), ("INPUT1", "INT32", b)])
            expect(sorted(out) == ["OUTPUT0", "OUTPUT1"], f"outputs {sorted(out)}")
            for name, want in (("OUTPUT0", np.add(a, b, dtype=np.int32)), ("OUTPUT1", np.subtract(a, b, dtype=np.int32))):
                dt, shape = t.output_meta(result, name)
                expect(dt == "INT32" and shape == [2, 16], f"{name} {dt} {shape}")
                diff = same_elements(out[name], want, "INT32")
                expect(diff is None, f"{name} {diff}")
            name = t.response_field(result, "model_name")
            expect(name == "add_sub", f"response model_name {name!r}")

        report.check(f"{kind} infer add_sub (with int32 wrap-around)", add_sub)

        def add_sub_one_output():
            needs("add_sub")
            _, out = t.infer("add_sub", [("INPUT0", "INT32", a), ("INPUT1", "INT32", b)], outputs=["OUTPUT1"])
            expect(list(out) == ["OUTPUT1"], f"outputs {list(out)}, want only OUTPUT1")
            expect(same_elements(out["OUTPUT1"], np.subtract(a, b, dtype=np.int32), "INT32") is None, "OUTPUT1 differs")

        report.check(f"{kind} infer add_sub requesting OUTPUT1 only", add_sub_one_output)

        def add_sub_unnamed_outputs():
            if kind != "binary":
                raise Skip("binary only: tritonclient then sets binary_data_output=true")
            needs("add_sub")
            _, out = t.infer("add_sub", [("INPUT0", "INT32", a), ("INPUT1", "INT32", b)], outputs=())
            expect(sorted(out) == ["OUTPUT0", "OUTPUT1"], f"outputs {sorted(out)}")
            expect(same_elements(out["OUTPUT0"], np.add(a, b, dtype=np.int32), "INT32") is None, "OUTPUT0 differs")

        report.check(f"{kind} infer add_sub with binary_data_output and no outputs named", add_sub_unnamed_outputs)

        x = np.array([10, -20, 2**31 - 1], dtype=np.int32)
        for v in ("1", "2"):

            def versioned(v=v):
                needs("versioned")
                result, out = t.infer("versioned", [("INPUT0", "INT32", x)], version=v)
                want = np.add(x, np.int32(int(v)), dtype=np.int32)
                expect(same_elements(out["OUTPUT0"], want, "INT32") is None, f"OUTPUT0 {out['OUTPUT0'].tolist()}, want {want.tolist()}")
                got_v = t.response_field(result, "model_version")
                expect(got_v in (v, "", None), f"response model_version {got_v!r}, want {v!r}")
                return f"model_version {got_v!r}"

            report.check(f"{kind} infer versioned v{v}", versioned)

        def versioned_default():
            needs("versioned")
            _, out = t.infer("versioned", [("INPUT0", "INT32", x)])
            added = (out["OUTPUT0"].astype(np.int64) - x.astype(np.int64)).tolist()
            expect(added[:2] in ([1, 1], [2, 2]), f"OUTPUT0 - INPUT0 = {added}, want all 1 or all 2")
            return f"no version ran v{added[0]}"

        report.check(f"{kind} infer versioned without version", versioned_default)

        report.check(
            f"{kind} infer unknown model -> error",
            lambda: raises_client_error(lambda: t.infer("no_such_model", [("INPUT0", "INT32", x)]), http),
        )

        def wrong_shape():
            needs("add_sub")
            bad = np.ones((1, 15), np.int32)
            return raises_client_error(lambda: t.infer("add_sub", [("INPUT0", "INT32", bad), ("INPUT1", "INT32", bad)]), http)

        report.check(f"{kind} infer add_sub shape [1,15] -> error", wrong_shape)

        def wrong_datatype():
            needs("add_sub")
            bad = np.ones((1, 16), np.float32)
            return raises_client_error(lambda: t.infer("add_sub", [("INPUT0", "FP32", bad), ("INPUT1", "FP32", bad)]), http)

        report.check(f"{kind} infer add_sub FP32 inputs -> error", wrong_datatype)

        def missing_input():
            needs("add_sub")
            return raises_client_error(lambda: t.infer("add_sub", [("INPUT0", "INT32", a)]), http)

        report.check(f"{kind} infer add_sub without INPUT1 -> error", missing_input)

        def unknown_version():
            needs("versioned")
            return raises_client_error(lambda: t.infer("versioned", [("INPUT0", "INT32", x)], version="3"), http)

        report.check(f"{kind} infer versioned v3 (not loaded) -> error", unknown_version)

    for t in transports.values():
        t.client.close()
    if report.xfailed:
        print(f"{report.xfailed} known failures (--known-failure), counted as skipped below")
    print(f"{report.passed} passed, {report.failed} failed, {report.skipped + report.xfailed} skipped")
    return 1 if report.failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--http", required=True, help="HOST:PORT of the REST endpoint (no scheme)")
    p.add_argument("--grpc", required=True, help="HOST:PORT of the gRPC endpoint")
    p.add_argument("--transports", default=",".join(TRANSPORTS), help="comma-separated subset of json,binary,grpc")
    p.add_argument(
        "--json-content-type",
        action="store_true",
        help="send Content-Type: application/json on JSON infer requests (KServe needs it; tritonclient omits it)",
    )
    p.add_argument(
        "--known-failure",
        action="append",
        default=[],
        metavar="CHECK",
        help="full name of a check that fails on this runtime for a documented reason: XFAIL, and XPASS (a failure) if it passes",
    )
    p.add_argument("--skip-model", action="append", default=[], metavar="NAME", help="a fixture the server does not deploy")
    args = p.parse_args()
    args.transports = [t for t in args.transports.split(",") if t]
    unknown = set(args.transports) - set(TRANSPORTS)
    if unknown:
        p.error(f"unknown transports {sorted(unknown)}")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
