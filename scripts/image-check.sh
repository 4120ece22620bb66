#!/usr/bin/env bash
# Builds the container image twice into a temporary directory and fails unless
# both builds give the same image digest and byte-identical OCI archives. When
# skopeo is installed it must read the archive too. Run by `make image-check`
# (part of `make test`).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
: "${SOURCE_DATE_EPOCH:=$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
: "${IMAGE_REVISION:=$(git rev-parse HEAD 2>/dev/null || true)}"
: "${IMAGE_PLATFORMS:=linux/amd64,linux/arm64}"
export SOURCE_DATE_EPOCH

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in 1 2; do
	echo "image-check: build $n"
	$GO run -C deploy ./image -src "$PWD" -o "$tmp/image-$n.oci.tar" -platforms "$IMAGE_PLATFORMS" \
		-revision "$IMAGE_REVISION" -digest-file "$tmp/digest-$n"
done
d1=$(cat "$tmp/digest-1")
d2=$(cat "$tmp/digest-2")
if [[ "$d1" != "$d2" ]]; then
	echo "image-check: FAIL: the two builds gave different digests: $d1 $d2" >&2
	exit 1
fi
if ! cmp -s "$tmp/image-1.oci.tar" "$tmp/image-2.oci.tar"; then
	echo "image-check: FAIL: same digest $d1 but the archives differ" >&2
	exit 1
fi
echo "image-check: both builds gave $d1"

if command -v skopeo >/dev/null; then
	skopeo inspect --raw "oci-archive:$tmp/image-1.oci.tar" > "$tmp/raw.json"
	skopeo inspect "oci-archive:$tmp/image-1.oci.tar" > "$tmp/inspect.json"
	python3 - "$tmp/inspect.json" <<'PY'
import json, sys
i = json.load(open(sys.argv[1]))
assert i["Os"] == "linux", i
assert len(i["Layers"]) == 1, i["Layers"]
print(f"image-check: skopeo inspect: {i['Os']}/{i['Architecture']}, digest {i['Digest']}, 1 layer")
PY
else
	echo "image-check: skopeo not installed; archive read back by the Go tests only (apt-get install skopeo to add it)"
fi
