"""Moves the modules loose in `src/jaxlite/_src/` into folders by layer and role (issue 29 item 5)
and rewrites every mention of them, so the tree read from the bottom up is the architecture.

    python tools/relayout.py            # from the repository root: move, rewrite, report
    python tools/relayout.py --dry-run  # report what it would do, change nothing

Deterministic and idempotent: a module already in its folder is not moved again, a mention
already rewritten no longer matches, so a second run changes nothing (it says so). What it
rewrites, in src/, tests/, benchmarks/, tools/, examples/, docs/ and the top-level files:
  - `from jaxlite._src import a, b as c` (split by folder where the names now live apart);
  - every dotted mention `jaxlite._src.<old>` (imports, `import jaxlite._src.x as y`, strings
    for importlib, mock targets, `__module__` checks);
  - source paths `_src/<old>.py` in text and docstrings, and quoted `"<old>.py"` in the tests'
    tables of files (tests/, tools/, benchmarks/);
  - the tables keyed by names relative to `jaxlite._src`: `LAYERS` in tests/test_import_graph.py
    (plus one entry per new folder) and `DERIVED_CACHES` in `jit_cache`;
  - `FORMER_NAMES` in `_src/__init__.py`: old name -> new place, through which
    `jaxlite._src.<old>` (attribute access) and `jax._src.<old>` (the `jax` shim that JAX
    libraries import, `_install.py`) still resolve.
A loose module the table does not place is listed at the end (add it to MOVES and run again).
"""
from __future__ import annotations

import argparse
import ast
import difflib
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "jaxlite" / "_src"

# Folder -> (its role, the modules it receives). Names relative to `jaxlite._src`; the files keep
# their names. The public modules (src/jaxlite/*.py, jaxlite.numpy...) do not move; neither do
# the folders that already exist (interpreters, compiler, lax, numpy, scipy, nn, sharding, spmd,
# state, distributed).
FOLDERS = {
    "base": (
        "The bottom layer: the data model every other layer stands on (tracers, avals, jaxprs and "
        "primitives; Arrays and their dtypes; devices, configuration, pytrees, errors).",
        ["core", "array", "dtypes", "extended_dtypes", "config", "devices", "machine",
         "memory_space", "tree_util", "pytree", "linear_util", "list_util", "errors", "effects",
         "primitive_kinds", "pretty_print", "fp_quiet", "monitoring", "profiler",
         "instrumentation", "dlpack", "source_info_util"]),
    "transforms": (
        "Transformations and their API: jit and its call path, grad/vjp/jvp, vmap, custom rules, "
        "checkpointing, call primitives, callbacks and checkify.",
        ["api", "api_extras", "ad_api", "vmap_api", "jit", "jit_function", "jit_argnums",
         "cache_miss", "dispatch", "donation", "stage_info", "call_primitives", "closed_call",
         "linear_call", "custom_derivatives", "custom_batching", "ad_checkpoint", "ad_util",
         "cost_analysis", "memory_profile", "callbacks", "debugging", "checkify"]),
    "rng": (
        "Randomness: typed PRNG keys and their primitives, `jax.random`'s samplers.",
        ["prng", "prng_lowering", "prng_structural", "random", "random_gamma", "random_more",
         "stateful_rng"]),
    "parallel": (
        "Parallelism over devices: pmap and shard_map (its checks, eager path, varying axes).",
        ["pmap", "shard_map", "shard_map_checks", "shard_map_eager", "shard_map_vma"]),
    "compat": (
        "Modules that exist for JAX libraries (they import these JAX-private names): thin "
        "adapters over jaxlite's own machinery.",
        ["xla_bridge", "core_adapters", "hijax", "earray", "traceback_util"]),
    "libs": (
        "Small libraries over numpy and lax behind public modules of their own (jax.image, "
        "jax.ops, jax.flatten_util, jax.experimental.ode, jax.experimental.sparse).",
        ["image", "ops", "flatten_util", "ode", "sparse"]),
}

# The layer of each new folder's own `__init__` in tests/test_import_graph.py's LAYERS (the
# modules keep theirs: the longest key wins): the lowest layer among its modules.
FOLDER_LAYERS = {"base": "CORE", "transforms": "INTERP", "rng": "CORE", "parallel": "LAX",
                 "compat": "CORE", "libs": "LAX"}

MOVES = {old: f"{folder}.{old}" for folder, (_, olds) in FOLDERS.items() for old in olds}

TEXT_DIRS = ("src", "tests", "benchmarks", "tools", "examples", "docs")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".cfg", ".ini", ".txt", ".rst", ".sh", ".yml", ".yaml"}
FILE_TABLE_DIRS = ("tests", "tools", "benchmarks")  # quoted "<old>.py" names a source file there
SELF = Path(__file__).resolve()


def _git(*args):
  subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True)


# --- moving --------------------------------------------------------------------------------------

def move_files(dry: bool) -> list:
  done = []
  for folder, (role, olds) in FOLDERS.items():
    init = SRC / folder / "__init__.py"
    if not init.exists():
      done.append(f"create {init.relative_to(ROOT)}")
      if not dry:
        init.parent.mkdir(exist_ok=True)
        doc = textwrap.fill(role, 96) + "\n\nSee `_src/README.md` for the layout."
        init.write_text(f'"""{doc}"""\n')
        _git("add", str(init))
    for old in olds:
      src, dst = SRC / f"{old}.py", SRC / folder / f"{old}.py"
      if src.exists() and dst.exists():
        raise SystemExit(f"relayout: both {src} and {dst} exist; resolve by hand")
      if src.exists():
        done.append(f"git mv {src.relative_to(ROOT)} {dst.relative_to(ROOT)}")
        if not dry:
          dst.parent.mkdir(exist_ok=True)
          _git("mv", str(src), str(dst))
  return done


# --- rewriting -----------------------------------------------------------------------------------

_ALT = "|".join(sorted(map(re.escape, MOVES), key=len, reverse=True))
_DOTTED = re.compile(rf"\bjaxlite\._src\.({_ALT})(?!\w)")
# `_src/x.py` as jaxlite's (`jaxlite/_src/x.py` or a bare `_src/x.py`), never JAX's `jax/_src/x.py`
_PATH = re.compile(rf"(?:(?<=jaxlite/)|(?<![\w/]))(_src/)({_ALT})\.py\b")
_QUOTED_FILE = re.compile(rf"""(["'])({_ALT})\.py\1""")


def _new_folder(old: str) -> str:
  return MOVES[old].rpartition(".")[0]


def _rewrite_from_src_imports(text: str) -> str:
  """`from jaxlite._src import a, b as c` where some of a, b moved: one statement per folder."""
  try:
    tree = ast.parse(text)
  except SyntaxError:
    return text
  lines = text.splitlines(keepends=True)
  edits = []
  for node in ast.walk(tree):
    if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "jaxlite._src"):
      continue
    if not any(a.name in MOVES for a in node.names):
      continue
    groups = {}
    for a in node.names:
      pkg = f"jaxlite._src.{_new_folder(a.name)}" if a.name in MOVES else "jaxlite._src"
      groups.setdefault(pkg, []).append(a.name + (f" as {a.asname}" if a.asname else ""))
    first, last = lines[node.lineno - 1], lines[node.end_lineno - 1]
    indent = first[:len(first) - len(first.lstrip())]
    tail = last[node.end_col_offset:].rstrip("\n")  # a trailing comment (noqa...)
    new = []
    for i, (pkg, names) in enumerate(groups.items()):
      stmt = f"{indent}from {pkg} import {', '.join(names)}"
      if len(stmt) > 99:
        stmt = f"{indent}from {pkg} import (\n" + "".join(
            f"{indent}    {n},\n" for n in names) + f"{indent})"
      new.append(stmt + (tail if i == 0 else "") + "\n")
    edits.append((node.lineno - 1, node.end_lineno, "".join(new)))
  for start, end, new in sorted(edits, reverse=True):
    lines[start:end] = [new]
  return "".join(lines)


def _wrap_long_imports(text: str) -> str:
  """One-line `from X import a, b` statements that the rewrite took past 100 characters, in
  parentheses, one name a line (a trailing comment stays on the first line)."""
  if not any(len(ln) > 100 for ln in text.splitlines()):
    return text
  try:
    tree = ast.parse(text)
  except SyntaxError:
    return text
  lines = text.splitlines(keepends=True)
  for node in sorted((n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                      and n.lineno == n.end_lineno), key=lambda n: -n.lineno):
    line = lines[node.lineno - 1]
    if len(line.rstrip("\n")) <= 100 or node.level:
      continue
    indent = line[:len(line) - len(line.lstrip())]
    tail = line[node.end_col_offset:].rstrip("\n")
    names = [a.name + (f" as {a.asname}" if a.asname else "") for a in node.names]
    lines[node.lineno - 1] = (f"{indent}from {node.module} import ({tail}\n"
                              + "".join(f"{indent}    {n},\n" for n in names) + f"{indent})\n")
  return "".join(lines)


def _rewrap_entries(text: str, start: str, end: str) -> str:
  """Lines of `"key": VALUE, ...` entries between `start` and `end` packed again within 100
  characters (the rewrite lengthened the keys)."""
  i = text.find(start)
  if i < 0:
    return text
  j = text.find(end, i)
  out = []
  for line in text[i:j].split("\n"):
    if len(line) <= 100 or line.lstrip().startswith("#"):
      out.append(line)
      continue
    indent = line[:len(line) - len(line.lstrip())]
    entries = [e.strip() for e in re.findall(r'"[^"]+":\s*\w+,?', line)]
    cur = indent
    for e in entries:
      if cur.strip() and len(cur) + 1 + len(e) > 100:
        out.append(cur.rstrip())
        cur = indent
      cur += ("" if not cur.strip() else " ") + e
    out.append(cur.rstrip())
  return text[:i] + "\n".join(out) + text[j:]


def _rewrite_block(text: str, start: str, end: str, pattern) -> str:
  """Applies `pattern` (a (regex, repl) pair) only between the first `start` and the next `end`."""
  i = text.find(start)
  if i < 0:
    return text
  j = text.find(end, i + len(start))
  j = len(text) if j < 0 else j
  regex, repl = pattern
  return text[:i] + regex.sub(repl, text[i:j]) + text[j:]


def _layers_table(text: str) -> str:
  keyed = re.compile(rf"""(["'])({_ALT})\1(?=\s*:\s*(?:CORE|INTERP|LAX|LIBS|API)\b)""")
  text = _rewrite_block(text, "LAYERS = {", "\n}\n",
                        (keyed, lambda m: f"{m[1]}{MOVES[m[2]]}{m[1]}"))
  missing = [f for f in FOLDERS if f'"{f}":' not in text]
  if missing and "LAYERS = {" in text:
    entries = "".join(f'    "{f}": {FOLDER_LAYERS[f]},\n' for f in missing)
    i = text.find("\n}\n", text.find("LAYERS = {"))
    text = (text[:i + 1] + "    # the folders of tools/relayout.py (their modules keep their own)\n"
            + entries + text[i + 1:])
  return text


def _derived_caches_table(text: str) -> str:
  quoted = re.compile(rf"""(["'])({_ALT})\1(?=\s*,)""")
  return _rewrite_block(text, "DERIVED_CACHES = (", "\n)\n",
                        (quoted, lambda m: f"{m[1]}{MOVES[m[2]]}{m[1]}"))


_FORMER_START = "# BEGIN relayout: FORMER_NAMES"
_FORMER_END = "# END relayout"


def _former_names_table(text: str) -> str:
  i, j = text.find(_FORMER_START), text.find(_FORMER_END)
  if i < 0 or j < 0:
    raise SystemExit(f"relayout: {SRC / '__init__.py'} lost its FORMER_NAMES markers")
  body = "".join(f'    "{old}": "{new}",\n' for old, new in sorted(MOVES.items()))
  block = f"{_FORMER_START} (written by tools/relayout.py)\nFORMER_NAMES = {{\n{body}}}\n"
  return text[:i] + block + text[j:]


def rewrite(path: Path, text: str) -> str:
  rel = path.relative_to(ROOT).as_posix()
  if path.suffix == ".py":
    text = _rewrite_from_src_imports(text)
  text = _DOTTED.sub(lambda m: f"jaxlite._src.{MOVES[m[1]]}", text)
  text = _PATH.sub(lambda m: f"{m[1]}{MOVES[m[2]].replace('.', '/')}.py", text)
  if path.suffix == ".py" and rel.split("/")[0] in FILE_TABLE_DIRS:
    text = _QUOTED_FILE.sub(lambda m: f"{m[1]}{MOVES[m[2]].replace('.', '/')}.py{m[1]}", text)
  if rel == "tests/test_import_graph.py":
    text = _rewrap_entries(_layers_table(text), "LAYERS = {", "\n}\n")
  if path.name == "jit_cache.py" and "DERIVED_CACHES = (" in text:
    text = _derived_caches_table(text)
  if rel == "src/jaxlite/_src/__init__.py":
    text = _former_names_table(text)
  if path.suffix == ".py":
    text = _wrap_long_imports(text)
  return text


def text_files():
  tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True,
                           text=True).stdout.split("\0")
  for rel in sorted(t for t in tracked if t):
    path = ROOT / rel
    top = rel.split("/")[0]
    if path.resolve() == SELF or path.suffix not in TEXT_SUFFIXES or not path.is_file():
      continue
    if top in TEXT_DIRS or "/" not in rel:
      yield path


def rewrite_all(dry: bool) -> list:
  done, long_lines = [], []
  for path in text_files():
    text = path.read_text()
    new = rewrite(path, text)
    if new != text:
      changed = sum(1 for ln in difflib.unified_diff(text.splitlines(), new.splitlines(),
                                                     lineterm="", n=0)
                    if ln[:1] == "+" and not ln.startswith("+++"))
      done.append(f"rewrite {path.relative_to(ROOT)} ({changed} lines)")
      old_long = {ln for ln in text.splitlines() if len(ln) > 100}
      long_lines += [f"  {path.relative_to(ROOT)}:{n}" for n, ln in
                     enumerate(new.splitlines(), 1) if len(ln) > 100 and ln not in old_long
                     and path.suffix == ".py"]
      if not dry:
        path.write_text(new)
  if long_lines:
    print("relayout: lines the rewrite took past 100 characters (wrap them by hand):")
    print("\n".join(long_lines))
  return done


def unplaced() -> list:
  return sorted(p.stem for p in SRC.glob("*.py") if p.stem != "__init__" and p.stem not in MOVES)


def main(argv=None) -> int:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--dry-run", action="store_true", help="report, change nothing")
  args = ap.parse_args(argv)
  # Paths are read after the moves so that a moved file is rewritten at its new place.
  done = move_files(args.dry_run)
  done += rewrite_all(args.dry_run)
  for line in done:
    print(line)
  moved = sum(line.startswith("git mv") for line in done)
  rewritten = sum(line.startswith("rewrite") for line in done)
  print(f"relayout: {moved} modules moved, {rewritten} files rewritten"
        + (" (dry run)" if args.dry_run else "") + ("; nothing to do" if not done else ""))
  left = unplaced()
  if left:
    print("relayout: loose modules no folder receives (add them to FOLDERS): " + ", ".join(left))
  return 0


if __name__ == "__main__":
  sys.exit(main())
