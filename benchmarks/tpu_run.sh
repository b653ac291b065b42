#!/bin/bash
# Issue 30's device run on the TPU machine: `bash benchmarks/tpu_run.sh [steps]` from the
# checkout root (steps: a comma list of diag, probe, bench, examples, check; all by default;
# check: host callbacks and linalg beside JAX, benchmarks/tpu_check_callbacks_linalg.py). The log
# goes to $OUT/run.txt, the benchmark table to $OUT/table.md; examples need their libraries on
# PYTHONPATH (./site is added).
export PYTHONPATH=$PWD/src:$PYTHONPATH
OUT=${OUT:-/tmp/tpu_out}; mkdir -p $OUT
what=${1:-diag,probe,bench,examples,check}
quiet() { grep -v -E "^[IWE][0-9]{4} |Transparent hugepages|warnings.warn"; }
{
if [[ $what == *diag* ]]; then
  echo "=== diag"; timeout 90 python benchmarks/tpu_diag.py 2>&1 | quiet
fi
if [[ $what == *probe* ]]; then
  echo "=== probe jaxlite"; timeout 90 python benchmarks/tpu_probe.py 2>&1 | quiet
fi
if [[ $what == *bench* ]]; then
  echo "=== bench"; timeout 200 python benchmarks/bench_tpu.py --out /tmp/bench 2>&1 | quiet
  cp /tmp/bench/table.md /tmp/bench/*.json $OUT/
fi
if [[ $what == *check* ]]; then
  echo "=== check (callbacks, linalg)"
  timeout 400 python benchmarks/tpu_check_callbacks_linalg.py --out /tmp/tpu_check --timeout 180 \
    2>&1 | quiet | grep -E "^(ok|DIFF|both|devices|[0-9]+ of|jaxlite .*stopped|jax .*stopped)"
fi
if [[ $what == *examples* ]]; then
  export PYTHONPATH=$PYTHONPATH:$PWD/site
  for ex in "equinox_mlp.py --steps 200" "flax_nnx.py --steps 200" "diffrax_ode.py" "optax_mlp.py --steps 200" "numpyro_nuts.py"; do
    set -- $ex
    for fw in jaxlite jax; do
      echo "=== example $ex ($fw)"
      if [[ $fw == jaxlite ]]; then cmd="python -m jaxlite"; else cmd=python; fi
      timeout 60 $cmd examples/$ex > /tmp/ex.txt 2>&1; echo "rc $?"; quiet < /tmp/ex.txt | tail -6
    done
  done
  echo "=== key_concepts (diff jaxlite vs JAX)"
  timeout 60 python examples/key_concepts.py 2>/dev/null > /tmp/kc_jaxlite.txt; echo "rc $?"
  sed 's/jaxlite/jax/g' examples/key_concepts.py > /tmp/kc_jax.py
  timeout 60 python /tmp/kc_jax.py 2>/dev/null > /tmp/kc_jax.txt; echo "rc $?"
  diff /tmp/kc_jaxlite.txt /tmp/kc_jax.txt | head -40; echo "lines: $(wc -l < /tmp/kc_jaxlite.txt)"
fi
} 2>&1 | tee $OUT/run.txt
