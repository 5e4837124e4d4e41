#!/bin/bash
# The GPU runbook (docs/gpu.md) on a lent H100: offline install, a smoke run, bench_gpu parts.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "[t=$(( $(date +%s) - T0 ))s] $*"; }
exec > >(tee -a "$OUT/log.txt") 2>&1
el start; nvidia-smi -L; python3 -V; nproc; lscpu | grep "Model name"
python3 -m pip list 2>/dev/null | grep -iE "^(jax|jaxlib|jax-cuda13-plugin|flax|optax|chex|orbax-checkpoint|numpy|absl-py|tensorstore|psutil|filelock|opencv-python-headless) "
[ -n "${SKIP_INSTALL:-}" ] || bash .ci/gpu_install.sh || { el "gpu_install failed"; exit 1; }
el installed
export PYTHONPATH=$PWD
if ! python3 -c "import hts_jax.losses, hts_jax.heads" 2>&1 | tail -4; then :; fi
if ! python3 -c "import hts_jax.losses, hts_jax.heads" >/dev/null 2>&1; then
  el "import failed without shim; trying the shim"
  export PYTHONPATH=$PWD:$PWD/.gpurun
  python3 -c "import hts_jax.losses, hts_jax.heads" 2>&1 | tail -4
  python3 -c "import hts_jax.losses, hts_jax.heads" >/dev/null 2>&1 || { el "import failed"; exit 1; }
  el "SHIM USED"
fi
python3 -c "import jax; print(jax.__version__, jax.devices())"
el smoke
timeout 150 python3 -m hts_jax --preset=atari_a2c --total_steps=3200 --num_executors=16 \
  --eval_episodes=1 --notensorboard --logdir=/tmp/smoke 2>&1 | tail -25
[ -f /tmp/smoke/summary.json ] || { el "smoke failed"; exit 1; }
python3 -c "import json; s=json.load(open('/tmp/smoke/summary.json')); print({k: s.get(k) for k in ('sps','param_sha256','backend','compiled_during_run')}, s['timing'])"
el "smoke ok"
bench() {  # part out-name extra-args...
  local part=$1 name=$2; shift 2
  el "bench $part"
  timeout $(( ${DEADLINE} - ($(date +%s) - T0) )) python3 -m experiments.bench_gpu --parts=$part \
    --runs_dir=/tmp/bg --out=/tmp/out_$name --run_timeout_s=200 "$@" > /dev/null
  cp /tmp/out_$name/bench_gpu.json "$OUT/$name.json" 2>/dev/null
  el "bench $part done"
}
bench determinism det
bench atari16 a16 --scale=0.5
[ $(( $(date +%s) - T0 )) -lt $(( DEADLINE - 170 )) ] && bench ppo ppo --ppo_envs=64 --scale=0.5
tar czf "$OUT/summaries.tgz" -C /tmp bg --exclude='*.csv' --exclude='checkpoints' 2>/dev/null
el end
