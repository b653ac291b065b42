"""`jax.lax` conveniences over existing primitives: full/full_like/empty, broadcasting helpers,
reciprocal, approx top-k, platform_dependent, composite, and the dot/RNG algorithm enums."""
from __future__ import annotations

import enum
from typing import Any, NamedTuple, Sequence

import numpy as np

from jaxlite._src.base import core, dtypes
from jaxlite._src.lax import elementwise_functions as lax
from jaxlite._src.lax import shape as shape_ops
from jaxlite._src.lax import sort as sort_ops


# --- creation -----------------------------------------------------------------------------------

def full(shape, fill_value, dtype=None, *, sharding=None):
  """An array of `shape` filled with `fill_value` (a scalar), cast to `dtype` when given."""
  shape = core.canonicalize_shape(shape)
  if np.ndim(fill_value) != 0:
    raise TypeError(f"full must be called with scalar fill_value, got fill_value.shape "
                    f"{np.shape(fill_value)}.")
  fill = lax.asarg(fill_value)
  if dtype is not None:
    fill = lax.convert_element_type(fill, dtype)
  return shape_ops.broadcast(fill, shape, out_sharding=sharding)


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
  """`full` with the shape and dtype of `x` (weak when `x` is weak and no dtype is given)."""
  if isinstance(x, (core.Tracer, core.array_type)) or not hasattr(x, "dtype"):
    aval = core.get_aval(lax.asarg(x))
    x_dtype, x_weak = aval.dtype, aval.weak_type
  else:  # a duck-typed array (ShapeDtypeStruct, NumPy array)
    x_dtype, x_weak = dtypes.canonicalize_dtype(x.dtype), False
  out_shape = np.shape(x) if shape is None else shape
  fill = lax.asarg(fill_value)
  if dtype is None:
    fill = lax._convert_element_type(fill, x_dtype, weak_type=x_weak)
  else:
    fill = lax.convert_element_type(fill, dtype)
  out = full(out_shape, fill, sharding=sharding)
  if core.vma_typing is not None:  # in a check_vma shard_map body: varies where `x` does (JAX)
    from jaxlite._src.parallel.shard_map_vma import cast_like
    out = cast_like(out, x)
  return out


def empty(shape, dtype, *, out_sharding=None):
  """An array of `shape` and `dtype`; XLA leaves it uninitialized, here it holds zeros."""
  return full(shape, np.zeros((), dtypes.check_user_dtype(dtype)), sharding=out_sharding)


def dtype(x) -> np.dtype:
  """The canonical dtype of a value or of a dtype-like (a scalar type, np.dtype or name), as
  `lax.dtype` gives it (a requested 64-bit dtype warns and truncates without x64, as JAX's)."""
  if isinstance(x, (type, np.dtype, str)):
    return np.dtype(dtypes.check_user_dtype(x, "dtype"))
  return core.get_aval(lax.asarg(x)).dtype


# --- broadcasting -------------------------------------------------------------------------------

def broadcast_shapes(*shapes) -> tuple:
  """NumPy-rule broadcast of shapes; raises ValueError naming them when they are incompatible."""
  shapes = [tuple(core.canonicalize_shape(s)) for s in shapes]
  if not shapes:
    return ()
  rank = max(len(s) for s in shapes)
  padded = [(1,) * (rank - len(s)) + s for s in shapes]
  out = []
  for dims in zip(*padded):
    big = {d for d in dims if d != 1}
    if len(big) > 1:
      raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}")
    out.append(big.pop() if big else 1)
  return tuple(out)


def broadcast_to_rank(x, rank: int):
  """`x` with leading unit axes added until it has `rank` dimensions."""
  x = lax.asarg(x)
  nd = np.ndim(x)
  if nd == rank:
    return x
  return shape_ops.broadcast(x, (1,) * (rank - nd))


def broadcast_like(arr, like_arr):
  """`arr` broadcast (NumPy rules) to the shape of `like_arr`."""
  arr, shape = lax.asarg(arr), np.shape(like_arr)
  nd = np.ndim(arr)
  return shape_ops.broadcast_in_dim(arr, shape, tuple(range(len(shape) - nd, len(shape))))


def reciprocal(x):
  """1 / x, as `integer_pow(x, -1)` like JAX."""
  return lax.integer_pow(x, -1)


# --- approximate top-k --------------------------------------------------------------------------

def approx_max_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
  """The k largest values along `reduction_dimension` and their indices (one `approx_top_k`
  eqn; on CPU XLA computes it exactly, recall 1)."""
  from jaxlite._src.lax import ann
  return ann.approx_k(operand, k, reduction_dimension, recall_target, True,
                      reduction_input_size_override, aggregate_to_topk)


def approx_min_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
  """The k smallest values along `reduction_dimension` and their indices (exact on CPU)."""
  from jaxlite._src.lax import ann
  return ann.approx_k(operand, k, reduction_dimension, recall_target, False,
                      reduction_input_size_override, aggregate_to_topk)


# --- platform_dependent, composite --------------------------------------------------------------

PLATFORM = "cpu"  # jaxlite runs on one CPU backend


def platform_dependent(*args: Any, default=None, **per_platform):
  """Calls the branch for the platform the computation runs on (`cpu`), else `default`."""
  for name in per_platform:
    if name not in ("cpu", "cuda", "rocm", "gpu", "tpu"):
      raise ValueError(f"Unrecognized platform {name!r} in platform_dependent")
  branch = per_platform.get(PLATFORM, default)
  if branch is None:
    raise NotImplementedError(
        f"platform_dependent: no branch for platform {PLATFORM!r} and no default, got "
        f"branches for {sorted(per_platform)}")
  return branch(*args)


def composite(decomposition, name: str, version: int = 0):
  """Marks `decomposition` as a named composite op; its value is the decomposition's.

  XLA keeps the name for backends that match it and otherwise inlines the decomposition,
  which is what runs here.
  """
  if not isinstance(name, str) or not name:
    raise ValueError(f"composite: name must be a non-empty string, got {name!r}")

  def fn(*args, **kwargs):
    return decomposition(*args, **kwargs)
  fn.__name__ = getattr(decomposition, "__name__", "composite")
  fn.__doc__ = decomposition.__doc__
  fn.composite_name, fn.composite_version = name, int(version)
  return fn


# --- algorithm enums and dimension-number types -------------------------------------------------

class RandomAlgorithm(enum.IntEnum):
  """The bit generator `rng_bit_generator` uses."""
  RNG_DEFAULT = 0
  RNG_THREE_FRY = 1
  RNG_PHILOX = 2

  def __str__(self) -> str:
    return self.name


class AccuracyMode(enum.Enum):
  """Accuracy requested of transcendental functions."""
  HIGHEST = 1
  DEFAULT = 2


class Tolerance(NamedTuple):
  """Error bounds (atol, rtol, ulps) for an `AccuracyMode` request."""
  atol: float = 0.0
  rtol: float = 0.0
  ulps: int = 0


class DotAlgorithm(NamedTuple):
  """The precision and accumulation types of a dot product (`precision=` of `lax.dot`)."""
  lhs_precision_type: Any
  rhs_precision_type: Any
  accumulation_type: Any
  lhs_component_count: int = 1
  rhs_component_count: int = 1
  num_primitive_operations: int = 1
  allow_imprecise_accumulation: bool = False


class DotAlgorithmPreset(enum.Enum):
  """Named dot algorithms; on CPU every one computes in the accumulation type."""
  DEFAULT = enum.auto()
  ANY_F8_ANY_F8_F32 = enum.auto()
  ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
  ANY_F8_ANY_F8_ANY = enum.auto()
  ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
  F16_F16_F16 = enum.auto()
  F16_F16_F32 = enum.auto()
  BF16_BF16_BF16 = enum.auto()
  BF16_BF16_F32 = enum.auto()
  BF16_BF16_F32_X3 = enum.auto()
  BF16_BF16_F32_X6 = enum.auto()
  BF16_BF16_F32_X9 = enum.auto()
  TF32_TF32_F32 = enum.auto()
  TF32_TF32_F32_X3 = enum.auto()
  F32_F32_F32 = enum.auto()
  F64_F64_F64 = enum.auto()

  def __repr__(self) -> str:
    return self.name

  __str__ = __repr__


DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]
ConvGeneralDilatedDimensionNumbers = Any  # tuple of 3 spec strings, ConvDimensionNumbers or None
PrecisionLike = Any  # None, a str, a Precision, a pair of them, a DotAlgorithm(Preset)


def index_take(src, idxs, axes):
  """Rows of `idxs` [N, len(axes)] index `src` on `axes`: result [N, *other dims of src]."""
  from jaxlite._src.lax.slicing import gather
  from jaxlite._src.lax.gather_dnums import GatherDimensionNumbers
  src, idxs = lax.asarg(src), lax.asarg(idxs)
  shape = core.get_aval(src).shape
  axes = tuple(int(a) for a in axes)
  rest = [d for d in range(len(shape)) if d not in axes]
  dnums = GatherDimensionNumbers(offset_dims=tuple(range(1, 1 + len(rest))),
                                 collapsed_slice_dims=tuple(sorted(axes)), start_index_map=axes)
  sizes = tuple(1 if d in axes else shape[d] for d in range(len(shape)))
  return gather(src, idxs, dimension_numbers=dnums, slice_sizes=sizes)
