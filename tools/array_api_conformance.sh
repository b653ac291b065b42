#!/usr/bin/env bash
# Runs the Array API standard's own test suite (data-apis/array-api-tests) against
# jaxlite.numpy and, for comparison, real jax.numpy; appends the counts to CONFORMANCE.md.
#
# Usage: tools/array_api_conformance.sh [PATH_TO_ARRAY_API_TESTS_CHECKOUT]
#
# Without a path it clones the suite at the pinned ref (with its array-api spec submodule) into
# $ARRAY_API_TESTS_DIR; where GitHub is unreachable, pass a local checkout instead.
# Environment knobs (defaults in brackets):
#   ARRAY_API_TESTS_REF      the pinned commit or tag of the suite [see PINNED_REF below]
#   ARRAY_API_TESTS_DIR      where to clone it [${TMPDIR:-/tmp}/array-api-tests]
#   ARRAY_API_TESTS_VERSION  the standard's version to test [2023.12]
#   MODULES                  the namespaces to test ["jaxlite.numpy jax.numpy"]
#   MAX_EXAMPLES             hypothesis examples per test [20, the suite's default]
#   SUITE_TIMEOUT            seconds allowed per module [3600]
#   PYTEST_ARGS              extra pytest arguments (e.g. a test file, -x, --skips-file F)
# Not part of the default test command: a full run takes many minutes per module.
set -euo pipefail

PINNED_REF=035f5b8ce5c67028a187d3ecc5708b48480be6cb
REF=${ARRAY_API_TESTS_REF:-$PINNED_REF}
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
API_VERSION=${ARRAY_API_TESTS_VERSION:-2023.12}
MODULES=${MODULES:-"jaxlite.numpy jax.numpy"}
MAX_EXAMPLES=${MAX_EXAMPLES:-20}
SUITE_TIMEOUT=${SUITE_TIMEOUT:-3600}
REPORT=$REPO_ROOT/CONFORMANCE.md
PYTHON=${PYTHON:-python}

fetch_suite() {
  local dir=${ARRAY_API_TESTS_DIR:-${TMPDIR:-/tmp}/array-api-tests}
  if [ ! -d "$dir/.git" ]; then
    if ! git clone --quiet https://github.com/data-apis/array-api-tests "$dir" >&2; then
      echo "error: cannot clone https://github.com/data-apis/array-api-tests (no network to" \
           "GitHub?). Clone it elsewhere at $REF with its submodule and pass its path:" >&2
      echo "  $0 /path/to/array-api-tests" >&2
      exit 2
    fi
  fi
  git -C "$dir" fetch --quiet origin "$REF" >&2 || true
  git -C "$dir" checkout --quiet "$REF" >&2
  git -C "$dir" submodule update --init --quiet >&2
  echo "$dir"
}

count() {  # count WORD SUMMARY_LINE -> the number before WORD (0 if absent)
  local n
  n=$(grep -oE "[0-9]+ $1" <<<"$2" | grep -oE "^[0-9]+" | head -1 || true)
  echo "${n:-0}"
}

ensure_report() {
  if [ ! -f "$REPORT" ]; then
    printf '# Array API conformance\n\n| date | suite ref | module | version | passed | failed | errors | skipped | xfailed | seconds |\n|---|---|---|---|---|---|---|---|---|---|\n' > "$REPORT"
  fi
}

SUITE=${1:-}
if [ -z "$SUITE" ]; then
  SUITE=$(fetch_suite)
  SUITE_REF=$REF
else
  SUITE=$(cd "$SUITE" && pwd)
  SUITE_REF=$(git -C "$SUITE" rev-parse --short HEAD 2>/dev/null || echo "local")
fi
if [ ! -d "$SUITE/array_api_tests" ]; then
  echo "error: $SUITE has no array_api_tests/ folder: not an array-api-tests checkout" >&2
  exit 2
fi
if [ -f "$SUITE/requirements.txt" ]; then
  "$PYTHON" -m pip install --quiet -r "$SUITE/requirements.txt"
fi

ensure_report
for module in $MODULES; do
  if ! PYTHONPATH="$REPO_ROOT/src:${PYTHONPATH:-}" "$PYTHON" -c "import $module" 2>/dev/null; then
    echo "skipping $module: not importable" >&2
    continue
  fi
  log=$(mktemp)
  start=$(date +%s)
  set +e
  (cd "$SUITE" && PYTHONPATH="$REPO_ROOT/src:${PYTHONPATH:-}" \
     ARRAY_API_TESTS_MODULE="$module" ARRAY_API_TESTS_VERSION="$API_VERSION" \
     timeout "$SUITE_TIMEOUT" "$PYTHON" -m pytest array_api_tests -q -p no:cacheprovider \
       --max-examples="$MAX_EXAMPLES" --hypothesis-seed=0 --disable-warnings \
       ${PYTEST_ARGS:-}) >"$log" 2>&1
  status=$?
  set -e
  seconds=$(( $(date +%s) - start ))
  summary=$(grep -E "[0-9]+ (passed|failed|error)" "$log" | tail -1 || true)
  if [ -z "$summary" ]; then
    echo "no pytest summary for $module (exit $status); last lines of the log:" >&2
    tail -20 "$log" >&2
    continue
  fi
  row="| $(date -u +%Y-%m-%d) | ${SUITE_REF:0:12} | \`$module\` | $API_VERSION"
  for word in passed failed error skipped xfailed; do
    row="$row | $(count "$word" "$summary")"
  done
  [ "$status" = 124 ] && row="$row | >${SUITE_TIMEOUT} (timed out) |" || row="$row | $seconds |"
  echo "$row" >> "$REPORT"
  echo "$module: $summary (${seconds}s; log $log)"
done
