"""The seams for a second backend (issue 29): the one eager dispatch path routes applications on
another backend's buffers (`core.eager_routes`) or under another default backend
(`core.default_eager_route`); the NumPy fast paths step aside for them; jit calls compile
through `backend.backend_for_arguments`; jit checks its static and donated arguments as JAX."""
import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite._src.base import array as array_lib
from jaxlite._src.base import core
from jaxlite._src.compiler import backend as backend_lib
from jaxlite._src.compiler import numpy_codegen

from conftest import oracle


class ForeignBuffer:
  """A stand-in for another backend's device buffer: NumPy data behind a type NumPy fast paths
  must not compute on."""

  def __init__(self, value):
    self.value = np.asarray(value)

  shape = property(lambda self: self.value.shape)
  dtype = property(lambda self: self.value.dtype)
  ndim = property(lambda self: self.value.ndim)
  size = property(lambda self: self.value.size)

  def __array__(self, dtype=None, copy=None):
    return self.value if dtype is None else self.value.astype(dtype)


def _unwrap(x):
  if type(x) is array_lib.ArrayImpl and type(x._value) is ForeignBuffer:
    return x._value.value
  if type(x) is array_lib.ArrayImpl:
    return x._value
  return x


def _foreign(value, weak=False):
  return array_lib._from_numpy(ForeignBuffer(value), weak)


class Route:
  """An eager route that records the primitives it ran and answers with foreign Arrays."""

  def __init__(self):
    self.seen = []

  def __call__(self, primitive, args, params):
    self.seen.append(primitive.name)
    vals = [_unwrap(a) for a in args]
    avals = [core.get_aval(a) for a in args]
    out_avals = primitive.abstract_eval(*avals, **params)
    out = primitive.impl(*vals, **params)
    if primitive.multiple_results:
      return [_foreign(np.asarray(o, av.dtype), av.weak_type) for o, av in zip(out, out_avals)]
    return _foreign(np.asarray(out, out_avals.dtype), out_avals.weak_type)


@pytest.fixture
def route():
  r = Route()
  core.eager_routes[ForeignBuffer] = r
  try:
    yield r
  finally:
    del core.eager_routes[ForeignBuffer]


def test_foreign_buffers_take_their_route(route):
  x = _foreign(np.arange(4, dtype=np.float32))
  w = _foreign(np.arange(4, dtype=np.float32), weak=True)
  for fn, name, want in [
      (lambda: x + 1, "add", np.arange(4) + 1), (lambda: x * x, "mul", np.arange(4) ** 2),
      (lambda: jnp.sin(x), "sin", np.sin(np.arange(4, dtype=np.float32))),
      (lambda: x[1:3], None, np.arange(1, 3)),
      (lambda: x.at[0].set(7.0), None, [7, 1, 2, 3]),
      (lambda: jnp.concatenate([x, x]), "concatenate", np.tile(np.arange(4), 2)),
      (lambda: jnp.asarray(w, jnp.float32), "convert_element_type", np.arange(4))]:
    n = len(route.seen)
    out = fn()
    assert type(out._value) is ForeignBuffer, (name, type(out._value))
    np.testing.assert_allclose(out._value.value, want, rtol=1e-6)
    assert len(route.seen) > n
    if name is not None:
      assert name in route.seen[n:]
  # NumPy-backed Arrays beside them keep the NumPy path (the route is not asked)
  n = len(route.seen)
  y = jnp.arange(4.0) + 1
  assert type(y._value) is not ForeignBuffer and len(route.seen) == n


def test_default_route_runs_every_eager_application():
  r = Route()
  core.default_eager_route = r
  try:
    x = array_lib._from_numpy(np.arange(3, dtype=np.float32))
    out = x + 1
    out2 = jnp.exp(x)
    joined = jnp.stack([x, x])
  finally:
    core.default_eager_route = None
  assert r.seen[:3] == ["add", "exp", "concatenate"] or r.seen[:2] == ["add", "exp"]
  assert type(out._value) is ForeignBuffer and type(joined._value) is ForeignBuffer
  np.testing.assert_allclose(out._value.value, [1, 2, 3])
  np.testing.assert_allclose(out2._value.value, np.exp(np.arange(3, dtype=np.float32)))


class CountingBackend(numpy_codegen.NumpyBackend):
  name = "test_counting"

  def __init__(self):
    super().__init__()
    self.compiled = 0

  def compile(self, closed):
    self.compiled += 1
    exe = super().compile(closed)
    return lambda *args: exe(*[np.asarray(a) for a in args])


def test_jit_compiles_through_the_arguments_backend(route):
  b = CountingBackend()
  backend_lib._backends[b.name] = b
  backend_lib.buffer_backends[ForeignBuffer] = b.name
  try:
    f = jax.jit(lambda x, y: x * 2 + y)
    x = _foreign(np.arange(3, dtype=np.float32))
    assert backend_lib.backend_for_arguments([x, 1.0]) is b
    out = f(x, 1.0)
    np.testing.assert_allclose(np.asarray(out), [1, 3, 5])
    assert b.compiled == 1
    # NumPy arguments stay on the installed backend
    assert backend_lib.backend_for_arguments([jnp.ones(3)]) is backend_lib.installed()
    np.testing.assert_allclose(f(jnp.arange(3.0), 1.0), [1, 3, 5])
    assert b.compiled == 1
  finally:
    del backend_lib.buffer_backends[ForeignBuffer]
    del backend_lib._backends[b.name]


def test_backend_for_arguments_defaults_to_installed():
  # (the XLA backend registers its buffer types once loaded: NumPy buffers still map to the
  # installed backend)
  assert all(t is not np.ndarray for t in backend_lib.buffer_backends)
  assert backend_lib.backend_for_arguments([np.ones(2), 3]) is backend_lib.installed()


# --- jit's argument checks, as JAX's -------------------------------------------------------------

def _two(x, y):
  return x


def _posonly(x, /, y):
  return x


CASES = [
    (_two, dict(static_argnums=5)), (_two, dict(static_argnums=-3)),
    (_two, dict(static_argnames="z")), (_two, dict(donate_argnums=5)),
    (_two, dict(donate_argnames="z")), (_two, dict(static_argnums=0, donate_argnums=0)),
    (_posonly, dict(static_argnames="x")), (_two, dict(static_argnums="x")),
    (_two, dict(static_argnames=1)), (_two, dict(static_argnums=1.0)),
    (lambda x, *, y: x, dict(static_argnums=1)),
]


@pytest.mark.parametrize("fun,kw", CASES)
def test_jit_argument_errors_match_jax(fun, kw):
  jax_real = oracle()
  with pytest.raises(Exception) as want:
    jax_real.jit(fun, **kw)
  with pytest.raises(type(want.value)) as got:
    jax.jit(fun, **kw)
  assert str(got.value) == str(want.value)


def test_static_argnums_out_of_range_is_a_value_error():
  with pytest.raises(ValueError, match=r"static_argnums=\(5,\), but only accepts 2 positional"):
    jax.jit(_two, static_argnums=5)


@pytest.mark.parametrize("fun,kw,args,kwargs", [
    (lambda *a: a[0], dict(static_argnums=5), (1.0, 2.0), {}),
    (lambda x, **kw: x, dict(static_argnames="z"), (1.0,), {}),
    (_two, dict(static_argnums=-2), (3.0, 2.0), {}),
    (_two, dict(static_argnames="y"), (3.0,), {"y": 2}),
    (lambda x, *, y: x * y, dict(static_argnames="y"), (3.0,), {"y": 2}),
])
def test_jit_accepted_arguments_as_jax(fun, kw, args, kwargs):
  jax_real = oracle()
  want = jax_real.jit(fun, **kw)(*args, **kwargs)
  np.testing.assert_allclose(jax.jit(fun, **kw)(*args, **kwargs), want)


# --- the seams, checked in the source -----------------------------------------------------------

import pathlib  # noqa: E402
import re  # noqa: E402

_SRC = pathlib.Path(__file__).resolve().parents[1] / "src" / "jaxlite" / "_src"


def test_partitioner_reads_no_private_field_of_the_jit_wrapper():
  """sharding/partition.py and distributed/sharded_jit.py see a jit through its CallSite."""
  for rel in ("sharding/partition.py", "distributed/sharded_jit.py"):
    text = (_SRC / rel).read_text()
    assert not re.findall(r"\bfn\._\w+", text), rel
    assert not re.findall(r"\bjf\._\w+", text), rel


# Name tests left in compiler/ and sharding/, each not a dispatch on what a primitive is:
# backend names (tiers), file names (the native cache; the tbb wheel's library, native
# threads), an axis type's name (rules). The native backend's code-text tables are keyed by
# `primitive_kinds.operation`.
_ALLOWED = {"compiler/tiers.py": 2, "compiler/native/cache.py": 1,
            "compiler/native/threads.py": 1, "sharding/rules.py": 1}


def test_no_dispatch_on_primitive_names_in_compiler_and_sharding():
  pattern = re.compile(r"name ==|\.name in\b|name !=|\.name not in\b")
  for folder in ("compiler", "sharding"):
    for path in sorted((_SRC / folder).rglob("*.py")):
      rel = path.relative_to(_SRC).as_posix()
      hits = [ln for ln in path.read_text().splitlines() if pattern.search(ln)]
      assert len(hits) <= _ALLOWED.get(rel, 0), (rel, hits)


def test_donating_jit_on_foreign_buffers_runs_on_their_backend(route):
  b = CountingBackend()
  backend_lib._backends[b.name] = b
  backend_lib.buffer_backends[ForeignBuffer] = b.name
  try:
    f = jax.jit(lambda x: x + 1, donate_argnums=0)
    x = _foreign(np.arange(3, dtype=np.float32))
    out = f(x)
    np.testing.assert_allclose(np.asarray(out), [1, 2, 3])
    assert b.compiled == 1 and x.is_deleted()
  finally:
    del backend_lib.buffer_backends[ForeignBuffer]
    del backend_lib._backends[b.name]
