"""`jax.experimental.random`: `stateful_rng(seed)`, a NumPy-style generator over JAX's stateless
keys: a base key plus a draw counter in a `jax.ref.Ref`, so each draw folds in the next count
(eagerly, and under jit, where the counter is a staged ref)."""
from __future__ import annotations

import dataclasses
import operator

import numpy as np

from jaxlite._src.base import core, dtypes, tree_util
from jaxlite._src.rng import prng, random
from jaxlite._src.state import primitives as ref_primitives
from jaxlite._src.state.types import Ref


def _canonicalize_size(size, *args) -> tuple:
  if size is None:
    return np.broadcast_shapes(*(np.shape(a) for a in args))
  if isinstance(size, (int, np.integer)):
    return (operator.index(size),)
  return tuple(operator.index(s) for s in size)


@dataclasses.dataclass(frozen=True, slots=True)
class StatefulPRNG:
  """Stateful generator: `_base_key` (a typed key) and `_counter` (a scalar int Ref)."""
  _base_key: object
  _counter: object

  def __post_init__(self):
    if not (isinstance(self._base_key, core.Array)
            and dtypes.issubdtype(self._base_key.dtype, prng.prng_key)):
      raise ValueError(f"Expected base_key to be a typed PRNG key; got {self._base_key}")
    if not isinstance(self._counter, Ref):
      raise ValueError(f"Expected counter to be a scalar integer ref; got {self._counter}")

  def key(self, shape=()):
    """A new key (or `shape` of keys), advancing the counter."""
    if self._base_key.shape:
      raise ValueError("cannot operate on split stateful generator")
    key = random.fold_in(self._base_key, ref_primitives.ref_get(self._counter))
    ref_primitives.ref_addupdate(self._counter, ..., 1)
    shape = _canonicalize_size(shape)
    return random.split(key, shape) if shape else key

  def random(self, size=None, dtype=float):
    """Floats in [0, 1)."""
    return random.uniform(self.key(), shape=_canonicalize_size(size), dtype=dtype)

  def uniform(self, low=0, high=1, size=None, *, dtype=float):
    return random.uniform(self.key(), _canonicalize_size(size, low, high), minval=low,
                          maxval=high, dtype=dtype)

  def normal(self, loc=0, scale=1, size=None, *, dtype=float):
    from jaxlite._src.numpy import namespace as jnp
    norm = random.normal(self.key(), _canonicalize_size(size, loc, scale), dtype)
    return (jnp.asarray(loc) + jnp.asarray(scale) * norm).astype(dtype)

  def integers(self, low, high=None, size=None, *, dtype=int):
    if high is None:
      low, high = 0, low
    return random.randint(self.key(), _canonicalize_size(size, low, high), minval=low,
                          maxval=high, dtype=dtype)

  def split(self, num):
    """One generator of `num` split keys and counters (for vmap)."""
    from jaxlite._src.numpy import namespace as jnp
    return StatefulPRNG(self.key(num), ref_primitives.new_ref(jnp.zeros(num, dtype=int)))

  def spawn(self, n_children: int) -> list:
    """`n_children` independent generators."""
    return [type(self)(k, ref_primitives.new_ref(0)) for k in self.key(n_children)]


tree_util.register_dataclass(StatefulPRNG, ["_base_key", "_counter"], [])


def stateful_rng(seed=None, *, impl=None) -> StatefulPRNG:
  """A StatefulPRNG seeded by `seed` (by NumPy's entropy when None, at the top level only)."""
  if seed is None:
    if core.current_trace() is not core.eval_trace:
      raise TypeError("When used within transformed code, jax.experimental.random."
                      "stateful_rng() requires an explicit seed to be set.")
    seed = np.int64(np.random.SeedSequence().entropy & np.iinfo(np.int64).max)
  return StatefulPRNG(random.key(seed, impl=impl), ref_primitives.new_ref(0))
