#!/usr/bin/env bash
# Vendors uPlot (MIT) from the npm registry into htmlpage/assets/uplot/,
# where go:embed puts it into every HTML report: the pages open offline.
# Pinned by version and by the tarball's sha256; `make vendor-js` runs it.
set -euo pipefail
VERSION=1.6.32
SHA256=4b8a8191e425658e3ea8c8c1314b0fc679c861ee3a1af2b20c7b16ba50b5133d
DEST="$(cd "$(dirname "$0")/.." && pwd)/htmlpage/assets/uplot"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
npm pack --silent "uplot@$VERSION" >/dev/null
echo "$SHA256  uplot-$VERSION.tgz" | sha256sum -c --quiet
tar xzf "uplot-$VERSION.tgz"
mkdir -p "$DEST"
cp package/dist/uPlot.iife.min.js package/dist/uPlot.min.css package/LICENSE "$DEST/"
cat > "$DEST/README.md" <<MD
# uPlot $VERSION (vendored)

From the npm registry: \`uplot@$VERSION\` (tarball sha256 \`$SHA256\`),
files \`dist/uPlot.iife.min.js\`, \`dist/uPlot.min.css\` and \`LICENSE\` (MIT,
Copyright (c) 2022 Leon Sorokin). Embedded into oipkit's HTML reports by
\`htmlpage\`; regenerate with \`make vendor-js\` (scripts/vendor-uplot.sh).
MD
echo "vendored uPlot $VERSION into $DEST"
