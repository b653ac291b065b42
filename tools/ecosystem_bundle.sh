#!/usr/bin/env bash
# Builds a bundle for running tools/ecosystem_tests.sh on a machine with neither network nor
# pip (the TPU machine's 13-core host: x86-64, Python 3.11, JAX 0.10.2 and NumPy/SciPy already
# on its PYTHONPATH): the pinned libraries, their suites' test sources, pure-Python pytest +
# pytest-xdist (and what the suites import that such a host lacks), the two tools and the
# chosen-suite files, and run.sh (tools/ecosystem_bundle_run.sh), which runs both columns there
# and packs the results into one file.
#
# usage: tools/ecosystem_bundle.sh OUTDIR [--libs-path DIR] [--src DIR] [--site DIR]
#                                  [--suites DIR...]
#   OUTDIR         gets eco-bundle.tar.xz (unpacks to eco/) and its staging folder stage/
#   --libs-path    the libraries installed --no-deps into one folder (default /work/eco-jaxlibs)
#   --src          the sdists' and release tags' sources, as ecosystem_tests.sh's DIR/src
#                  (default /work/eco-run1/src)
#   --site         a Python 3.11 site-packages holding pytest, xdist, hypothesis and matplotlib
#                  (default /work/venv's)
#   --suites DIR   folders of <lib>.txt files; a later folder's file wins (default this
#                  checkout's tools/ecosystem_suites)
#   --extra DIR    more packages for libs/ (both columns), e.g. the suites' test-only needs
#                  such as haiku's dm-tree, wrapt, attrs and dill (repeatable)
#
# On the host, from the checkout's root (its src/ is the jaxlite column's jaxlite):
#   mkdir -p /tmp/ecob && tar xJf OUTDIR/eco-bundle.tar.xz -C /tmp/ecob && bash /tmp/ecob/eco/run.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUTDIR="${1:?usage: tools/ecosystem_bundle.sh OUTDIR [--libs-path DIR] [--src DIR] [--site DIR]}"
shift
LIBS_PATH=/work/eco-jaxlibs
SRC=/work/eco-run1/src
SITE=/work/venv/lib/python3.11/site-packages
SUITE_DIRS=()
EXTRAS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --libs-path) LIBS_PATH="$2"; shift 2;;
    --src) SRC="$2"; shift 2;;
    --site) SITE="$2"; shift 2;;
    --extra) EXTRAS+=("$2"); shift 2;;
    --suites) shift; while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do SUITE_DIRS+=("$1"); shift; done;;
    *) echo "ecosystem_bundle.sh: unknown argument $1" >&2; exit 2;;
  esac
done
[ ${#SUITE_DIRS[@]} -gt 0 ] || SUITE_DIRS=("$ROOT/tools/ecosystem_suites")

mkdir -p "$OUTDIR"
STAGE="$OUTDIR/stage/eco"
rm -rf "$OUTDIR/stage"
mkdir -p "$STAGE/libs" "$STAGE/pydeps" "$STAGE/src" "$STAGE/tools" "$STAGE/suites"

# The libraries: everything but documentation, examples, scripts and compiled caches (the
# suites import no docs; sklearn stays: optax's alias_test, jaxopt's test_util and ott import it).
tar -C "$LIBS_PATH" -c --exclude=__pycache__ --exclude='*.pyc' --exclude=./docs \
  --exclude=./examples --exclude=./bin --exclude=./flaxlib_src --exclude='./sklearn/*/tests' \
  --exclude=./sklearn/tests . | tar -x -C "$STAGE/libs"
for extra in "${EXTRAS[@]}"; do
  tar -C "$extra" -c --exclude=__pycache__ --exclude=./bin . | tar -x -C "$STAGE/libs"
done

# pytest and what it needs (pure Python), pytest-xdist (the -n of both columns), hypothesis
# (several suites), matplotlib and its needs (evosax imports it at import time, its conftest
# imports evosax; ott's plot tests).
PYDEPS="_pytest pytest py.py pluggy iniconfig packaging pygments execnet xdist hypothesis
  _hypothesis_pytestplugin.py _hypothesis_ftz_detector.py _hypothesis_globals.py sortedcontainers
  matplotlib mpl_toolkits PIL pillow.libs cycler dateutil six.py kiwisolver contourpy fontTools
  pyparsing"
for name in $PYDEPS; do
  [ -e "$SITE/$name" ] && cp -r "$SITE/$name" "$STAGE/pydeps/"
done
for dist in pytest pluggy iniconfig packaging pygments execnet pytest_xdist hypothesis \
  sortedcontainers matplotlib pillow cycler python_dateutil six kiwisolver contourpy fonttools \
  pyparsing; do
  cp -r "$SITE"/"$dist"-[0-9]*.dist-info "$STAGE/pydeps/" 2>/dev/null || true
done
# the plugin registration of hypothesis and xdist is their entry points (kept in dist-info)
find "$STAGE/pydeps" \( -name __pycache__ -o -name tests -path '*/matplotlib/tests' \) -prune \
  -exec rm -rf {} +
rm -rf "$STAGE/pydeps/matplotlib/mpl-data/sample_data"

# Test sources: each source tree's test folder and its top-level files (pyproject.toml,
# setup.cfg, pytest.ini: the suites' pytest settings, filterwarnings among them). The source
# packages beside them stay behind: the installed copies in libs/ are the same versions.
for tree in "$SRC"/*/; do
  tree="${tree%/}"; name="$(basename "$tree")"
  mkdir -p "$STAGE/src/$name"
  find "$tree" -maxdepth 1 -type f \( -name '*.toml' -o -name '*.cfg' -o -name '*.ini' \
    -o -name 'conftest.py' \) -exec cp {} "$STAGE/src/$name/" \;
  # (evosax's test_examples runs examples/learned_sphere.py)
  if compgen -G "$tree/examples/*.py" >/dev/null; then
    mkdir -p "$STAGE/src/$name/examples" && cp "$tree"/examples/*.py "$STAGE/src/$name/examples/"
  fi
  for sub in tests test; do
    [ -d "$tree/$sub" ] && tar -C "$tree" -c --exclude=__pycache__ "$sub" | tar -x -C "$STAGE/src/$name"
  done
done

cp "$ROOT/tools/ecosystem_tests.sh" "$ROOT/tools/ecosystem_compare.py" "$STAGE/tools/"
mkdir -p "$STAGE/tools/ecosystem_suites"
for d in "${SUITE_DIRS[@]}"; do
  for f in "$d"/*.txt; do [ -f "$f" ] && cp "$f" "$STAGE/suites/"; done
done
cp "$ROOT/tools/ecosystem_bundle_run.sh" "$STAGE/run.sh"
chmod +x "$STAGE/run.sh" "$STAGE/tools/ecosystem_tests.sh"
ls "$STAGE/suites" > "$STAGE/suites.list"

(cd "$OUTDIR/stage" && tar -c eco | xz -T2 -6 > "$OUTDIR/eco-bundle.tar.xz")
du -sh "$STAGE"/* "$OUTDIR/eco-bundle.tar.xz" >&2
