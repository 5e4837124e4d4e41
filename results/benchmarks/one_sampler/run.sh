#!/bin/bash
# before (/work/before78 at 067824a) vs after (/work/i78-sampler), interleaved, 3 times per case.
CASES=${CASES:-cartpole16 cartpole64 atari16 minatar16 gfootball_close}
PY=/work/main/.venv/bin/python
for c in $CASES; do
  for i in 1 2 3; do
    for side in before after; do
      if [ $side = before ]; then root=/work/before78; else root=/work/i78-sampler; fi
      echo "$(date -u +%T) $c $i $side"
      (cd $root && PYTHONPATH=$root $PY -m experiments.bench_sampler --cases=$c --repeats=1 \
        --noceiling --save=/tmp/ab/${side}_${c}_${i}.json > /tmp/ab/${side}_${c}_${i}.log 2>&1) \
        || echo "FAILED $c $i $side"
    done
  done
done
echo "$(date -u +%T) done"
