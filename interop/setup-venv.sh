#!/usr/bin/env bash
# setup-venv.sh RUNTIME — creates .venv-interop/RUNTIME from interop/RUNTIME/requirements.txt.
# Idempotent: does nothing when the venv's stamp matches the requirements file and the interpreter.
# RUNTIME: a folder of interop/ with a requirements.txt (pytriton, mlserver, kserve, torchserve, tritonclient). INTEROP_HOME (default .venv-interop) holds the
# venvs: point it outside the work tree to keep them across fresh clones (CI). PYTHON picks the interpreter (default python3;
# PyTriton needs one built with a shared libpython, as pyenv's and Debian's are).
set -euo pipefail
RUNTIME=${1:?usage: setup-venv.sh RUNTIME}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
REQ=$HERE/$RUNTIME/requirements.txt
VENV=${INTEROP_HOME:-$ROOT/.venv-interop}/$RUNTIME
PYTHON=${PYTHON:-python3}
PIP_VERSION=26.3

[[ -f $REQ ]] || { echo "setup-venv: no $REQ" >&2; exit 2; }
want=$( { sha256sum < "$REQ"; "$PYTHON" -c 'import sys; print(sys.version)'; echo "pip $PIP_VERSION"; } | sha256sum | cut -d' ' -f1)
if [[ -f $VENV/.stamp && $(cat "$VENV/.stamp") == "$want" ]]; then
  echo "setup-venv: $RUNTIME up to date ($VENV)"
  exit 0
fi

start=$(date +%s)
# Debian's own python3 ships venv without ensurepip (package python3-venv); pyenv and
# python.org builds include it. Install the Debian package when we may.
if ! "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null; then
  if [[ $(id -u) == 0 ]] && command -v apt-get > /dev/null; then
    pkg=python$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')-venv
    echo "setup-venv: $PYTHON lacks ensurepip; installing $pkg" >&2
    "$ROOT/scripts/apt-install.sh" "$pkg"
  else
    echo "setup-venv: $PYTHON cannot create venvs (no ensurepip): install python3-venv, or set PYTHON" >&2
    exit 1
  fi
fi
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "pip==$PIP_VERSION"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$REQ"
echo "$want" > "$VENV/.stamp"
echo "setup-venv: $RUNTIME installed in $(( $(date +%s) - start ))s, $(du -sh "$VENV" | cut -f1) ($VENV)"
