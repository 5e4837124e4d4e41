#!/usr/bin/env bash
# Idempotent setup for a fresh machine: system packages (apt-get), a virtualenv at .venv with the
# pinned Python packages and this package (editable), and Google Research Football built from
# source (~7 min on 2 cores, once).
# Re-running it is cheap: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
GFOOTBALL_VERSION=2.10.2
# GFootball's build and rendering (FACTS.md recipe), Xvfb for its raw-pixel mode; OSMesa for
# MuJoCo's video frames without a display.
APT_PACKAGES=(cmake build-essential libgl1-mesa-dev libsdl2-dev libsdl2-image-dev libsdl2-ttf-dev
              libsdl2-gfx-dev libboost-all-dev libdirectfb-dev mesa-utils xvfb libosmesa6)

SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
"$PYTHON" -m venv --help >/dev/null 2>&1 || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: apt-get install ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# GPU=1: requirements-gpu.txt (requirements.txt plus JAX's CUDA 12 wheels) instead.
REQUIREMENTS=requirements.txt
[ "${GPU:-0}" = "1" ] && REQUIREMENTS=requirements-gpu.txt
stamp=.venv/.requirements.sha256
want=$(cat "$REQUIREMENTS" requirements.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: pip install -r $REQUIREMENTS"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r "$REQUIREMENTS"
  echo "$want" > "$stamp"
fi

# The package itself, editable: the console commands (.venv/bin/hts-train, ...) work in a clone and
# a script anywhere imports hts_jax from this checkout. Again when pyproject.toml changes.
stamp=.venv/.package.sha256
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || [ ! -x .venv/bin/hts-train ]; then
  echo "setup: pip install -e . (the package and its commands)"
  .venv/bin/python -m pip install -q --no-deps --no-build-isolation -e .
  echo "$want" > "$stamp"
fi

if ! .venv/bin/python -c "import gfootball.env" >/dev/null 2>&1; then
  echo "setup: building gfootball==$GFOOTBALL_VERSION from source (about 7 minutes, once)"
  PATH="$PWD/.venv/bin:$PATH" .venv/bin/python -m pip install -q --no-build-isolation \
    "gfootball==$GFOOTBALL_VERSION"
fi
echo "setup: ok ($(.venv/bin/python -c 'import jax; print("jax", jax.__version__, jax.default_backend())' 2>/dev/null))"
