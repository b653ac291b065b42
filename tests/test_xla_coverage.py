"""The xla backend covers every primitive: each registered primitive has a StableHLO lowering
rule, and each rule is exercised by a row that runs it on XLA against the NumPy backend and JAX
(tests/test_xla_backend.py's ROWS, tests/test_xla_rules.py's tables).

This is why CI's xla step runs those two files (plus the transformation and state files named in
.ci/run) rather than the whole suite a second time: a primitive added without a rule, or a rule
added without a row, fails here.
"""
from __future__ import annotations

import functools
import importlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import jaxlite

pytest.importorskip("jaxlib")

import test_xla_backend as backend_rows  # noqa: E402
from conftest import src_module_names  # noqa: E402
import test_xla_rules as rule_rows  # noqa: E402
from jaxlite._src.base import core  # noqa: E402
from jaxlite._src.compiler.xla import lowering  # noqa: E402

# Primitives with no rule, and why: they never reach a compiled program.
NO_RULE = {
    # the NumPy backend's own contraction of a marked mul+add (compiler/passes.py); the xla
    # backend lowers the mul and add it came from
    "fma",
}

# Rules exercised by a named test instead of a table row.
BY_NAMED_TEST = {
    # linearize's placeholder for a custom_vjp function's tangent: its rule raises JAX's
    # TypeError (jvp of a custom_vjp function) when a program holding it is compiled
    "custom_lin":
        "test_when_python_runs.py::test_jvp_of_custom_vjp_raises_jax_type_error_after_fwd",
    "mulhi": "test_xla_backend.py::test_mulhi_and_unstack",
    "unstack": "test_xla_backend.py::test_mulhi_and_unstack",
    **{name: "test_xla_rules.py::test_identity_and_token_primitives" for name in (
        "copy", "device_put", "stage", "empty2", "after_all", "create_token", "dce_sink")},
    "name": "test_xla_rules.py::test_identity_and_token_primitives",
    "call": "test_xla_rules.py::test_call_primitives_inline",
    "closed_call": "test_xla_rules.py::test_call_primitives_inline",
    "debug_print": "test_xla_rules.py::test_debug_print_and_callback_run_inside_xla",
    "debug_callback": "test_xla_rules.py::test_debug_print_and_callback_run_inside_xla",
    "check": "test_xla_rules.py::test_check_staged_without_checkify",
    "geqrf": "test_xla_platform_rules.py::test_geqrf_lowers_its_jnp_program",
    "threefry2x32": "test_xla_rules.py::test_random_bits_both_threefry_modes",
    # collectives and sharding annotations: each runs in tests/test_xla_sharding.py's program on
    # 8 XLA CPU devices, against the NumPy backend and JAX
    **{name: "test_xla_sharding.py::test_values_equal_the_numpy_backend" for name in (
        "psum", "psum_fused", "psum_invariant", "pmax", "pmin", "all_gather", "all_to_all",
        "axis_index", "ppermute", "pbroadcast", "pvary", "reduce_scatter", "shard_map",
        "reshard", "sharding_constraint", "inspect_sharding")},
    "eq_to": "lax.eq_to/le_to/lt_to: staged only by sort's comparators",
    "le_to": "lax.eq_to/le_to/lt_to: staged only by sort's comparators",
    "lt_to": "lax.eq_to/le_to/lt_to: staged only by sort's comparators",
}


# jaxlite's own primitives, counted in a fresh interpreter that imports every module of
# jaxlite._src: in this process other tests' primitives (some named `add`, `sin`, ...) share
# the heap. A library's primitive (jax.extend.core.Primitive) lowers through its
# mlir.register_lowering rule and needs no rule here.
_CENSUS = r"""
import gc, importlib, json, weakref
from jaxlite._src.base import core
from jaxlite._src.compiler.xla import lowering
for name in MODULES:  # conftest.src_module_names(): .distributed needs mpi4py, has no primitives
  importlib.import_module(name)
proxies = (weakref.ProxyType, weakref.CallableProxyType)
prims = [o for o in gc.get_objects()
         if type(o) not in proxies and isinstance(o, core.Primitive) and not o.library]
print(json.dumps({"all": sorted({p.name for p in prims}),
                  "missing": sorted({p.name for p in prims if p not in lowering.rules})}))
"""


@functools.cache
def _census() -> dict:
  program = f"MODULES = {src_module_names()!r}\n" + _CENSUS
  r = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                     timeout=300, env=dict(os.environ))
  assert r.returncode == 0, r.stderr[-3000:]
  return json.loads(r.stdout.splitlines()[-1])


def _primitives_in(closed) -> set:
  seen, stack = set(), [closed.jaxpr]
  while stack:
    j = stack.pop()
    for e in j.eqns:
      seen.add(e.primitive)
      stack.extend(getattr(p, "jaxpr", p) for p in core.jaxprs_in_params(e.params))
  return seen


def _row_programs():
  for _, fn, args, _ in backend_rows.ROWS:
    yield (lambda *a, fn=fn: fn(jaxlite, *a)), args
  for table in (rule_rows.TABLE, rule_rows.LINALG, rule_rows.SPECIAL):
    for _, build, args in table:
      yield build(jaxlite), args


def test_every_primitive_has_an_xla_rule():
  missing = set(_census()["missing"])
  assert missing <= NO_RULE, sorted(missing - NO_RULE)
  # an entry that got its rule leaves the list
  assert not (NO_RULE & {p.name for p in lowering.rules}), sorted(
      NO_RULE & {p.name for p in lowering.rules})


def test_every_xla_rule_has_a_row():
  for name in src_module_names():  # every rule registered
    importlib.import_module(name)
  own = set(_census()["all"])  # (rules that tests register for their own primitives are theirs)
  seen = set()
  for fn, args in _row_programs():
    seen |= _primitives_in(jaxlite.make_jaxpr(fn)(*args))
  untested = {p.name for p in lowering.rules if p.name in own and not p.library
              and not lowering._outside_jaxlite(p)} - {p.name for p in seen}
  assert untested <= set(BY_NAMED_TEST), sorted(untested - set(BY_NAMED_TEST))


def test_a_primitive_without_a_rule_names_itself():
  p = core.Primitive("no_rule_here")
  p.def_abstract_eval(lambda x: x)
  closed = jaxlite.make_jaxpr(p.bind)(np.float32(1))
  with pytest.raises(lowering.LoweringError, match="'no_rule_here' not found"):
    lowering.lower_closed_jaxpr(closed)
