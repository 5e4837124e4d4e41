#!/usr/bin/env bash
# Idempotent setup for a fresh machine: system packages (apt-get) and a virtualenv at .venv with
# the pinned Python packages. Re-running it is cheap: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
APT_PACKAGES=(python3-venv)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
# python3-venv is only needed when the interpreter cannot create venvs by itself.
if [ ${#missing[@]} -gt 0 ] && ! "$PYTHON" -m venv --help >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.requirements.sha256
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r requirements.txt
  echo "$want" > "$stamp"
fi
echo "setup: ok ($(.venv/bin/python -c 'import jax; print("jax", jax.__version__)' 2>/dev/null))"
