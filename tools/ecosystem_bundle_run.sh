#!/usr/bin/env bash
# run.sh of the bundle that tools/ecosystem_bundle.sh builds: both columns of
# tools/ecosystem_tests.sh --offline over every library, on a machine without network or pip,
# within one command's time, and everything packed into ONE file $OUT/eco.tgz.
#
# usage, from the root of a jaxlite checkout (its src/ is the jaxlite column's jaxlite):
#   bash BUNDLE/eco/run.sh [TOTAL_SECONDS]      (default 525; OUT must be set)
# environment: ECO_LIBS (default all 14), ECO_COLUMNS ("jax lite"), ECO_N (xdist workers,
#   default cores - 1), ECO_JAX_SHARE (percent of the suites' time the JAX column gets, 70)
#
# The JAX column runs first (JAX_PLATFORMS=cpu, the machine's python with the bundle's libraries
# first on PYTHONPATH), then the jaxlite column (the checkout's shim and src first); each
# library's limit is its share of its column's time left (tools/ecosystem_tests.sh --budget).
# The suites are the checkout's tools/ecosystem_suites/<lib>.txt where it has one, else the
# bundle's copy. eco.tgz holds logs/<lib>-<column>.{log,xml,result}, table.md (the table and the
# per-library test-by-test summary), compare.txt (the differing tests), suites/ (the suite files
# that ran), env.txt and run.log
# (with ECO_COLUMNS one column: table-<column>.md, env-<column>.txt, run-<column>.log).
set -u
E="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$PWD"
TOTAL="${1:-525}"
: "${OUT:?run.sh writes \$OUT/eco.tgz: set OUT}"
LIBS="${ECO_LIBS:-jraph lineax evosax chex equinox optimistix jaxopt ott optax blackjax haiku diffrax numpyro flax}"
COLUMNS="${ECO_COLUMNS:-jax lite}"
N="${ECO_N:-$(( $(nproc) - 1 ))}"
SHARE="${ECO_JAX_SHARE:-70}"
R="$E/result"
mkdir -p "$R"
# One column per call (two calls, for the time): its files are named after it, so that the two
# calls' eco.tgz unpack into one folder (tools/ecosystem_tests.sh --report and
# tools/ecosystem_compare.py then read both columns there).
TAG=""
case "$COLUMNS" in jax|lite) TAG="-$COLUMNS";; esac
exec > >(tee "$R/run$TAG.log") 2>&1
PY=""  # the machine's python that imports JAX
for p in python3 python; do
  (cd / && "$p" -c 'import jax' 2>/dev/null) && { PY="$(command -v "$p")"; break; }
done
[ -n "$PY" ] || { echo "run.sh: no python here imports jax"; PY="$(command -v python3)"; }

# The suites: the bundle's, then the checkout's over them.
[ -d "$REPO/tools/ecosystem_suites" ] && cp "$REPO"/tools/ecosystem_suites/*.txt "$E/suites/" 2>/dev/null
mkdir -p "$R/suites" && cp "$E"/suites/*.txt "$R/suites/" 2>/dev/null  # what ran, with the results
# pytest, xdist, hypothesis, matplotlib: the bundle's, ahead of the machine's own
export PYTHONPATH="$E/pydeps${PYTHONPATH:+:$PYTHONPATH}"
export MPLBACKEND=Agg

{
  echo "date: $(date -u +%FT%TZ)"; echo "host: $(uname -m), $(nproc) cores"
  echo "python: $PY, $("$PY" -V 2>&1)"; echo "xdist workers: $N"; echo "libraries: $LIBS"
  (cd / && PYTHONPATH="$E/libs:$PYTHONPATH" "$PY" -c 'import jax, jaxlib, numpy, scipy, pytest, xdist
print("JAX column: jax", jax.__version__, jax.__file__, "jaxlib", jaxlib.__version__)
print("numpy", numpy.__version__, "scipy", scipy.__version__, "pytest", pytest.__version__, pytest.__file__, "xdist", xdist.__version__)' 2>&1)
  (cd / && PYTHONPATH="$REPO/src/jaxlite/_jax_shim:$REPO/src:$E/libs:$PYTHONPATH" "$PY" -c 'import jax
print("jaxlite column: import jax ->", jax.__file__)' 2>&1)
  echo "checkout: $(git -C "$REPO" log -1 --format='%h %s' 2>/dev/null || echo 'no git')"
  echo "suites: $(cd "$E/suites" && ls *.txt 2>/dev/null | tr '\n' ' ')"
  echo "budget: $TOTAL s in all; JAX column $SHARE% of the suites' time"
} > "$R/env$TAG.txt"
cat "$R/env$TAG.txt"

common=(--offline --python "$PY" --libs-path "$E/libs" --src "$E/src" --lite-src "$REPO/src"
  --suites "$E/suites" --dir "$R" -n "$N" --kill-after 20 --libs "$LIBS")
# 25 s kept for the report, the comparison and the packing
suites_time=$(( TOTAL - SECONDS - 25 ))
for col in $COLUMNS; do
  if [ "$col" = jax ]; then
    budget=$(( suites_time * SHARE / 100 ))
    [ "$COLUMNS" = jax ] && budget=$suites_time
    echo "== JAX column, $budget s ($(date -u +%T))"
    bash "$E/tools/ecosystem_tests.sh" "${common[@]}" --no-lite --budget "$budget" > "$R/table-jax.md"
  else
    budget=$(( TOTAL - SECONDS - 25 ))
    echo "== jaxlite column, $budget s ($(date -u +%T))"
    bash "$E/tools/ecosystem_tests.sh" "${common[@]}" --no-jax --budget "$budget" > "$R/table.md"
  fi
done
[ -f "$R/table.md" ] || mv "$R/table-jax.md" "$R/table.md"
[ -n "$TAG" ] && mv "$R/table.md" "$R/table$TAG.md"
if [ -z "$TAG" ]; then
  echo "== comparison ($(date -u +%T))"
  (cd "$R/logs" && timeout 20 "$PY" "$E/tools/ecosystem_compare.py" --max 300 . $LIBS > "$R/compare.txt" 2>&1)
fi
cat "$R/table$TAG.md"
echo "== done in $SECONDS s ($(date -u +%T))"
tar -czf "$OUT/eco.tgz" -C "$E" result
ls -la "$OUT/eco.tgz"
