#!/usr/bin/env bash
# Installs the wheels .ci/gpu_wheels.sh prepared, on the GPU machine without network access:
#
#   bash .ci/gpu_install.sh [DIR=gpu_wheels] [extra pip args, e.g. --break-system-packages]
#
# Needs only bash, coreutils and the machine's Python with pip (PYTHON, default python3), which
# already has jax with CUDA and the rest of the stack gpu_wheels.sh lists. Checks first that DIR
# holds every wheel, unchanged (SHA256SUMS), built for this Python (PYTHON_VERSION), then runs
#
#   $PYTHON -m pip install --no-index --find-links DIR -r DIR/requirements.txt [extra pip args]
#
# (gymnasium, ale-py, envpool, rlax and tensorboardX at requirements.txt's pins; pip takes their
# missing dependencies from DIR), then imports them and steps an envpool Atari env. Every failure
# ends with one line starting with "gpu_install:" that says what to do.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="$ROOT/gpu_wheels"
if [ $# -gt 0 ] && [[ "$1" != -* ]]; then DIR="$1"; shift; fi
PYTHON="${PYTHON:-python3}"
REBUILD="bash .ci/gpu_wheels.sh"

fail() { echo "gpu_install: $*" >&2; exit 1; }

for f in requirements.txt SHA256SUMS PYTHON_VERSION; do
  [ -f "$DIR/$f" ] \
    || fail "no $DIR/$f: carry the folder '$REBUILD' makes (with network) to $DIR"
done
want=$(cat "$DIR/PYTHON_VERSION")
have=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) \
  || fail "cannot run $PYTHON (set PYTHON to this machine's Python)"
[ "$want" = "$have" ] || fail "the wheels in $DIR are for Python $want, $PYTHON is $have:" \
                              "rebuild them with '$REBUILD $have'"
"$PYTHON" -m pip --version >/dev/null 2>&1 || fail "$PYTHON has no pip"
n=0
while read -r sum file; do
  file="${file#\*}"
  [ -f "$DIR/$file" ] || fail "wheel $DIR/$file is missing: carry the whole folder again" \
                              "(or rebuild it with '$REBUILD $want')"
  [ "$(sha256sum < "$DIR/$file" | cut -d' ' -f1)" = "$sum" ] \
    || fail "wheel $DIR/$file is damaged (sha256 differs from SHA256SUMS): carry it again"
  n=$((n + 1))
done < "$DIR/SHA256SUMS"
[ "$n" -gt 0 ] || fail "$DIR/SHA256SUMS lists no wheel: rebuild the folder with '$REBUILD $want'"

log=$(mktemp); trap 'rm -f "$log"' EXIT
echo "gpu_install: $PYTHON -m pip install --no-index --find-links $DIR -r $DIR/requirements.txt $*"
if ! "$PYTHON" -m pip install --no-index --find-links "$DIR" -r "$DIR/requirements.txt" "$@" 2>&1 \
    | tee "$log"; then
  if grep -q "externally-managed-environment" "$log"; then
    fail "$PYTHON's packages are managed by the OS (PEP 668): rerun with" \
         "--break-system-packages, or use a venv made with --system-site-packages"
  fi
  missing=$(sed -nE 's/.*No matching distribution found for ([^ ]+).*/\1/p' "$log" | head -1)
  [ -z "$missing" ] || fail "'$missing' is neither installed here nor among the wheels in" \
                            "$DIR: install it, or add it to DEPS in .ci/gpu_wheels.sh and rebuild"
  fail "pip install from $DIR failed (its messages are above)"
fi

"$PYTHON" - <<'EOF' || fail "the installed packages do not import or run (the error is above)"
import ale_py, envpool, gymnasium, rlax, tensorboardX
import numpy as np
env = envpool.make("Pong-v5", env_type="gymnasium", num_envs=2, batch_size=2)
obs, _ = env.reset()
obs, *_ = env.step(np.zeros(2, np.int32))
assert obs.shape == (2, 4, 84, 84), obs.shape
print(f"gpu_install: ok (envpool {envpool.__version__}, ale-py {ale_py.__version__}, "
      f"gymnasium {gymnasium.__version__}, rlax {rlax.__version__}, "
      f"tensorboardX {tensorboardX.__version__})")
EOF
