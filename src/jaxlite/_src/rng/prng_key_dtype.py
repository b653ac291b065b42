"""The PRNG key dtype: `key<fry>` and its kin (KeyTy over a PRNGImpl), the implementations
registry (`prng_impls`, `resolve_impl`) and the structured NumPy records that key arrays hold.

The bottom of the rng package: the threefry hash (prng_threefry.py) and the key primitives and
key arrays (prng.py) stand on it.
"""
from __future__ import annotations

import math

import numpy as np

from jaxlite._src.base import dtypes
from jaxlite._src.base.config import config
from jaxlite._src.base.extended_dtypes import extended

# --- the key dtype -----------------------------------------------------------------------------

# One key per element: the two uint32 words of threefry's key, in JAX's key_data order.
KEY_STORAGE = np.dtype([("k0", np.uint32), ("k1", np.uint32)])


def storage_dtype(dtype):
  """The NumPy dtype of the buffers of arrays of `dtype` (key arrays hold their impl's records:
  KEY_STORAGE for threefry); for buffers that impls allocate ahead of filling them (scan's
  stacked outputs, ...)."""
  if getattr(dtype, "_is_extended", False) is not True:
    return dtype
  if hasattr(dtype, "_impl"):
    return dtype._impl.storage
  from jaxlite._src.base import extended_dtypes  # user extended dtypes: their physical type
  return extended_dtypes.physical_dtype(dtype) if extended_dtypes.has_rules(dtype) else dtype


class prng_key(extended):
  """Abstract dtype of all PRNG key arrays (`jax.dtypes.prng_key`)."""


class PRNGImpl:
  """A PRNG implementation: its name, its short tag (`fry`), the shape of its key data and, for
  the implementations written over their key data (rbg, unsafe_rbg, `define_prng_impl`'s), the
  functions seed(seed) -> data, split(data, shape), random_bits(data, bit_width, shape) and
  fold_in(data, msg) on one key's uint32 data. threefry2x32 has none: its keys are this
  module's primitives, computed here. A key array holds one `storage` record per key."""
  __slots__ = ("key_shape", "name", "tag", "seed", "split", "random_bits", "fold_in", "storage")

  def __init__(self, name: str, tag: str, key_shape: tuple, seed=None, split=None,
               random_bits=None, fold_in=None):
    self.name, self.tag, self.key_shape = name, tag, tuple(key_shape)
    self.seed, self.split, self.random_bits, self.fold_in = seed, split, random_bits, fold_in
    self.storage = KEY_STORAGE if seed is None else np.dtype(
        [("data", np.uint32, self.key_shape)])

  def __str__(self):  # printed as a param: `random_wrap[impl=fry]`
    return self.tag

  def __repr__(self):
    return f"PRNGImpl(key_shape={self.key_shape}, name='{self.name}', tag='{self.tag}')"

  def __hash__(self):
    return hash(self.name)

  def _functions(self):
    return (self.seed, self.split, self.random_bits, self.fold_in)

  def __eq__(self, other):
    return other is self or (type(other) is PRNGImpl and other.name == self.name
                             and other.key_shape == self.key_shape
                             and other._functions() == self._functions())


class PRNGSpec:
  """Names a PRNG implementation: what `jax.extend.random.define_prng_impl` returns, taken by
  `impl=` and returned by `jax.random.key_impl` for an unregistered implementation."""
  __slots__ = ("_impl",)

  def __init__(self, impl: PRNGImpl):
    self._impl = impl

  def __repr__(self):
    return f"PRNGSpec({self._impl.name!r})"

  def __str__(self):
    return str(self._impl)

  def __hash__(self):
    return hash(self._impl)

  def __eq__(self, other):
    return isinstance(other, PRNGSpec) and self._impl == other._impl


threefry_impl = PRNGImpl("threefry2x32", "fry", (2,))
# name -> the implementations `jax_default_prng_impl` and `impl="..."` name (rng.prng_impls adds
# rbg and unsafe_rbg)
prng_impls = {"threefry2x32": threefry_impl}


class KeyTy:
  """The extended dtype of typed key arrays; prints as `key<fry>`."""
  _is_extended = True
  type = prng_key
  kind = "V"

  def __init__(self, impl: PRNGImpl):
    self._impl = impl
    self.name = self._short_name = f"key<{impl.tag}>"
    self.itemsize = 4 * math.prod(impl.key_shape)

  def __repr__(self):
    return self.name

  __str__ = __repr__

  def __eq__(self, other):
    return type(other) is KeyTy and other._impl == self._impl

  def __ne__(self, other):
    return not self == other

  def __hash__(self):
    return hash((KeyTy, self._impl))


key_dtype = KeyTy(threefry_impl)


def is_key_dtype(dtype) -> bool:
  return type(dtype) is KeyTy


def issubdtype_extended(a, b) -> bool:
  """`jnp.issubdtype` when either side is extended: keys are prng_key and extended only."""
  if is_key_dtype(a):
    return b in (prng_key, extended) or b == a
  if isinstance(a, type) and issubclass(a, extended):
    return isinstance(b, type) and issubclass(a, b)
  return False


dtypes._issubdtype_extended[0] = issubdtype_extended


def resolve_impl(spec) -> PRNGImpl:
  """The PRNGImpl named by `spec` (None, a name, an impl or a key dtype)."""
  if spec is None:
    spec = config.jax_default_prng_impl
  if isinstance(spec, PRNGImpl):
    return spec
  if is_key_dtype(spec):
    return spec._impl
  if type(spec) is PRNGSpec:
    return spec._impl
  if isinstance(spec, str):
    if spec in prng_impls:
      return prng_impls[spec]
    known = ", ".join(f'"{s}"' for s in prng_impls)
    raise ValueError(f'unrecognized PRNG implementation "{spec}". Did you mean one of: {known}?')
  raise TypeError(f"unrecognized type {type(spec)} for specifying PRNG implementation.")
