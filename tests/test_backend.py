"""The backend seam: a second backend written as one class plus its tables sees every compile
(jit, scan, cond, while, custom_jvp/vjp, checkpoint, reduce, scatter, reduce_window), and lowering
tables merge by override."""
import importlib.util

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite._src.base import core
from jaxlite._src.compiler import backend as backend_lib
from jaxlite._src.compiler import numpy_codegen
from jaxlite._src.lax import elementwise as ew


class CountingBackend(numpy_codegen.NumpyBackend):
  """The NumPy backend, recording every jaxpr it compiles; `sin` runs through a kernel of its
  own (no template) that counts its calls — a backend differing from NumPy by data only."""
  name = "counting"

  def __init__(self):
    super().__init__()
    self.compiles, self.scans, self.sin_calls = [], [], 0

    def sin_kernel(x):
      self.sin_calls += 1
      return np.sin(x)
    self.tables = numpy_codegen.TABLES.derive(templates={ew.sin_p: None},
                                              impls={ew.sin_p: sin_kernel})

  def compile(self, closed):
    self.compiles.append(closed)
    return super().compile(closed)

  def compile_scan(self, closed, num_consts, num_carry, reverse):
    self.scans.append(closed)
    return super().compile_scan(closed, num_consts, num_carry, reverse)


class LoopingBackend(backend_lib.Backend):
  """A backend that writes only `compile` (here: NumPy's) and inherits the generic scan loop."""
  name = "looping"
  tables = numpy_codegen.TABLES

  def compile(self, closed):
    return numpy_codegen.NUMPY.compile(closed)


@pytest.fixture
def counting(on_numpy):
  # a backend of the NumPy family: installed over the NumPy backend (under JAXLITE_BACKEND=xla
  # the eager route would otherwise be XLA's, which never asks the installed backend)
  b = CountingBackend()
  with backend_lib.using_backend(b):
    yield b


def _custom_jvp_fn():
  @jax.custom_jvp
  def f(x):
    return jnp.sin(x) * 2.0
  f.defjvp(lambda p, t: (f(*p), 2.0 * jnp.cos(p[0]) * t[0]))
  return f


def _custom_vjp_fn():
  @jax.custom_vjp
  def f(x):
    return jnp.sin(x) * 2.0
  f.defvjp(lambda x: (f(x), jnp.cos(x)), lambda c, g: (2.0 * c * g,))
  return f


def _eval_staged(f):
  """A custom function's staged primitive run op by op: its impl compiles the function's jaxpr.
  (Eagerly under grad, JAX and jaxlite run only the rule's Python: nothing compiles there.)"""
  closed = jax.make_jaxpr(f)(X)
  return jax.core.eval_jaxpr(closed.jaxpr, closed.consts, X)[0]


def _sin3(y):
  return jnp.sin(y) * 3.0


X = np.linspace(-1.0, 1.0, 5).astype(np.float32)

# (site, thunk run under the counting backend, expected value, compiles at least, scans)
SITES = [
    ("jit", lambda: jax.jit(lambda x: jnp.sin(x) * 2.0 + 1.0)(X), np.sin(X) * 2 + 1, 1, 0),
    ("scan", lambda: lax.scan(lambda c, x: (c + jnp.sin(x), c), 0.0, X)[0],
     np.float32(np.sin(X).sum()), 0, 1),
    ("cond", lambda: lax.cond(True, lambda x: jnp.sin(x), lambda x: -x, X), np.sin(X), 1, 0),
    ("while_loop", lambda: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, jnp.sin(c[1])),
                                          (0, X))[1], np.sin(np.sin(np.sin(X))), 2, 0),
    ("custom_jvp", lambda: _eval_staged(_custom_jvp_fn()), 2 * np.sin(X), 1, 0),
    ("custom_vjp", lambda: _eval_staged(_custom_vjp_fn()), 2 * np.sin(X), 1, 0),
    # Eagerly checkpoint runs the Python; under grad the recomputing remat2 eqn is compiled.
    ("checkpoint", lambda: jax.grad(lambda x: jax.checkpoint(_sin3)(x).sum())(X),
     3 * np.cos(X), 1, 0),
    ("reduce", lambda: lax.reduce(X, np.float32(0), lambda a, b: a + jnp.abs(b), (0,)),
     np.abs(X).sum(), 1, 0),
    ("reduce_window", lambda: lax.reduce_window(X, np.float32(0), lambda a, b: a + b * b, (2,),
                                                (1,), "VALID"), X[:-1] ** 2 + X[1:] ** 2, 1, 0),
]


@pytest.mark.parametrize("site,thunk,want,min_compiles,scans", SITES, ids=[s[0] for s in SITES])
def test_every_site_compiles_through_the_installed_backend(counting, site, thunk, want,
                                                            min_compiles, scans):
  got = thunk()
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
  assert len(counting.compiles) >= min_compiles, site
  assert len(counting.scans) == scans, site


@pytest.mark.parametrize("site", ["jit", "scan", "cond", "while_loop", "custom_jvp"])
def test_lowering_override_is_used(counting, site):
  # sin has no template in the counting backend's tables: its kernel runs in the generated code.
  thunk = dict((s[0], s[1]) for s in SITES)[site]
  thunk()
  assert counting.sin_calls >= 1
  for closed in counting.compiles:
    src = numpy_codegen.jaxpr_to_source(closed.jaxpr, closed.consts, "f", counting.tables)[0]
    assert "np.sin(" not in src


def test_jit_compiles_once_and_caches_the_executable(counting):
  f = jax.jit(lambda x: x * 2.0 + 1.0)
  for _ in range(3):
    np.testing.assert_array_equal(np.asarray(f(X)), X * 2 + 1)
  assert len(counting.compiles) == 1
  assert f.lower(X).compile().as_text().startswith("def _jaxpr_fn")


def test_tier1_is_the_default_and_is_restored(on_numpy):
  # The default backend is tier 1 (NumPy with fused tiled kernels); JAXLITE_TIER=0 picks tier 0.
  # Tier 1 is the native tier's variant where numba is installed and the native flag is on.
  native = jax.config.jax_jaxlite_native and importlib.util.find_spec("numba") is not None
  default = backend_lib.get_backend(("numpy-native" if native else "numpy-tiled")
                                    if jax.config.jax_jaxlite_tier else "numpy")
  assert backend_lib.get_backend() is default
  assert backend_lib.get_backend("numpy") is numpy_codegen.NUMPY
  b = CountingBackend()
  with backend_lib.using_backend(b):
    assert backend_lib.get_backend() is b
  assert backend_lib.get_backend() is default
  with pytest.raises(RuntimeError, match="Unknown backend 'tpu'"):
    backend_lib.get_backend("tpu")


def test_executables_are_cached_per_backend():
  closed = jax.make_jaxpr(lambda x: jnp.cos(x) + 1.0)(X)
  numpy_exe = backend_lib.compile_jaxpr(closed)
  assert backend_lib.compile_jaxpr(closed) is numpy_exe
  b = CountingBackend()
  with backend_lib.using_backend(b):
    other = backend_lib.compile_jaxpr(closed)
    assert other is not numpy_exe and backend_lib.compile_jaxpr(closed) is other
  assert b.compiles == [closed]
  np.testing.assert_allclose(other(X)[0], numpy_exe(X)[0])


@pytest.mark.parametrize("reverse", [False, True])
def test_generic_scan_loop_of_a_compile_only_backend(reverse, on_numpy):
  def body(c, x):
    return c * 0.5 + x, c + x * x
  want_c, want_ys = lax.scan(body, np.float32(1), X, reverse=reverse)
  b = LoopingBackend()
  with backend_lib.using_backend(b):
    got_c, got_ys = lax.scan(body, np.float32(1), X, reverse=reverse)
  np.testing.assert_allclose(np.asarray(got_c), np.asarray(want_c), rtol=1e-6)
  np.testing.assert_allclose(np.asarray(got_ys), np.asarray(want_ys), rtol=1e-6)


def test_host_transfer_of_the_numpy_backend():
  b = numpy_codegen.NUMPY
  buf = b.to_device(np.arange(3))
  np.testing.assert_array_equal(b.to_host(buf), np.arange(3))
  assert [d.platform for d in b.devices()] == ["cpu"] * len(jax.devices())


# --- table override merge -----------------------------------------------------------------------

def test_derived_tables_override_inherit_and_mask():
  p, q, r = (core.Primitive(n) for n in ("p", "q", "r"))
  root = backend_lib.LoweringTables()
  root.templates[p] = lambda: "np.p({0})"
  root.templates[q] = lambda: "np.q({0})"
  root.ufuncs.add(p)
  child = root.derive(templates={q: lambda: "child_q({0})"}, quiet=[p])
  assert child.templates[p]() == "np.p({0})"  # inherited
  assert child.templates[q]() == "child_q({0})"  # overridden
  assert root.templates[q]() == "np.q({0})"  # parent untouched
  root.templates[r] = lambda: "np.r({0})"  # later registrations show through
  assert child.templates[r]() == "np.r({0})"
  child.templates[p] = None  # masked: the codegen falls back to the kernel
  assert child.templates.get(p) is None and root.templates[p]() == "np.p({0})"
  assert p in child.ufuncs and p in child.quiet and p not in root.quiet
  child.ufuncs.discard(p)
  assert p not in child.ufuncs and p in root.ufuncs
  grandchild = child.derive()
  assert p not in grandchild.ufuncs and grandchild.templates[r]() == "np.r({0})"


def test_kernel_defaults_to_the_primitive_impl():
  tables = numpy_codegen.TABLES.derive(impls={ew.cos_p: np.cos})
  assert tables.kernel(ew.cos_p) is np.cos
  assert tables.kernel(ew.sin_p) is ew.sin_p.impl
  assert numpy_codegen.TABLES.kernel(ew.cos_p) is ew.cos_p.impl


def test_derive_rejects_unknown_tables():
  with pytest.raises(TypeError, match="unknown table 'kernels'"):
    numpy_codegen.TABLES.derive(kernels={})
