#!/usr/bin/env bash
# Runs the JAX libraries' own test suites (optax, chex, flax, equinox, jraph, numpyro, lineax,
# optimistix, diffrax, jaxopt, evosax, blackjax, haiku, ott) on jaxlite and (when real JAX can be
# installed) on JAX, in fresh virtual environments (or, --offline, with a given python and
# folders), and prints passed/failed/skipped and wall time per library.
#
# usage: tools/ecosystem_tests.sh [--dir DIR] [--quick] [--libs "optax chex flax equinox ..."]
#                                 [--no-jax] [--no-lite] [--timeout SECONDS] [--setup-only]
#                                 [--git-mirror DIR] [--report] [-n N] [--suites DIR]
#                                 [--budget SECONDS] [--kill-after SECONDS]
#                                 [--offline --python PY --libs-path DIR --src DIR [--lite-src DIR]]
#   --dir DIR     where the venvs, sources and logs go (default /tmp/jaxlite-ecosystem)
#   --quick       each library's core test files only (the lists below), not the whole suite
#                 (without it: the library's chosen suite, tools/ecosystem_suites/<lib>.txt,
#                 or its whole test root where it has no such file)
#   --libs LIST   which libraries to run (default: all of them)
#   --no-jax      skip the real-JAX column
#   --no-lite     skip the jaxlite column (run the two columns as two invocations, in parallel,
#                 with the same --dir: the table shows both columns' latest results)
#   --timeout S   wall-clock limit per suite run (default 1800): pytest then gets SIGINT, and
#                 SIGKILL --kill-after S later (default 60) if it has not stopped
#   --setup-only  build the venvs and fetch the sources, run nothing
#   --report      run nothing: print the table of DIR's latest results (the counts of a run
#                 killed before its summary re-read from its log's progress characters)
#   --git-mirror DIR  clone the release tags from local mirrors DIR/<owner>+<repo>/repo (a
#                 machine without GitHub but with such mirrors) instead of github.com
#   --budget S    all the suites of this invocation within S seconds: each suite's limit is
#                 its share of the seconds left, by weight (a table below), instead of --timeout
#   -n N          pytest-xdist with N workers, in each column whose python has xdist
#   --suites DIR  the chosen-suite files (default tools/ecosystem_suites beside this script)
#   --offline     no venvs, no pip, no downloads: a machine without network. Both columns run
#                 --python PY (default python3); the JAX column with PYTHONPATH=LIBS:$PYTHONPATH
#                 (real JAX already importable), the jaxlite column with jaxlite's shim and
#                 --lite-src (default this checkout's src/) first. --libs-path LIBS: the pinned
#                 libraries installed --no-deps into one folder (optax's, chex's, jraph's and
#                 haiku's tests run from there); --src DIR: the other libraries' test sources,
#                 laid out as DIR/src of an online run (flax-0.12.8/tests, lineax-tests/tests...).
#
# Every suite run writes DIR/logs/<lib>-<column>.{log,xml,result} (the XML is pytest's JUnit
# report); tools/ecosystem_compare.py reads a library's two XMLs and lists the tests whose
# outcome differs, and the table ends with its per-library summary.
#
# Both venvs get the same pinned libraries installed with --no-deps (so pip never pulls real jax
# into the jaxlite venv), plus their non-jax dependencies. The jaxlite venv installs this checkout
# (editable); its suites run through the shim directory (`python -m jaxlite --shim-path`), so
# `import jax` in the tests is jaxlite. Suites run with OPENBLAS_NUM_THREADS=1, one at a time.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR=/tmp/jaxlite-ecosystem
QUICK=0
LIBS="optax chex flax equinox jraph numpyro lineax optimistix diffrax jaxopt evosax blackjax haiku ott"
WITH_JAX=1
WITH_LITE=1
TIMEOUT=1800
KILL_AFTER=60
BUDGET=""
SETUP_ONLY=0
REPORT=0
GIT_MIRROR=""
NPROC=""
SUITES=""
OFFLINE=0
LIBS_PATH=""
SRC=""
LITE_SRC=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) DIR="$2"; shift 2;;
    --quick) QUICK=1; shift;;
    --libs) LIBS="$2"; shift 2;;
    --no-jax) WITH_JAX=0; shift;;
    --no-lite) WITH_LITE=0; shift;;
    --timeout) TIMEOUT="$2"; shift 2;;
    --kill-after) KILL_AFTER="$2"; shift 2;;
    --budget) BUDGET="$2"; shift 2;;
    --setup-only) SETUP_ONLY=1; shift;;
    --report) REPORT=1; shift;;
    --git-mirror) GIT_MIRROR="$2"; shift 2;;
    -n) NPROC="$2"; shift 2;;
    --suites) SUITES="$2"; shift 2;;
    --offline) OFFLINE=1; shift;;
    --python) PYTHON="$2"; shift 2;;
    --libs-path) LIBS_PATH="$2"; shift 2;;
    --src) SRC="$2"; shift 2;;
    --lite-src) LITE_SRC="$2"; shift 2;;
    -h|--help) sed -n '2,46p' "$0"; exit 0;;
    *) echo "ecosystem_tests.sh: unknown argument $1" >&2; exit 2;;
  esac
done
PY="${PYTHON:-python3}"
SUITES="${SUITES:-$ROOT/tools/ecosystem_suites}"
LITE_SRC="${LITE_SRC:-$ROOT/src}"
if [ "$OFFLINE" = 1 ]; then
  [ -d "$LIBS_PATH" ] && [ -d "$SRC" ] \
    || { echo "ecosystem_tests.sh: --offline needs --libs-path DIR and --src DIR" >&2; exit 2; }
  LIBS_PATH="$(cd "$LIBS_PATH" && pwd)"; SRC="$(cd "$SRC" && pwd)"
  LITE_SRC="$(cd "$LITE_SRC" && pwd)"; PY="$(command -v "$PY")"
fi

# The libraries under test (installed with --no-deps) and what they need besides jax.
LIB_PINS="optax==0.2.8 chex==0.1.92 flax==0.12.8 equinox==0.13.8 jaxtyping==0.3.11
  jraph==0.0.6.dev0 numpyro==0.22.0 lineax==0.1.1 optimistix==0.1.0 diffrax==0.7.2
  jaxopt==0.8.5 evosax==0.3.1 blackjax==1.7.1 dm-haiku==0.0.17 jmp==0.0.4 ott-jax==0.6.0"
DEP_PINS="numpy==2.4.6 ml_dtypes==0.7.0 absl-py==2.5.1 toolz==1.2.0 typing_extensions==4.15.0
  msgpack==1.2.4 rich==15.0.0 PyYAML==6.0.3 treescope==0.1.10 wadler_lindig==0.1.8
  opt_einsum==3.4.0 scipy==1.17.1 scikit-learn==1.9.1 pytest==9.0.3 cloudpickle==3.1.2 einops==0.8.2
  multipledispatch==1.0.0 tqdm==4.70.1 tabulate==0.10.0 dotmap==1.3.30 matplotlib==3.11.2
  fastprogress==1.1.6 hypothesis==6.170.27 pytest-xdist==3.8.0 execnet==2.1.2"
JAX_PINS="jax==0.10.2 jaxlib==0.10.2"
# Versions of the sdists that carry flax's, equinox's and numpyro's tests (same as the wheels).
SDISTS="flax==0.12.8 equinox==0.13.8 numpyro==0.22.0 blackjax==1.7.1"
# Libraries whose tests are only in their repositories: name, repository, release tag, test dir.
REPO_TESTS="lineax https://github.com/patrick-kidger/lineax v0.1.1 tests
  optimistix https://github.com/patrick-kidger/optimistix v0.1.0 tests
  diffrax https://github.com/patrick-kidger/diffrax v0.7.2 test
  jaxopt https://github.com/google/jaxopt jaxopt-v0.8.5 tests
  evosax https://github.com/RobertTLange/evosax v.0.3.1 tests
  ott https://github.com/ott-jax/ott 0.6.0 tests
  equinox https://github.com/patrick-kidger/equinox v0.13.8 tests"

# --quick: the core files of each suite (paths relative to the test root of that library).
QUICK_optax="_src/alias_test.py _src/transform_test.py _src/combine_test.py _src/base_test.py
  _src/update_test.py _src/utils_test.py _src/linear_algebra_test.py transforms/_clipping_test.py
  transforms/_accumulation_test.py schedules/_schedule_test.py losses/_regression_test.py
  losses/_classification_test.py tree_utils/_tree_math_test.py"
QUICK_chex="_src/asserts_test.py _src/dataclass_test.py _src/variants_test.py
  _src/fake_test.py _src/dimensions_test.py _src/asserts_chexify_test.py"
QUICK_flax="linen/linen_module_test.py linen/linen_test.py linen/linen_linear_test.py
  nnx/module_test.py nnx/graph_utils_test.py nnx/transforms_test.py nnx/optimizer_test.py
  nnx/rngs_test.py nnx/variable_test.py"
# (test_grad.py is not in equinox 0.13.8's tests; the other seven are)
QUICK_equinox="test_module.py test_filters.py test_jit.py test_grad.py test_nn.py
  test_tree.py test_make_jaxpr.py test_vmap.py"
# jraph's tests are in its wheel (utils_test.py imports jax.lib.xla_bridge, which JAX 0.10.2 no
# longer has: a collection error on both columns)
QUICK_jraph="_src/models_test.py _src/utils_test.py"
QUICK_numpyro="test_util.py test_handlers.py test_constraints.py test_distributions_util.py
  test_optimizers.py"
# issue 34's second ring (the files ECOSYSTEM.md's table reports; paths under each test root)
QUICK_lineax="test_misc.py test_norm.py test_solve.py"
QUICK_optimistix="test_misc.py test_compat.py test_best_so_far.py test_ad.py test_cauchy_point.py
  test_solve.py test_fixed_point.py"
QUICK_diffrax="test_term.py test_misc.py test_saveat_solution.py test_step_to.py"
QUICK_jaxopt="tree_util_test.py linear_solve_test.py fixed_point_iteration_test.py
  anderson_test.py bisection_test.py gradient_descent_test.py"
QUICK_evosax="test_core"
QUICK_ott="geometry/pointcloud_test.py math/lse_test.py solvers/linear/sinkhorn_test.py"
QUICK_blackjax="test_util.py test_diagnostics.py"
QUICK_haiku="_src/base_test.py _src/basic_test.py _src/module_test.py _src/stateful_test.py
  _src/random_test.py _src/batch_norm_test.py _src/layer_norm_test.py _src/jaxpr_info_test.py
  _src/summarise_test.py _src/lift_test.py _src/layer_stack_test.py"

mkdir -p "$DIR/logs" "$DIR/src"
log() { echo "[ecosystem] $*" >&2; }

col_python() {  # col_python COLUMN: the interpreter of the column (jax or lite)
  if [ "$OFFLINE" = 1 ]; then echo "$PY"; else echo "$DIR/$1/bin/python"; fi
}
col_path() {  # col_path COLUMN: the PYTHONPATH its suites run with
  if [ "$OFFLINE" = 1 ]; then
    if [ "$1" = lite ]; then echo "$LITE_SRC/jaxlite/_jax_shim:$LITE_SRC:$LIBS_PATH${PYTHONPATH:+:$PYTHONPATH}"
    else echo "$LIBS_PATH${PYTHONPATH:+:$PYTHONPATH}"; fi
  elif [ "$1" = lite ]; then "$DIR/lite/bin/python" -m jaxlite --shim-path
  fi
}
SRCDIR="$DIR/src"
[ "$OFFLINE" = 1 ] && SRCDIR="$SRC"

make_venv() {  # make_venv NAME EXTRA_PINS...
  local venv="$DIR/$1"; shift
  if [ ! -x "$venv/bin/python" ]; then
    log "creating $venv"
    "$PY" -m venv "$venv" || return 1
  fi
  # shellcheck disable=SC2086
  "$venv/bin/python" -m pip install -q $DEP_PINS "$@" >"$DIR/logs/pip-$(basename "$venv").log" 2>&1 \
    && "$venv/bin/python" -m pip install -q --no-deps $LIB_PINS \
      >>"$DIR/logs/pip-$(basename "$venv").log" 2>&1 \
    || { log "pip failed: see $DIR/logs/pip-$(basename "$venv").log"; return 1; }
}

if [ "$REPORT" = 0 ] && [ "$OFFLINE" = 1 ]; then
  # No venvs: check that each column imports the JAX it should.
  if [ "$WITH_LITE" = 1 ]; then
    jf="$(cd / && PYTHONPATH="$(col_path lite)" "$PY" -c 'import jax; print(jax.__file__)' 2>&1 | tail -1)"
    case "$jf" in "$LITE_SRC"/*) ;; *)
      log "the jaxlite column's 'import jax' is not the shim under $LITE_SRC ($jf); refusing"; exit 1;;
    esac
  fi
  if [ "$WITH_JAX" = 1 ] && ! (cd / && PYTHONPATH="$(col_path jax)" "$PY" -c 'import jax' 2>/dev/null); then
    log "no real JAX importable by $PY: the JAX column is left empty"; WITH_JAX=0
  fi
fi

if [ "$REPORT" = 0 ] && [ "$OFFLINE" = 0 ]; then
log "jaxlite venv"
make_venv lite || exit 1
"$DIR/lite/bin/python" -m pip install -q --no-deps -e "$ROOT" >>"$DIR/logs/pip-lite.log" 2>&1 \
  || { log "installing jaxlite failed"; exit 1; }
if "$DIR/lite/bin/python" -c "import jax" 2>/dev/null; then
  log "real jax is importable in the jaxlite venv; refusing (it would shadow the shim)"; exit 1
fi
if [ "$WITH_JAX" = 1 ]; then
  log "JAX venv"
  make_venv jax $JAX_PINS || { log "no real JAX: the JAX column is left empty"; WITH_JAX=0; }
fi

# flax's and equinox's tests live in their sdists.
for spec in $SDISTS; do
  name="${spec%%==*}"; ver="${spec##*==}"
  if [ ! -d "$DIR/src/$name-$ver" ]; then
    log "fetching the $spec sdist"
    "$DIR/lite/bin/python" -m pip download -q --no-deps --no-binary :all: --no-build-isolation \
      "$spec" -d "$DIR/src" >"$DIR/logs/sdist-$name.log" 2>&1 \
      || "$DIR/lite/bin/python" -m pip download -q --no-deps --no-binary :all: "$spec" \
        -d "$DIR/src" >>"$DIR/logs/sdist-$name.log" 2>&1
    tar -xzf "$DIR/src/$name-$ver.tar.gz" -C "$DIR/src" 2>/dev/null \
      || log "could not unpack the $spec sdist (see $DIR/logs/sdist-$name.log)"
  fi
done
# The release tags' tests (git, shallow, one tag each); equinox's go into its sdist's tree.
while read -r name url tag sub; do
  [ -n "$name" ] || continue
  dest="$DIR/src/$name-tests"
  if [ ! -d "$dest/$sub" ]; then
    log "fetching $name's tests ($tag)"
    if [ -n "$GIT_MIRROR" ]; then  # https://github.com/OWNER/REPO -> DIR/OWNER+REPO/repo
      # only the test directory at the tag (mirrors may lack the large blobs of docs/)
      url="${url#https://github.com/}"; url="$GIT_MIRROR/${url/\//+}/repo"
      mkdir -p "$dest" && git --git-dir="$url" archive "$tag" "$sub" 2>"$DIR/logs/git-$name.log" \
        | tar -x -C "$dest" || log "could not read $sub at $tag from $url"
    else
      git clone -q --depth 1 --branch "$tag" "$url" "$dest" >"$DIR/logs/git-$name.log" 2>&1 \
        || log "could not clone $url at $tag (see $DIR/logs/git-$name.log)"
    fi
  fi
  if [ "$name" = equinox ] && [ -d "$dest/tests" ] && [ ! -d "$DIR/src/equinox-0.13.8/tests" ]; then
    cp -r "$dest/tests" "$DIR/src/equinox-0.13.8/tests"
  fi
done <<<"$REPO_TESTS"
[ "$SETUP_ONLY" = 1 ] && { log "set up under $DIR"; exit 0; }
fi

test_root() {  # test_root VENV LIB: the directory holding LIB's tests
  local site
  if [ "$OFFLINE" = 1 ]; then
    case "$2" in optax|chex|jraph|haiku) echo "$LIBS_PATH/$2"; return;; esac
  fi
  case "$2" in
    optax|chex)
      site="$("$DIR/$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
      echo "$site/$2";;
    flax) echo "$SRCDIR/flax-0.12.8/tests";;
    equinox) echo "$SRCDIR/equinox-0.13.8/tests";;
    jraph)
      site="$("$DIR/$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
      echo "$site/jraph";;
    numpyro) echo "$SRCDIR/numpyro-0.22.0/test";;
    blackjax) echo "$SRCDIR/blackjax-1.7.1/tests";;
    lineax|optimistix|jaxopt|evosax|ott) echo "$SRCDIR/$2-tests/tests";;
    diffrax) echo "$SRCDIR/diffrax-tests/test";;
    haiku)
      site="$("$DIR/$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
      echo "$site/haiku";;
  esac
}

suite_lines() {  # suite_lines LIB: SUITES/LIB.txt without comments and blank lines
  sed -e 's/#.*//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' "$SUITES/$1.txt" | grep -v '^$'
}

count_files() {  # count_files PATH...: the test files among PATHs (folders searched)
  local f
  for f in "$@"; do
    if [ -d "$f" ]; then find "$f" \( -name 'test_*.py' -o -name '*_test.py' \); else echo "$f"; fi
  done | sort -u | grep -c .
}

has_xdist() {  # has_xdist COLUMN: its python imports xdist (cached per column)
  local v="XDIST_$1"
  if [ -z "${!v:-}" ]; then
    if (cd / && PYTHONPATH="$(col_path "$1")" "$(col_python "$1")" -c 'import xdist' 2>/dev/null)
    then printf -v "$v" yes; else printf -v "$v" no; fi
  fi
  [ "${!v}" = yes ]
}

run_suite() {  # run_suite VENV LIB: runs LIB's tests on VENV, writes logs/LIB-VENV.{log,xml,result}
  # The result line is "passed failed skipped wall files note" (errors count as failed).
  local venv="$1" lib="$2" root files=() opts=() out env_path nfiles line
  root="$(test_root "$venv" "$lib")"
  out="$DIR/logs/$lib-$venv.log"
  rm -f "${out%.log}.xml"
  [ -d "$root" ] || { log "no tests at $root"; echo "- - - - - no-tests" >"${out%.log}.result"; return; }
  if [ "$QUICK" = 1 ]; then
    local q="QUICK_$lib"
    for f in ${!q}; do [ -e "$root/$f" ] && files+=("$root/$f"); done
  elif [ -f "$SUITES/$lib.txt" ]; then
    # The chosen suite: paths (files, folders or node ids) under the test root; a line
    # "--ignore=PATH" or "--deselect=NODEID" passes that pytest option (relative to the root).
    while read -r line; do
      case "$line" in
        --ignore=*) opts+=("--ignore=$root/${line#*=}");;
        --deselect=*) opts+=("$line");;  # a node id: relative to the rootdir, the test root
        *) if [ -e "$root/${line%%::*}" ]; then files+=("$root/$line")
           else log "$lib: $line (in $SUITES/$lib.txt) is not under $root"; fi;;
      esac
    done < <(suite_lines "$lib")
  else
    files=("$root")
  fi
  [ ${#files[@]} -gt 0 ] || { log "$lib: no test files"; echo "- - - - - no-tests" >"${out%.log}.result"; return; }
  nfiles="$(count_files "${files[@]%%::*}")"
  env_path="$(col_path "$venv")"
  [ -n "$NPROC" ] && has_xdist "$venv" && opts+=(-n "$NPROC")
  log "running $lib on $venv ($nfiles files, limit ${TIMEOUT}s; log: $out)"
  local t0=$SECONDS
  # Run from the test root's parent so rootdir-relative imports (flax's tests import each other).
  # --rootdir is the test root itself in both columns, so the JUnit XMLs name a test alike.
  # At the time limit pytest gets SIGINT, so it still prints the counts of the tests it ran
  # (and writes the XML of those).
  (cd "$(dirname "$root")" && OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 JAX_PLATFORMS=cpu \
    PYTHONPATH="$env_path" timeout -s INT -k "$KILL_AFTER" "$TIMEOUT" "$(col_python "$venv")" -m pytest -q \
    -p no:cacheprovider -o addopts="" --continue-on-collection-errors -rfE \
    -W ignore::DeprecationWarning --rootdir "$root" --junitxml "${out%.log}.xml" \
    -o junit_family=xunit1 "${opts[@]}" "${files[@]}") >"$out" 2>&1
  local rc=$?
  local summary passed failed errors skipped note=done
  summary="$(grep -E '^(=+ )?[0-9]+ (passed|failed|skipped|error|deselected|xfailed|xpassed)' "$out" | tail -1)"
  passed=$(grep -oE '[0-9]+ passed' <<<"$summary" | grep -oE '[0-9]+' || true)
  failed=$(grep -oE '[0-9]+ failed' <<<"$summary" | grep -oE '[0-9]+' || true)
  errors=$(grep -oE '[0-9]+ errors?' <<<"$summary" | grep -oE '[0-9]+' || true)
  skipped=$(grep -oE '[0-9]+ skipped' <<<"$summary" | grep -oE '[0-9]+' || true)
  # the limit cut the run short (a SIGINT after pytest's own summary changes nothing)
  { [ -z "$summary" ] || [ "$rc" = 124 ] || [ "$rc" = 137 ] \
    || grep -q '^!* KeyboardInterrupt !*$' "$out"; } && note="timeout"
  if [ -z "$summary" ]; then  # killed before its summary: its XML's counts (pytest writes it
    # before the summary), else its progress characters
    read -r passed failed skipped <<<"$("$PY" "$ROOT/tools/ecosystem_compare.py" --counts \
      "${out%.log}.xml" 2>/dev/null || progress_counts "$out")"
    echo "$passed $failed $skipped $(( SECONDS - t0 ))s $nfiles ${note/done/crash}" \
      >"${out%.log}.result"; return
  fi
  echo "${passed:-0} $(( ${failed:-0} + ${errors:-0} )) ${skipped:-0} $(( SECONDS - t0 ))s $nfiles $note" \
    >"${out%.log}.result"
}

progress_counts() {  # progress_counts LOG -> "passed failed skipped" from pytest -q's progress lines
  grep -E '^[.FEsxX]+ *(\[ *[0-9]+%\])?$' "$1" | tr -cd '.FEsxX' \
    | awk '{ n = split($0, c, ""); p = f = s = 0
             for (i = 1; i <= n; i++) { if (c[i] == ".") p++; else if (c[i] == "F" || c[i] == "E") f++;
                                        else if (c[i] == "s") s++ }
             print p, f, s }
           END { if (NR == 0) print 0, 0, 0 }'
}

# --budget: each suite's limit is its share of the time left, by these weights (a library's
# suite on JAX, roughly as they ran here; a jaxlite run weighs LITE_WEIGHT of its JAX run), so
# the time a suite leaves unused goes to the suites after it.
WEIGHT_jraph=1 WEIGHT_lineax=3 WEIGHT_evosax=3 WEIGHT_chex=3 WEIGHT_equinox=5
WEIGHT_optimistix=4 WEIGHT_jaxopt=6 WEIGHT_ott=6 WEIGHT_optax=8 WEIGHT_blackjax=8
WEIGHT_haiku=10 WEIGHT_diffrax=10 WEIGHT_numpyro=12 WEIGHT_flax=12
LITE_WEIGHT=30  # percent
BUDGET_FLOOR=30
run_weight() {  # run_weight COLUMN LIB: its weight in hundredths
  local w="WEIGHT_$2"; w="${!w:-5}"
  if [ "$1" = lite ]; then echo $(( w * LITE_WEIGHT )); else echo $(( w * 100 )); fi
}
budget_limit() {  # budget_limit COLUMN LIB: this run's share of the seconds left (echo), or fail
  local left=$(( DEADLINE - SECONDS )) total=0 n=0 rest l c
  rest="$(for l in $LIBS; do for c in lite jax; do echo "$l $c"; done; done \
    | sed -n "/^$2 $1\$/,\$p")"  # this run and the ones after it
  while read -r l c; do
    { [ "$c" = lite ] && [ "$WITH_LITE" = 1 ]; } || { [ "$c" = jax ] && [ "$WITH_JAX" = 1 ]; } \
      || continue
    total=$(( total + $(run_weight "$c" "$l") )); n=$(( n + 1 ))
  done <<<"$rest"
  # twice its share (a suite heavier than its weight may use time a lighter one left), at least
  # a floor (BUDGET_FLOOR seconds, less where the runs left cannot all have it), and never the
  # floors of the runs after it. A run that outlasts its limit by up to --kill-after takes that
  # time from the runs after it.
  local share floor limit
  share=$(( left * $(run_weight "$1" "$2") / total ))
  floor=$(( left / n < BUDGET_FLOOR ? left / n : BUDGET_FLOOR ))
  limit=$(( 2 * share > floor ? 2 * share : floor ))
  (( limit > left - floor * (n - 1) )) && limit=$(( left - floor * (n - 1) ))
  [ "$limit" -ge 10 ] && echo "$limit"
}

if [ "$REPORT" = 0 ]; then
  [ -n "$BUDGET" ] && DEADLINE=$(( SECONDS + BUDGET ))
  for lib in $LIBS; do
    for col in lite jax; do
      { [ "$col" = lite ] && [ "$WITH_LITE" = 1 ]; } || { [ "$col" = jax ] && [ "$WITH_JAX" = 1 ]; } \
        || continue
      if [ -n "$BUDGET" ]; then
        TIMEOUT="$(budget_limit "$col" "$lib")" || {
          log "no time left for $lib on $col"; echo "- - - - - no-time" >"$DIR/logs/$lib-$col.result"
          rm -f "$DIR/logs/$lib-$col.xml"; continue; }
      fi
      run_suite "$col" "$lib"
    done
  done
else
  for r in "$DIR"/logs/*.result; do  # results written by earlier versions of this script
    read -r p f s w n note <<<"$(cat "$r")"
    log="${r%.result}.log"
    [ -f "$log" ] || continue
    if [ "$p" = - ]; then read -r p f s <<<"$(progress_counts "$log")"; fi
    if grep -qE '^(=+ )?[0-9]+ (passed|failed|skipped|error)' "$log" \
        && ! grep -q 'KeyboardInterrupt' "$log"; then note=done; fi
    echo "$p $f $s $w $n $note" >"$r"
  done
fi

ver() {
  local dist="$1"; [ "$dist" = haiku ] && dist=dm-haiku; [ "$dist" = ott ] && dist=ott-jax
  if [ "$OFFLINE" = 1 ]; then
    PYTHONPATH="$LIBS_PATH" "$PY" -c "import importlib.metadata as m; print(m.version('$dist'))"
  else
    "$DIR/lite/bin/python" -c "import importlib.metadata as m; print(m.version('$dist'))"
  fi
}
# The table: every library's latest result in DIR for each column (a column run by an earlier
# invocation with the same --dir shows too; "timeout" = the counts of the tests run before it).
result() { if [ -f "$DIR/logs/$1-$2.result" ]; then cat "$DIR/logs/$1-$2.result"; \
  else echo "- - - - - not-run"; fi; }
echo
echo "| library | version | files run | JAX passed / failed / skipped | JAX wall | jaxlite passed / failed / skipped | jaxlite wall |"
echo "|---|---|---|---|---|---|---|"
for lib in $LIBS; do
  read -r lp lf ls lt ln lnote <<<"$(result "$lib" lite)"
  read -r jp jf js jt jn jnote <<<"$(result "$lib" jax)"
  [ "$lnote" = done ] && lnote="" || lnote=" ($lnote)"
  [ "$jnote" = done ] && jnote="" || jnote=" ($jnote)"
  echo "| $lib | $(ver "$lib") | $([ "$ln" = - ] && echo "$jn" || echo "$ln") $(if [ "$QUICK" = 1 ]; then echo "(quick list)"; elif [ -f "$SUITES/$lib.txt" ]; then echo "(chosen suite)"; else echo "(whole suite)"; fi) | $jp / $jf / $js | $jt$jnote | $lp / $lf / $ls | $lt$lnote |"
done
echo "(mode: $([ "$QUICK" = 1 ] && echo quick || echo "chosen suites"); logs under $DIR/logs)"
# Test by test: the tests whose outcome differs between the columns, where both wrote an XML.
for lib in $LIBS; do
  [ -f "$DIR/logs/$lib-jax.xml" ] && [ -f "$DIR/logs/$lib-lite.xml" ] || continue
  "$PY" "$ROOT/tools/ecosystem_compare.py" --summary "$DIR/logs" "$lib"
done
