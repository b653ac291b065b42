#!/usr/bin/env bash
# Runs the Array API standard's own test suite (data-apis/array-api-tests) on jaxlite.numpy and,
# when real JAX is importable, on jax.numpy with the same options, and writes both columns
# (passed / failed / skipped, the tests only jaxlite fails, the command) into CONFORMANCE.md
# between its results markers.
#
# Usage: tools/array_api_conformance.sh [PATH_TO_ARRAY_API_TESTS] [-- EXTRA_PYTEST_ARGS...]
#
# The suite: the path given, else $ARRAY_API_TESTS_DIR, else ../shared/array-api-tests next to
# the repository (the vendored copy), else a clone of the pinned commit. It needs the
# `conformance` extra (pip install -e ".[conformance]"). Knobs (defaults in brackets):
#   MODULES        the namespaces to test ["jaxlite.numpy jax.numpy"]
#   MAX_EXAMPLES   hypothesis examples per test [20]
#   SUITE_TIMEOUT  seconds allowed per module [3600]
#   TESTS          test paths inside the suite [array_api_tests], e.g. a single file
#   REPORT         the file to write [CONFORMANCE.md]; a run given extra pytest arguments (a
#                  partial run, or TESTS set) prints its tables instead unless REPORT is set.
# Not part of the default test command or CI: a full run takes over ten minutes per module.
set -euo pipefail

PINNED_REF=41379d15d26d67a1e66c840e775d41a8a7fb1516  # the commit JAX's own CI job pins
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MODULES=${MODULES:-"jaxlite.numpy jax.numpy"}
MAX_EXAMPLES=${MAX_EXAMPLES:-20}
SUITE_TIMEOUT=${SUITE_TIMEOUT:-3600}
PYTHON=${PYTHON:-python3}

SUITE=""
if [ $# -gt 0 ] && [ "$1" != "--" ]; then SUITE=$1; shift; fi
[ "${1:-}" = "--" ] && shift
EXTRA_ARGS=("$@")
if [ ${#EXTRA_ARGS[@]} -gt 0 ] || [ -n "${TESTS:-}" ]; then
  REPORT=${REPORT:-}
else
  REPORT=${REPORT:-$REPO_ROOT/CONFORMANCE.md}
fi
read -r -a TEST_PATHS <<< "${TESTS:-array_api_tests}"

if [ -z "$SUITE" ]; then
  SUITE=${ARRAY_API_TESTS_DIR:-$REPO_ROOT/../shared/array-api-tests}
  if [ ! -d "$SUITE/array_api_tests" ]; then
    SUITE=${TMPDIR:-/tmp}/array-api-tests
    if [ ! -d "$SUITE/.git" ] && ! git clone --quiet https://github.com/data-apis/array-api-tests \
        "$SUITE" >&2; then
      echo "error: no local suite and cannot clone data-apis/array-api-tests; pass a checkout" \
           "at $PINNED_REF (with its array-api submodule) as the first argument" >&2
      exit 2
    fi
    git -C "$SUITE" checkout --quiet "$PINNED_REF" >&2
    git -C "$SUITE" submodule update --init --quiet >&2
  fi
fi
SUITE=$(cd "$SUITE" && pwd)
if [ ! -d "$SUITE/array_api_tests" ]; then
  echo "error: $SUITE has no array_api_tests/ folder: not an array-api-tests checkout" >&2
  exit 2
fi
# A vendored copy names its commit in PINNED.md; a clone knows its own.
SUITE_REF=$(grep -oE "[0-9a-f]{40}" "$SUITE/PINNED.md" 2>/dev/null | head -1 \
            || git -C "$SUITE" rev-parse HEAD 2>/dev/null || echo local)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/array-api-conformance.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
COMMAND="ARRAY_API_TESTS_MODULE=<module> JAX_ENABLE_X64=true python3 -m pytest ${TEST_PATHS[*]} \
--derandomize --disable-deadline --max-examples=$MAX_EXAMPLES --continue-on-collection-errors \
--json-report${EXTRA_ARGS[*]:+ ${EXTRA_ARGS[*]}}"

run_module() {  # run_module MODULE: the suite on one namespace, its JSON report in $WORK
  local module=$1 start status
  start=$(date +%s)
  set +e
  # From a scratch directory: hypothesis writes its example database into the working directory.
  (mkdir -p "$WORK/$module.d" && cd "$WORK/$module.d" && \
     PYTHONPATH="$REPO_ROOT/src:${PYTHONPATH:-}" ARRAY_API_TESTS_MODULE="$module" \
     JAX_ENABLE_X64=true timeout -s INT -k 120 "$SUITE_TIMEOUT" "$PYTHON" -m pytest \
       -p no:cacheprovider \
       "${TEST_PATHS[@]/#/$SUITE/}" --derandomize --disable-deadline --max-examples="$MAX_EXAMPLES" \
       --continue-on-collection-errors -q --disable-warnings \
       --json-report --json-report-file="$WORK/$module.json" "${EXTRA_ARGS[@]}") \
    >"$WORK/$module.log" 2>&1
  status=$?
  set -e
  echo "$(( $(date +%s) - start ))" > "$WORK/$module.seconds"
  echo "$module: $(tail -1 "$WORK/$module.log") (exit $status)"
  # On timeout pytest gets SIGINT, so the JSON report of the tests that ran is still written
  # (and the results are marked partial).
  if [ ! -f "$WORK/$module.json" ]; then
    echo "error: no report for $module (crashed, or ignored the timeout's SIGINT);" \
         "last lines of its log:" >&2
    tail -20 "$WORK/$module.log" >&2
    return 1
  fi
}

# The namespaces run side by side (they are independent); the report waits for all of them.
ran=() pids=()
for module in $MODULES; do
  if ! PYTHONPATH="$REPO_ROOT/src:${PYTHONPATH:-}" "$PYTHON" -c "import $module" 2>/dev/null; then
    echo "skipping $module: not importable" >&2
    continue
  fi
  run_module "$module" & pids+=($!)
  ran+=("$module")
done
for pid in "${pids[@]}"; do wait "$pid" || exit 1; done
[ ${#ran[@]} -gt 0 ] || { echo "error: no module could be tested" >&2; exit 1; }

WORK=$WORK REPORT=$REPORT SUITE_REF=$SUITE_REF COMMAND=$COMMAND "$PYTHON" - "${ran[@]}" <<'PY'
"""Turns the JSON reports into CONFORMANCE.md's results section (or prints it)."""
import datetime, json, os, re, sys

work, modules = os.environ["WORK"], sys.argv[1:]
outcomes, counts = {}, {}
for m in modules:
  rep = json.load(open(f"{work}/{m}.json"))
  res = {t["nodeid"].split("array_api_tests/", 1)[-1]: t["outcome"] for t in rep["tests"]}
  for c in rep.get("collectors", []):  # a module that fails to import counts as one error
    if c["outcome"] == "failed" and c["nodeid"].endswith(".py"):
      res[c["nodeid"].split("array_api_tests/", 1)[-1] + " (collection)"] = "error"
  outcomes[m] = res
  n = {k: sum(v == k for v in res.values()) for k in ("passed", "failed", "skipped", "error")}
  n["seconds"] = open(f"{work}/{m}.seconds").read().strip()
  if rep.get("exitcode") == 2:  # interrupted (the timeout): only the tests that ran are counted
    n["seconds"] += " (interrupted: partial)"
  counts[m] = n

bad = ("failed", "error")
cols = " | ".join(f"`{m}`" for m in modules)
lines = [f"Measured {datetime.date.today()} with the suite at `{os.environ['SUITE_REF'][:12]}`.", "",
         f"| | {cols} |", "|---|" + "---|" * len(modules)]
for k in ("passed", "failed", "error", "skipped", "seconds"):
  lines.append(f"| {k} | " + " | ".join(str(counts[m][k]) for m in modules) + " |")
ours = outcomes[modules[0]]
if len(modules) > 1:
  ref = outcomes[modules[1]]
  only = sorted(t for t, o in ours.items() if o in bad and ref.get(t) == "passed")
  both = sorted(t for t, o in ours.items() if o in bad and ref.get(t) in bad)
  fixed = sorted(t for t, o in ref.items() if o in bad and ours.get(t) == "passed")
  lines += ["", f"Tests `{modules[0]}` fails and `{modules[1]}` passes: **{len(only)}**", ""]
  lines += [f"- `{t}`" for t in only] or ["- none"]
  lines += ["", f"Tests both fail ({len(both)}; see the notes above for why):", ""]
  lines += [f"- `{t}`" for t in both] or ["- none"]
  lines += ["", f"Tests `{modules[1]}` fails and `{modules[0]}` passes ({len(fixed)}):", ""]
  lines += [f"- `{t}`" for t in fixed] or ["- none"]
else:
  lines += ["", f"Tests `{modules[0]}` fails:", ""] + [f"- `{t}`" for t, o in sorted(ours.items())
                                                   if o in bad]
lines += ["", "Command (from a scratch directory, once per module):", "", "```sh",
          os.environ["COMMAND"], "```"]
section = "\n".join(lines)
report = os.environ.get("REPORT")
if not report:
  print(section)
  sys.exit(0)
text = open(report).read()
begin, end = "<!-- results:begin -->", "<!-- results:end -->"
if begin not in text:
  text = text.rstrip("\n") + f"\n\n## Results\n\n{begin}\n{end}\n"
text = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: f"{begin}\n{section}\n{end}",
              text, flags=re.S)
open(report, "w").write(text)
print(f"wrote {report}")
PY
