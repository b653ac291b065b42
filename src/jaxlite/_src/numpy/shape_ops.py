"""jnp's joining, splitting, tiling, flipping, padding, inserting and deleting functions over lax.

Functions JAX stages as named nested jits (`_flip`, `_roll_static`, `_pad`, `atleast_1d`,
`append`, `block`, `rot90`) are wrapped with `internal_jit` under those names.
"""
from __future__ import annotations

import itertools
import operator

import numpy as np

from jaxlite._src.base import array as array_lib
from jaxlite._src.base import core, dtypes
from jaxlite._src.transforms.jit_function import internal_jit
from jaxlite._src.lax import shape as lax_shape
from jaxlite._src.lax import slicing
from jaxlite._src.lax.elementwise_functions import _convert_element_type
from jaxlite._src.numpy import creation, indexing, where_reshape as lax_numpy
from jaxlite._src.numpy.util import (canonicalize_axis, check_arraylike, dtype_weak,
                                     promote_dtypes, shape_of)

_INT = np.dtype(np.int32)


def _asarray(a):
  if isinstance(a, core.Array):
    return a
  from jaxlite._src.numpy.creation import asarray
  return asarray(a)


def _concrete_ints(x, what: str):
  """`x` (an int or sequence of ints, possibly concrete arrays) as a NumPy int64 array."""
  if isinstance(x, core.Tracer):
    x = core.concrete_or_error(None, x, f"The {what} argument must be concrete.")
  elif isinstance(x, core.Array):
    x = x._host_value()
  elif isinstance(x, (list, tuple)):
    x = [_concrete_ints(e, what) for e in x]
  return np.asarray(x, np.int64)


def _axes_tuple(axis, ndim):
  if axis is None:
    return tuple(range(ndim))
  if isinstance(axis, (int, np.integer)):
    return (canonicalize_axis(axis, ndim),)
  return tuple(canonicalize_axis(a, ndim) for a in axis)


# --- joining -------------------------------------------------------------------------------------

def concatenate(arrays, axis: int | None = 0, dtype=None):
  """Joins arrays along an existing axis (flattened first when `axis` is None)."""
  if isinstance(arrays, core.Array):
    arrays = [arrays[i] for i in range(arrays.shape[0])] if arrays.ndim else [arrays]
  check_arraylike("concatenate", *arrays)  # a list element is refused, as JAX does
  arrays = [_asarray(a) for a in arrays]
  if not arrays:
    raise ValueError("Need at least one array to concatenate.")
  if axis is None:  # flattening first makes 0-d inputs joinable too, as in JAX
    return concatenate([lax_numpy.ravel(a) for a in arrays], 0, dtype)
  if arrays[0].ndim == 0:
    raise ValueError("Zero-dimensional arrays cannot be concatenated.")
  axis = canonicalize_axis(axis, arrays[0].ndim)
  if dtype is None and core._state.trace is core.eval_trace:
    out = _eager_join(lax_shape.concatenate_p, arrays, axis)
    if out is not None:
      return out
  arrays = _promote_to(arrays, dtype)
  return lax_shape.concatenate(arrays, axis)


def _eager_join(prim, arrays, axis):
  """The join primitive's backend impl run right away on concrete arrays of one dtype and weak
  type (None when promotion is needed, or when shapes disagree: the general path raises JAX's
  error)."""
  if len(arrays) > 1 and any(dtype_weak(a) == (np.bool_, True) for a in arrays):
    return None  # promotion makes weak booleans strong (JAX's promote_dtypes casts each one)
  params = {"dimension": axis} if prim is lax_shape.concatenate_p else {"axis": axis}
  try:
    return array_lib.bind_uniform(prim, arrays, **params)
  except ValueError:
    return None


def _promote_to(arrays, dtype):
  if dtype is None:
    return promote_dtypes(*arrays)
  dtype = dtypes.check_user_dtype(dtype)
  return [_convert_element_type(a, dtype, weak_type=False) for a in arrays]


def concat(arrays, /, *, axis: int | None = 0):
  check_arraylike("concat", *arrays)
  return concatenate(arrays, axis)


def stack(arrays, axis: int = 0, out=None, dtype=None):
  """Joins same-shaped arrays along a new axis."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.stack is not supported.")
  if isinstance(arrays, core.Array):
    arrays = [arrays[i] for i in range(arrays.shape[0])]
  check_arraylike("stack", *arrays)
  arrays = [_asarray(a) for a in arrays]
  if not arrays:
    raise ValueError("Need at least one array to stack.")
  axis = canonicalize_axis(axis, arrays[0].ndim + 1)
  if dtype is None and core._state.trace is core.eval_trace:
    out = _eager_join(lax_shape.stack_p, arrays, axis)
    if out is not None:
      return out
  return lax_shape.stack_p.bind(*_promote_to(arrays, dtype), axis=axis)


def _atleast(nd, expand_at):
  """An `atleast_{nd}d` staged as a named jit, like JAX's."""
  def one(x):
    x = _asarray(x)
    dims = expand_at.get(x.ndim) if x.ndim < nd else None
    return lax_shape.expand_dims(x, dims) if dims else x

  def fn(*arys):
    check_arraylike(fn.__name__, *arys)
    outs = [one(a) for a in arys]
    return outs[0] if len(outs) == 1 else outs
  fn.__name__ = fn.__qualname__ = f"atleast_{nd}d"
  return internal_jit(fn)


atleast_1d = _atleast(1, {0: (0,)})
atleast_2d = _atleast(2, {0: (0, 1), 1: (0,)})
atleast_3d = _atleast(3, {0: (0, 1, 2), 1: (0, 2), 2: (2,)})


def hstack(tup, dtype=None):
  check_arraylike("hstack", *tup)
  arrs = [atleast_1d(m) for m in tup]
  return concatenate(arrs, 0 if arrs and arrs[0].ndim == 1 else 1, dtype)


def vstack(tup, dtype=None):
  check_arraylike("vstack", *tup)
  return concatenate([atleast_2d(m) for m in tup], 0, dtype)


def dstack(tup, dtype=None):
  check_arraylike("dstack", *tup)
  return concatenate([atleast_3d(m) for m in tup], 2, dtype)


def column_stack(tup):
  check_arraylike("column_stack", *tup)
  arrs = []
  for v in tup:
    v = _asarray(v)
    arrs.append(lax_numpy.transpose(atleast_2d(v)) if v.ndim < 2 else v)
  return concatenate(arrs, 1)


def _append(arr, values, axis):
  if axis is None:
    return concatenate([lax_numpy.ravel(arr), lax_numpy.ravel(values)], 0)
  return concatenate([arr, values], axis)


_append_jit = internal_jit(_append, static_argnums=(2,), name="append")


def append(arr, values, axis: int | None = None):
  if axis is None:  # JAX ravels each operand first, then joins them
    check_arraylike("ravel", arr)
    check_arraylike("ravel", values)
  else:
    check_arraylike("concatenate", arr, values)
  return _append_jit(_asarray(arr), _asarray(values), axis)


def _block(xs):
  """(array, list depth) of a nested-list block, concatenating innermost lists last-axis first."""
  if isinstance(xs, tuple):
    raise ValueError(f"jax.numpy.block does not allow tuples, got {xs}")  # noqa: TRY004
  if not isinstance(xs, list):
    return _asarray(xs), 1
  if not xs:
    raise ValueError("jax.numpy.block does not allow empty list arguments.")
  parts, depths = zip(*(_block(x) for x in xs))
  if any(d != depths[0] for d in depths[1:]):
    raise ValueError("Mismatched list depths in jax.numpy.block")
  rank = max(depths[0], max(p.ndim for p in parts))
  parts = [lax_shape.broadcast(p, (1,) * (rank - p.ndim)) if p.ndim < rank else p
           for p in parts]
  return concatenate(parts, -depths[0]), depths[0] + 1


def _block_fn(arrays):
  return _block(arrays)[0]


_block_jit = internal_jit(_block_fn, name="block")


def block(arrays):
  """Assembles an array from nested lists of blocks."""
  return _block_jit(arrays)


# --- splitting -----------------------------------------------------------------------------------

def _split(name, ary, indices_or_sections, axis):
  ary = _asarray(ary)
  axis = canonicalize_axis(axis, ary.ndim)
  size = ary.shape[axis]
  if isinstance(indices_or_sections, (list, tuple)) or np.ndim(
      indices_or_sections if not isinstance(indices_or_sections, core.Array)
      else indices_or_sections._host_value() if not isinstance(indices_or_sections, core.Tracer)
      else np.zeros(indices_or_sections.shape)) > 0:
    cuts = _concrete_ints(indices_or_sections, "indices_or_sections")
    cuts = np.where(cuts < 0, cuts + size, cuts).clip(0, size)
    bounds = np.concatenate([[0], cuts, [size]]).astype(np.int64)
  else:
    bounds = _section_bounds(name, size, int(_concrete_ints(indices_or_sections,
                                                            "indices_or_sections")))
  if np.all(np.diff(bounds) >= 0):
    sizes = tuple(np.int64(b - a) for a, b in itertools.pairwise(bounds))
    return list(lax_shape.split_p.bind(ary, sizes=sizes, axis=axis))
  return [slicing.slice_in_dim(ary, int(a), max(int(a), int(b)), 1, axis)
          for a, b in itertools.pairwise(bounds)]


def _section_bounds(name, size, sections):
  if sections <= 0:  # JAX divides by the count: ZeroDivisionError for 0, as there
    raise (ZeroDivisionError if sections == 0 else ValueError)(
        f"{name}: number sections must be larger than 0, got {sections}.")
  part, rest = divmod(size, sections)
  if rest and name == "split":
    raise ValueError("array split does not result in an equal division")
  sizes = [part + 1] * rest + [part] * (sections - rest)
  return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def split(ary, indices_or_sections, axis: int = 0):
  check_arraylike("split", ary)
  return _split("split", ary, indices_or_sections, axis)


def array_split(ary, indices_or_sections, axis: int = 0):
  check_arraylike("array_split", ary)
  return _split("array_split", ary, indices_or_sections, axis)


def hsplit(ary, indices_or_sections):
  check_arraylike("hsplit", ary)
  ary = _asarray(ary)
  if ary.ndim == 0:
    raise ValueError("hsplit only works on arrays of 1 or more dimensions")
  return _split("split", ary, indices_or_sections, 0 if ary.ndim == 1 else 1)


def vsplit(ary, indices_or_sections):
  check_arraylike("vsplit", ary)
  ary = _asarray(ary)
  if ary.ndim < 2:
    raise ValueError("vsplit only works on arrays of 2 or more dimensions")
  return _split("split", ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
  check_arraylike("dsplit", ary)
  ary = _asarray(ary)
  if ary.ndim < 3:
    raise ValueError("dsplit only works on arrays of 3 or more dimensions")
  return _split("split", ary, indices_or_sections, 2)


def unstack(x, /, *, axis: int = 0):
  check_arraylike("unstack", x)
  x = _asarray(x)
  if x.ndim == 0:
    raise ValueError("Input array must be at least 1-d.")
  return lax_shape.unstack(x, axis)


# --- tiling and repeating ------------------------------------------------------------------------

def tile(A, reps):
  """`A` repeated `reps` times along each axis (NumPy's rank alignment of A and reps)."""
  check_arraylike("tile", A)
  A = _asarray(A)
  flt = (float, np.floating)
  if isinstance(reps, flt) or (isinstance(reps, (tuple, list)) and any(isinstance(r, flt)
                                                                          for r in reps)):
    raise TypeError("Shapes must be 1D sequences of concrete values of integer type, got "
                    f"tile reps {reps!r}.")
  reps = tuple(_concrete_ints(reps, "reps").reshape(-1).tolist())
  if len(reps) > A.ndim:
    A = lax_shape.expand_dims(A, tuple(range(len(reps) - A.ndim)))
  reps = (1,) * (A.ndim - len(reps)) + reps
  return lax_shape.tile(A, reps)


def repeat(a, repeats, axis: int | None = None, *, total_repeat_length: int | None = None):
  """Repeats elements; `repeats` is a scalar or one count per element along `axis`."""
  check_arraylike("repeat", a)
  a = _asarray(a)
  if axis is None:
    a, axis = lax_numpy.ravel(a), 0
  axis = canonicalize_axis(axis, a.ndim)
  scalar = _static_scalar(repeats)
  if scalar is not None and (total_repeat_length is None
                             or total_repeat_length == scalar * a.shape[axis]):
    return _repeat_scalar(a, scalar, axis)
  return _repeat_array(a, repeats, axis, total_repeat_length)


def _static_scalar(repeats):
  if isinstance(repeats, (int, np.integer)):
    return int(repeats)
  if isinstance(repeats, np.ndarray) and repeats.ndim == 0:
    return int(repeats)
  if type(repeats) is core.array_type and repeats.ndim == 0:
    return int(repeats._host_value())
  return None


def _repeat_scalar(a, n, axis):
  if n < 0:
    raise ValueError(f"repeats may not contain negative values, got {n}")
  shape = a.shape[:axis + 1] + (n,) + a.shape[axis + 1:]
  dims = tuple(i for i in range(len(shape)) if i != axis + 1)
  b = lax_shape.broadcast_in_dim_p.bind(a, shape=shape, broadcast_dimensions=dims, sharding=None)
  new = a.shape[:axis] + (a.shape[axis] * n,) + a.shape[axis + 1:]
  return lax_shape.reshape_p.bind(b, new_sizes=new, dimensions=None, sharding=None)


def _repeat_array(a, repeats, axis, total):
  from jaxlite._src.numpy.creation import zeros
  from jaxlite._src.numpy.reductions import cumsum
  repeats = _asarray(repeats)
  n = a.shape[axis]
  if repeats.shape != (n,):
    repeats = lax_numpy.broadcast_to(repeats, (n,))
  if total is None:
    total = int(np.sum(np.asarray(core.concrete_or_error(
        None, repeats, "When jit-compiling jnp.repeat, the total number of repeats must be "
        "static. To fix this, either specify a static value for `repeats`, or pass a static "
        "value to `total_repeat_length`.") if isinstance(repeats, core.Tracer)
        else repeats._host_value())))
  # Output position -> input element: count the block starts up to each position.
  starts = cumsum(roll(repeats, 1).at[0].set(0))
  block_starts = zeros(total, _INT).at[starts].add(1)
  return indexing.take(a, cumsum(block_starts) - 1, axis=axis)


# --- flipping, rolling, rotating ------------------------------------------------------------------

def _flip_impl(m, axis):
  return lax_shape.rev(m, _axes_tuple(axis, m.ndim))


_flip = internal_jit(_flip_impl, static_argnums=(1,), name="_flip")


def flip(m, axis=None):
  check_arraylike("flip", m)
  axis = axis if axis is None or isinstance(axis, (int, np.integer)) else tuple(axis)
  return _flip(_asarray(m), axis)


def fliplr(m):
  check_arraylike("fliplr", m)
  m = _asarray(m)
  if m.ndim < 2:
    raise ValueError(f"Input must be >= 2-d, got shape {m.shape}")
  return _flip(m, 1)


def flipud(m):
  check_arraylike("flipud", m)
  m = _asarray(m)
  if m.ndim < 1:
    raise ValueError(f"Input must be >= 1-d, got shape {m.shape}")
  return _flip(m, 0)


def _roll_static_impl(a, shift, axis):
  for s, ax in zip(shift, axis):
    size = a.shape[ax]
    if size == 0:
      continue
    i = (-s) % size
    a = lax_shape.concatenate([slicing.slice_in_dim(a, i, size, axis=ax),
                               slicing.slice_in_dim(a, 0, i, axis=ax)], ax)
  return a


def _roll_dynamic_impl(a, shift, axis):
  from jaxlite._src.numpy import ufuncs
  for i, ax in enumerate(axis):
    s = shift[i]
    size = a.shape[ax]
    if size == 0:
      continue
    doubled = lax_shape.concatenate([a, a], ax)
    start = ufuncs.remainder(ufuncs.negative(s), size)
    a = slicing.dynamic_slice_in_dim(doubled, start, size, ax)
  return a


_roll_static = internal_jit(_roll_static_impl, static_argnums=(1, 2), name="_roll_static")
_roll_dynamic = internal_jit(_roll_dynamic_impl, static_argnums=(2,), name="_roll_dynamic")


def roll(a, shift, axis=None):
  """Elements shifted cyclically along `axis` (of the flattened array when None)."""
  check_arraylike("roll", a)
  a = _asarray(a)
  if axis is None:
    return lax_numpy.reshape(roll(lax_numpy.ravel(a), shift, 0), a.shape)
  axis = np.atleast_1d(np.asarray(axis))
  if isinstance(shift, core.Tracer) or (isinstance(shift, (list, tuple)) and any(
      isinstance(s, core.Tracer) for s in shift)):
    shifts = _asarray(shift)
    if shifts.ndim > 1 or axis.ndim > 1:
      raise ValueError("'shift' and 'axis' arguments to roll must be scalars or 1D arrays")
    n = max(shifts.size, axis.size)
    axes = np.broadcast_to(axis, (n,))
    return _roll_dynamic(a, lax_numpy.broadcast_to(shifts, (n,)),
                         tuple(canonicalize_axis(int(x), a.ndim) for x in axes))
  shifts = _concrete_ints(shift, "shift")
  if shifts.ndim > 1 or axis.ndim > 1:
    raise ValueError("'shift' and 'axis' arguments to roll must be scalars or 1D arrays")
  shifts, axes = np.broadcast_arrays(shifts, axis)
  return _roll_static(a, tuple(int(s) for s in shifts.reshape(-1)),
                      tuple(canonicalize_axis(int(x), a.ndim) for x in axes.reshape(-1)))


def _rot90_impl(m, k, axes):
  ax1, ax2 = axes
  k = k % 4
  if k == 0:
    return m
  if k == 2:
    return _flip(_flip(m, ax1), ax2)
  perm = list(range(m.ndim))
  perm[ax1], perm[ax2] = perm[ax2], perm[ax1]
  if k == 1:
    return lax_shape.transpose(_flip(m, ax2), perm)
  return _flip(lax_shape.transpose(m, perm), ax2)


_rot90 = internal_jit(_rot90_impl, static_argnums=(1, 2), name="rot90")


def rot90(m, k: int = 1, axes=(0, 1)):
  check_arraylike("rot90", m)
  m = _asarray(m)
  if np.ndim(axes) != 1 or len(axes) != 2:
    raise ValueError("len(axes) must be 2")
  if m.ndim < 2:
    raise ValueError("rot90 requires its input to have at least 2 dimensions")
  ax1, ax2 = (canonicalize_axis(a, m.ndim) for a in axes)
  if ax1 == ax2:
    raise ValueError("Axes must be different")
  return _rot90(m, operator.index(k), (ax1, ax2))


# --- axes ----------------------------------------------------------------------------------------

def moveaxis(a, source, destination):
  check_arraylike("moveaxis", a)
  a = _asarray(a)
  src = _axes_tuple(source, a.ndim)
  dst = _axes_tuple(destination, a.ndim)
  if len(src) != len(dst):
    raise ValueError(f"Inconsistent number of elements: {len(src)} vs {len(dst)}")
  perm = [i for i in range(a.ndim) if i not in src]
  for d, s in sorted(zip(dst, src)):
    perm.insert(d, s)
  return lax_shape.transpose(a, perm)


def swapaxes(a, axis1: int, axis2: int):
  check_arraylike("swapaxes", a)
  a = _asarray(a)
  perm = list(range(a.ndim))
  for ax in (axis1, axis2):  # AxisError is JAX's IndexError and NumPy's ValueError at once
    if not -a.ndim <= ax < a.ndim:
      raise np.exceptions.AxisError(
          f"swapaxes: axis {ax} is out of bounds for array of dimension {a.ndim}")
  i, j = canonicalize_axis(axis1, a.ndim), canonicalize_axis(axis2, a.ndim)
  perm[i], perm[j] = perm[j], perm[i]
  return lax_shape.transpose(a, perm)


def rollaxis(a, axis: int, start: int = 0):
  check_arraylike("rollaxis", a)
  a = _asarray(a)
  n = a.ndim
  axis = canonicalize_axis(axis, n)
  if not -n <= start <= n:
    raise ValueError(f"{start=} must satisfy {-n}<={start}<={n}")
  start = start + n if start < 0 else start
  start = start - 1 if start > axis else start
  return moveaxis(a, axis, start)


# --- padding -------------------------------------------------------------------------------------

def _pairs(values, ndim, name):
  """A per-axis ((before, after), ...) tuple broadcast from NumPy's pad_width forms."""
  arr = _concrete_ints(values, name) if name == "pad_width" else np.asarray(values)
  if arr.ndim > 2 or (arr.ndim == 2 and arr.shape[-1] != 2) or (arr.ndim == 1 and
                                                                  arr.shape[0] not in (1, 2)):
    raise ValueError(f"jnp.pad: {name} with nd={ndim} has unsupported shape {arr.shape}. "
                     f"Valid shapes are ({ndim}, 2), (1, 2), (2,), (1,), or ().")
  arr = np.broadcast_to(arr.reshape((-1, 2)) if arr.ndim == 1 and arr.shape[0] == 2 else arr,
                        (ndim, 2))
  return tuple(tuple(row) for row in arr)


def _pad_constant(array, pad_width, constant_values):
  dtype, weak = dtype_weak(array)
  values = _convert_element_type(constant_values, dtype, weak_type=weak)
  if not shape_of(values):
    return lax_shape.pad(array, values, [(lo, hi, 0) for lo, hi in pad_width])
  values = lax_numpy.broadcast_to(values, (array.ndim, 2))
  for ax, (lo, hi) in enumerate(pad_width):
    for side, amount in ((0, lo), (1, hi)):
      config = [(0, 0, 0)] * array.ndim
      config[ax] = (amount, 0, 0) if side == 0 else (0, amount, 0)
      array = lax_shape.pad(array, values[ax, side], config)
  return array


def _edge_index(j, n):
  return np.clip(j, 0, n - 1)


def _reflect_index(j, n):
  if n == 1:
    return np.zeros_like(j)
  m = np.mod(j, 2 * (n - 1))
  return np.where(m < n, m, 2 * (n - 1) - m)


def _symmetric_index(j, n):
  m = np.mod(j, 2 * n)
  return np.where(m < n, m, 2 * n - 1 - m)


def _wrap_index(j, n):
  return np.mod(j, n)


_INDEX_MODES = {"edge": _edge_index, "reflect": _reflect_index,
                "symmetric": _symmetric_index, "wrap": _wrap_index}


def take_static(x, positions, axis):
  """`x` at static `positions` along `axis`, as slices, reversals and one concatenate."""
  positions = np.asarray(positions, np.int64)
  n = x.shape[axis]
  if positions.size == n and np.array_equal(positions, np.arange(n)):
    return x
  pieces = []
  for run in _runs(positions):
    lo, hi = min(run[0], run[-1]), max(run[0], run[-1]) + 1
    piece = slicing.slice_in_dim(x, int(lo), int(hi), 1, axis)
    pieces.append(_flip(piece, axis) if len(run) > 1 and run[0] > run[-1] else piece)
  if not pieces:
    return slicing.slice_in_dim(x, 0, 0, 1, axis)
  return lax_shape.concatenate(pieces, axis)


def _runs(positions):
  """Splits positions into maximal runs stepping by +1 or by -1."""
  runs, i = [], 0
  while i < len(positions):
    j = i + 1
    step = positions[j] - positions[i] if j < len(positions) else 0
    if step not in (1, -1):
      step = 0
    while step and j < len(positions) and positions[j] - positions[j - 1] == step:
      j += 1
    runs.append(positions[i:j])
    i = j
  return runs


def _pad_by_index(array, pad_width, index_fn, mode):
  for ax, (lo, hi) in enumerate(pad_width):
    if lo == 0 and hi == 0:
      continue
    n = array.shape[ax]
    if n == 0:
      raise ValueError(f"can't extend empty axis {ax} using modes other than 'constant' or "
                       "'empty'")
    array = take_static(array, index_fn(np.arange(-lo, n + hi), n), ax)
  return array


def _pad_odd_reflect(array, pad_width, symmetric):
  for ax, (lo, hi) in enumerate(pad_width):
    n = array.shape[ax]
    shift = 0 if symmetric else 1
    if lo > n - shift or hi > n - shift:
      raise NotImplementedError("jnp.pad with reflect_type='odd' supports pad widths up to the "
                                "axis size only")
    first = slicing.slice_in_dim(array, 0, 1, 1, ax)
    last = slicing.slice_in_dim(array, n - 1, n, 1, ax)
    left = take_static(array, np.arange(lo - 1 + shift, shift - 1, -1), ax) if lo else None
    right = take_static(array, np.arange(n - 1 - shift, n - 1 - shift - hi, -1), ax) \
        if hi else None
    parts = ([2 * first - left] if lo else []) + [array] + ([2 * last - right] if hi else [])
    array = lax_shape.concatenate(parts, ax) if len(parts) > 1 else array
  return array


def _pad_stat(array, pad_width, stat_length, reducer):
  lengths = _pairs(stat_length, array.ndim, "stat_length") if stat_length is not None else None
  for ax, (lo, hi) in enumerate(pad_width):
    n = array.shape[ax]
    parts = []
    for side, amount in ((0, lo), (1, hi)):
      if amount == 0:
        continue
      length = n if lengths is None else max(1, min(int(lengths[ax][side]), n))
      window = slicing.slice_in_dim(array, 0, length, 1, ax) if side == 0 else \
          slicing.slice_in_dim(array, n - length, n, 1, ax)
      stat = reducer(window, axis=ax, keepdims=True)
      if dtypes.dtype_and_weak(stat)[0] != array.dtype:
        stat = _round_like(stat, array.dtype)
      reps = [1] * array.ndim
      reps[ax] = amount
      parts.append((side, lax_shape.tile(stat, reps)))
    pieces = [p for s, p in parts if s == 0] + [array] + [p for s, p in parts if s == 1]
    array = lax_shape.concatenate(pieces, ax) if len(pieces) > 1 else array
  return array


def _round_like(x, dtype):
  from jaxlite._src.numpy import ufuncs
  if dtype.kind in "iu":
    x = ufuncs.round(x)
  return _convert_element_type(x, dtype, weak_type=False)


def _pad_linear_ramp(array, pad_width, end_values):
  from jaxlite._src.numpy.creation import linspace
  ends = _pairs(end_values, array.ndim, "end_values")
  for ax, (lo, hi) in enumerate(pad_width):
    n = array.shape[ax]
    parts = []
    for side, amount in ((0, lo), (1, hi)):
      if amount == 0:
        continue
      edge = slicing.slice_in_dim(array, 0, 1, 1, ax) if side == 0 else \
          slicing.slice_in_dim(array, n - 1, n, 1, ax)
      ramp = linspace(ends[ax][side], edge, amount, endpoint=False, axis=ax)
      ramp = lax_shape.squeeze(ramp, (ax + 1,)) if ramp.ndim > array.ndim else ramp
      ramp = _round_like(ramp, array.dtype) if ramp.dtype != array.dtype else ramp
      parts.append((side, ramp if side == 0 else _flip(ramp, ax)))
    pieces = [p for s, p in parts if s == 0] + [array] + [p for s, p in parts if s == 1]
    array = lax_shape.concatenate(pieces, ax) if len(pieces) > 1 else array
  return array


def _pad_impl(array, pad_width, mode, constant_values, stat_length, end_values, reflect_type):
  from jaxlite._src.numpy import reductions
  if mode == "constant":
    return _pad_constant(array, pad_width, constant_values)
  if mode == "empty":
    return _pad_constant(array, pad_width, 0)
  if mode in ("reflect", "symmetric") and reflect_type == "odd":
    return _pad_odd_reflect(array, pad_width, mode == "symmetric")
  if mode in _INDEX_MODES:
    return _pad_by_index(array, pad_width, _INDEX_MODES[mode], mode)
  from jaxlite._src.numpy import quantiles  # deferred: quantiles sits above shape_ops
  stats = {"maximum": reductions.max, "minimum": reductions.min, "mean": reductions.mean,
           "median": quantiles.median}
  if mode in stats:
    return _pad_stat(array, pad_width, stat_length, stats[mode])
  if mode == "linear_ramp":
    return _pad_linear_ramp(array, pad_width, end_values)
  raise ValueError(f"Unimplemented padding mode '{mode}' for np.pad.")


_pad_jit = internal_jit(_pad_impl, static_argnums=(1, 2, 4, 5, 6), name="_pad")

_PAD_MODES = ("constant", "edge", "linear_ramp", "maximum", "mean", "median", "minimum",
              "reflect", "symmetric", "wrap", "empty")


def pad(array, pad_width, mode="constant", **kwargs):
  """NumPy's pad: modes constant, edge, reflect, symmetric, wrap, empty, statistics, ramps."""
  check_arraylike("pad", array)
  array = _asarray(array)
  if callable(mode):
    return _pad_callable(array, pad_width, mode, kwargs)
  if mode not in _PAD_MODES:
    raise NotImplementedError(f"Unimplemented padding mode '{mode}' for np.pad.")
  allowed = {"constant": {"constant_values"}, "linear_ramp": {"end_values"},
             "maximum": {"stat_length"}, "mean": {"stat_length"}, "median": {"stat_length"},
             "minimum": {"stat_length"}, "reflect": {"reflect_type"},
             "symmetric": {"reflect_type"}}.get(mode, set())
  unsupported = set(kwargs) - allowed
  if unsupported:
    raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
  pad_width = _pairs(pad_width, array.ndim, "pad_width")
  if any(v < 0 for row in pad_width for v in row):
    raise ValueError("index can't contain negative values")
  constant_values = kwargs.get("constant_values", 0)
  if isinstance(constant_values, (list, tuple, np.ndarray)):
    constant_values = _asarray(constant_values)
  stat_length = kwargs.get("stat_length")
  stat_length = None if stat_length is None else _hashable(stat_length)
  end_values = _hashable(kwargs.get("end_values", 0))
  return _pad_jit(array, pad_width, mode, constant_values, stat_length, end_values,
                  kwargs.get("reflect_type", "even"))


def _pad_callable(array, pad_width, func, kwargs):
  """NumPy's callable mode, as JAX's: zero padding, then each axis in turn has every 1-D line
  replaced by `func(line, (before, after), axis, kwargs)` (which returns the padded line, as
  arrays are immutable)."""
  from jaxlite._src.numpy.functional import apply_along_axis
  pad_width = _pairs(pad_width, array.ndim, "pad_width")
  padded = pad(array, pad_width)
  for axis in range(padded.ndim):
    padded = apply_along_axis(func, axis, padded, pad_width[axis], axis, kwargs)
  return padded


def _hashable(v):
  if isinstance(v, (list, tuple, np.ndarray)):
    return tuple(_hashable(e) for e in np.asarray(v).tolist()) if np.ndim(v) else \
        np.asarray(v).item()
  return v


# --- inserting, deleting, resizing ----------------------------------------------------------------

def delete(arr, obj, axis=None, *, assume_unique_indices: bool = False):
  """`arr` without the entries `obj` (a concrete int, slice or index array) along `axis`."""
  check_arraylike("delete", arr)
  a = _asarray(arr)
  if axis is None:
    a, axis = lax_numpy.ravel(a), 0
  axis = canonicalize_axis(axis, a.ndim)
  n = a.shape[axis]
  if isinstance(obj, slice):
    drop = np.arange(n)[obj]
  else:
    drop = _concrete_ints(obj, "obj")
    if drop.ndim > 1:
      raise ValueError("np.delete(arr, obj): obj must be 1D or scalar.")
    if np.any((drop < -n) | (drop >= n)):
      raise IndexError(f"index out of bounds for axis {axis} with size {n}")
    drop = np.where(drop < 0, drop + n, drop)
  keep = np.ones(n, bool)
  keep[drop.reshape(-1)] = False
  return take_static(a, np.flatnonzero(keep), axis)


def insert(arr, obj, values, axis=None):
  """`arr` with `values` inserted before the concrete index or indices `obj` along `axis`."""
  check_arraylike("insert", arr)
  a = _asarray(arr)
  if axis is None:
    a, axis = lax_numpy.ravel(a), 0
  axis = canonicalize_axis(axis, a.ndim)
  n = a.shape[axis]
  values = _convert_element_type(_asarray(values), a.dtype, weak_type=dtype_weak(a)[1])
  positions = np.arange(*obj.indices(n)) if isinstance(obj, slice) else \
      _concrete_ints(obj, "obj")
  if positions.ndim > 1:
    raise ValueError("index array argument obj to insert must be one dimensional or scalar")
  if positions.ndim == 0:
    index = int(positions)
    if not -n <= index <= n:
      raise IndexError(f"index {index} is out of bounds for axis {axis} with size {n}")
    index = index + n if index < 0 else index
    values = _values_for_scalar_insert(values, a.ndim, axis)
    new = values.shape[axis]
    positions = np.arange(index, index + new)
    src_new = np.arange(new)
  else:
    positions = np.where(positions < 0, positions + n, positions)
    new = len(positions)
    order = np.argsort(positions, kind="stable")
    positions = positions.copy()
    positions[order] += np.arange(new)
    src_new = np.arange(new)
  shape = list(a.shape)
  shape[axis] = new
  values = lax_numpy.broadcast_to(values, tuple(shape))
  total = n + new
  src = np.empty(total, np.int64)
  old = np.ones(total, bool)
  old[positions] = False
  src[old] = np.arange(n)
  src[positions] = n + src_new
  return take_static(lax_shape.concatenate([a, values], axis), src, axis)


def _values_for_scalar_insert(values, ndim, axis):
  if values.ndim < ndim:
    values = lax_shape.expand_dims(values, tuple(range(ndim - values.ndim)))
  return moveaxis(values, 0, axis) if values.ndim else values


def resize(a, new_shape):
  """`a` flattened, repeated cyclically and reshaped to `new_shape`."""
  check_arraylike("resize", a)
  a = _asarray(a)
  new_shape = core.canonicalize_shape(new_shape)
  if any(d < 0 for d in new_shape):
    raise ValueError("All elements of `new_shape` must be non-negative")
  size = int(np.prod(new_shape, dtype=np.int64))
  flat = lax_numpy.ravel(a)
  if a.size == 0 or size == 0:
    from jaxlite._src.numpy.creation import zeros
    return zeros(new_shape, a.dtype)
  reps = -(-size // flat.shape[0])
  flat = tile(flat, reps) if reps > 1 else flat
  return lax_numpy.reshape(indexing.getitem(flat, slice(0, size)), new_shape)


creation.register_above(moveaxis=moveaxis)
