"""jnp products on dot_general: matmul (and `@`), dot, vdot, inner, outer, tensordot, einsum,
matvec/vecmat, kron, plus trace, diagonal and diag.

Operands keep their dtypes and dot_general gets the promoted dtype as preferred_element_type,
as JAX does; einsum parses its subscripts and contracts pairwise with dot_general.
"""
from __future__ import annotations

import functools

import operator
import threading

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import dtypes
from jaxlite._src.transforms.jit_function import internal_jit
from jaxlite._src.lax import dot as lax_dot
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import reductions as red
from jaxlite._src.lax import shape as shape_prims
from jaxlite._src.lax.creation import iota_p
from jaxlite._src.lax.elementwise_functions import _convert_element_type
from jaxlite._src.numpy import einsum_path
from jaxlite._src.numpy.where_reshape import _where, reshape, transpose
from jaxlite._src.numpy.util import (canonicalize_axis, check_arraylike, convert, dtype_weak,
                                     promote_dtypes, shape_of)


def _arrays(name, *args):
  check_arraylike(name, *args)
  from jaxlite._src.numpy.creation import asarray
  return [a if isinstance(a, (core.Tracer, core.array_type)) else asarray(a) for a in args]


def _result_dtype(*args):
  dtype, _ = dtypes.promote_signature(tuple(dtype_weak(a) for a in args))
  return dtype


def _dot_general(a, b, contract, batch, precision, preferred):
  return lax_dot.dot_general_p.bind(
      a, b, dimension_numbers=(contract, batch),
      precision=lax_dot.canonicalize_precision(precision), preferred_element_type=preferred,
      out_sharding=_pending_out_sharding.value)


class _Pending(threading.local):
  value = None


# The `out_sharding=` of the product being computed: its contractions take it (JAX passes it to
# the dot_general), and the result is resharded to it.
_pending_out_sharding = _Pending()


def _sharded_product(fn, args, kw, out_sharding):
  """`fn(*args, **kw)` with its contractions given `out_sharding` and its result resharded
  to it (the `out_sharding=` of matmul, dot, tensordot and einsum)."""
  from jaxlite._src.sharding.reshard import reshard
  from jaxlite._src.sharding.rules import resolve_out_sharding
  prev = _pending_out_sharding.value
  _pending_out_sharding.value = resolve_out_sharding(out_sharding, fun_name=fn.__name__)
  try:
    return reshard(fn(*args, **kw), out_sharding)
  finally:
    _pending_out_sharding.value = prev


def _weak_result(out, preferred_element_type, *args):
  """JAX's products end with a cast to the promoted type with its weak flag: a weak operand
  with a bool (or another weak one) gives a weak result, which dot_general's own type is not,
  and so do strong operands whose types meet at a weak one (uint64 with a signed int: weak
  float64). Strong operands of one dtype cost no promotion here."""
  if preferred_element_type is not None:
    return out
  sig = tuple(dtype_weak(a) for a in args)
  if not any(w for _, w in sig) and all(d == sig[0][0] for d, _ in sig):
    return out
  dtype, weak = dtypes.promote_signature(sig)
  return _convert_element_type(out, dtype, weak) if weak else out


def _preferred(preferred_element_type, *args):
  if preferred_element_type is not None:
    return dtypes.check_user_dtype(preferred_element_type)
  return _result_dtype(*args)


# --- matmul, dot and friends -------------------------------------------------------------------

def matmul(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
  """jnp.matmul / `@`: matrix products broadcast over leading batch dimensions."""
  if out_sharding is not None:
    return _sharded_product(matmul, (a, b), dict(
      precision=precision, preferred_element_type=preferred_element_type), out_sharding)
  if type(a) is core.array_type and type(b) is core.array_type \
      and preferred_element_type is None and not (a.weak_type or b.weak_type):
    dims = _plain_matmul_dims(a, b)
    if dims is not None:
      return _dot_general(a, b, dims[0], dims[1], precision, a.dtype)
  a, b = _arrays("matmul", a, b)
  for x in (a, b):
    if not shape_of(x):
      raise ValueError("matmul operand must have at least one dimension, got shape "
                       f"{tuple(shape_of(x))}.")
  preferred = _preferred(preferred_element_type, a, b)
  a_shape, b_shape = tuple(shape_of(a)), tuple(shape_of(b))
  a_vec, b_vec = len(a_shape) == 1, len(b_shape) == 1
  a_batch = a_shape[:-2] if not a_vec else ()
  b_batch = b_shape[:-2] if not b_vec else ()
  k_a = a_shape[-1]
  k_b = b_shape[0] if b_vec else b_shape[-2]
  if k_a != k_b:  # JAX's dot_general check, hence a TypeError
    raise TypeError("dot_general requires contracting dimensions to have the same shape, got "
                    f"{(k_a,)} and {(k_b,)}.")
  out_batch = np.broadcast_shapes(a_batch, b_batch)
  nb = len(out_batch)
  a_off, b_off = nb - len(a_batch), nb - len(b_batch)
  a_squeeze, b_squeeze, pairs, a_free, b_free, both = [], [], [], [], [], []
  for i in range(nb):
    da = a_batch[i - a_off] if i >= a_off else None
    db = b_batch[i - b_off] if i >= b_off else None
    if da == 1 and db == 1:  # squeezed from both and restored after (JAX's cleaner 2-D dot)
      a_squeeze.append(i - a_off)
      b_squeeze.append(i - b_off)
      both.append(i)
    elif da is not None and db is not None and da == db:
      pairs.append(i)
    elif da == 1 and db is not None:
      a_squeeze.append(i - a_off)
      b_free.append(i)
    elif db == 1 and da is not None:
      b_squeeze.append(i - b_off)
      a_free.append(i)
    elif da is not None:
      a_free.append(i)
    else:
      b_free.append(i)
  if a_squeeze:
    a = shape_prims.squeeze_p.bind(a, dimensions=tuple(a_squeeze))
  if b_squeeze:
    b = shape_prims.squeeze_p.bind(b, dimensions=tuple(b_squeeze))
  a_pos = _positions(range(a_off, nb), a_squeeze)
  b_pos = _positions(range(b_off, nb), b_squeeze)
  a_nd, b_nd = len(shape_of(a)), len(shape_of(b))
  contract = ((a_nd - 1,), (0,) if b_vec else (b_nd - 2,))
  batch = (tuple(a_pos[i] for i in pairs), tuple(b_pos[i] for i in pairs))
  out = _dot_general(a, b, contract, batch, precision, preferred)
  # dot_general orders dims as: batch pairs, a's free dims, b's free dims.
  order = pairs + a_free + (["n"] if not a_vec else []) + b_free + (["m"] if not b_vec else [])
  target = [i for i in range(nb) if i not in both] + (["n"] if not a_vec else []) + \
      (["m"] if not b_vec else [])
  perm = tuple(order.index(t) for t in target)
  out = transpose(out, perm) if perm != tuple(range(len(perm))) else out
  if both:
    out = shape_prims.expand_dims(out, tuple(both))
  return _weak_result(out, preferred_element_type, a, b)


def _plain_matmul_dims(a, b):
  """(contract, batch) dims of `a @ b` for two eager arrays of one dtype and weak type whose
  shapes need no broadcasting, squeezing or transposing (the common `x @ w`), else None."""
  if a.dtype != b.dtype or a.weak_type != b.weak_type:  # metadata only (any placement)
    return None
  sa, sb = a.shape, b.shape
  na, nb = len(sa), len(sb)
  if 1 <= na <= 2 and 1 <= nb <= 2:
    k_b, batch = sb[-2] if nb == 2 else sb[0], ((), ())
  elif na == nb > 2 and sa[:-2] == sb[:-2]:
    k_b, batch = sb[-2], (tuple(range(na - 2)),) * 2
  else:
    return None
  if sa[-1] != k_b:
    return None
  return ((na - 1,), (nb - 2 if nb >= 2 else 0,)), batch


def _positions(batch_positions, squeezed):
  """Out-batch position -> the operand's axis, after squeezing `squeezed` operand axes."""
  out, axis = {}, 0
  for operand_axis, i in enumerate(batch_positions):
    if operand_axis in squeezed:
      continue
    out[i] = axis
    axis += 1
  return out


def dot(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
  """jnp.dot: a sum product over a's last axis and b's second-to-last (last if 1-D)."""
  if out_sharding is not None:
    return _sharded_product(dot, (a, b), dict(
      precision=precision, preferred_element_type=preferred_element_type), out_sharding)
  a, b = _arrays("dot", a, b)
  preferred = _preferred(preferred_element_type, a, b)
  a_nd, b_nd = len(shape_of(a)), len(shape_of(b))
  if a_nd == 0 or b_nd == 0:
    contract = ((), ())
  else:
    contract = ((a_nd - 1,), (0,) if b_nd == 1 else (b_nd - 2,))
  return _weak_result(_dot_general(a, b, contract, ((), ()), precision, preferred),
                      preferred_element_type, a, b)


def vdot(a, b, *, precision=None, preferred_element_type=None):
  """jnp.vdot: the dot product of the flattened arrays, conjugating `a`."""
  a, b = _arrays("vdot", a, b)
  if dtype_weak(a)[0].kind == "c":
    a = ew.conj_p.bind(a)
  return dot(reshape(a, (-1,)), reshape(b, (-1,)), precision=precision,
             preferred_element_type=preferred_element_type)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
  """jnp.vecdot: conj(x1) . x2 along `axis`, broadcasting the rest. Staged as JAX stages it:
  `axis` moved last, then vdot vectorized over the loop dims (a vector against a stack of
  vectors is one product, not a broadcast copy)."""
  from jaxlite._src.numpy.functional import vectorize
  from jaxlite._src.numpy.shape_ops import moveaxis
  x1, x2 = _arrays("vecdot", x1, x2)
  s1, s2 = shape_of(x1), shape_of(x2)
  if s1[axis] != s2[axis]:  # (a rank-0 operand raises IndexError here, as in JAX)
    raise ValueError(f"axes must match; got shapes {s1} and {s2} with axis={axis}")
  one = functools.partial(vdot, precision=precision,
                          preferred_element_type=preferred_element_type)
  return vectorize(one, signature="(n),(n)->()")(moveaxis(x1, axis, -1), moveaxis(x2, axis, -1))


def inner(a, b, *, precision=None, preferred_element_type=None):
  """jnp.inner: a sum product over the last axes of both."""
  a, b = _arrays("inner", a, b)
  a_nd, b_nd = len(shape_of(a)), len(shape_of(b))
  contract = ((), ()) if a_nd == 0 or b_nd == 0 else ((a_nd - 1,), (b_nd - 1,))
  return _weak_result(_dot_general(a, b, contract, ((), ()), precision,
                                   _preferred(preferred_element_type, a, b)),
                      preferred_element_type, a, b)


def outer(a, b, out=None):
  """jnp.outer: every product a[i] * b[j] of the flattened inputs."""
  a, b = _arrays("outer", a, b)
  a, b = promote_dtypes(a, b)  # before flattening, as JAX stages it
  a = reshape(a, (-1,))
  col = shape_prims.broadcast_in_dim_p.bind(a, shape=(shape_of(a)[0], 1),
                                            broadcast_dimensions=(0,), sharding=None)
  b = reshape(b, (-1,))
  row = shape_prims.broadcast_in_dim_p.bind(b, shape=(1, shape_of(b)[0]),
                                            broadcast_dimensions=(1,), sharding=None)
  # jnp.multiply of booleans is their logical and, as JAX stages it
  return (ew.and_p if dtype_weak(col)[0] == np.bool_ else ew.mul_p).bind(col, row)


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None,
              out_sharding=None):
  """jnp.tensordot: contracts a's `axes` with b's (the last N of a with the first N of b)."""
  if out_sharding is not None:
    return _sharded_product(tensordot, (a, b, axes), dict(
      precision=precision, preferred_element_type=preferred_element_type), out_sharding)
  a, b = _arrays("tensordot", a, b)
  a_nd, b_nd = len(shape_of(a)), len(shape_of(b))
  if isinstance(axes, (int, np.integer)):
    n = operator.index(axes)
    if n < 0 or n > min(a_nd, b_nd):
      raise TypeError(f"Number of tensordot axes (axes {n}) exceeds input ranks "
                      f"(lhs_ndim {a_nd} and rhs_ndim {b_nd})")
    contract = (tuple(range(a_nd - n, a_nd)), tuple(range(n)))
  elif isinstance(axes, (list, tuple)) and len(axes) == 2:
    ax_a, ax_b = axes
    ax_a = (ax_a,) if isinstance(ax_a, (int, np.integer)) else tuple(ax_a)
    ax_b = (ax_b,) if isinstance(ax_b, (int, np.integer)) else tuple(ax_b)
    if len(ax_a) != len(ax_b):
      raise TypeError("tensordot requires axes lists to have equal length, got "
                      f"{ax_a} and {ax_b}.")
    contract = (tuple(canonicalize_axis(i, a_nd) for i in ax_a),
                tuple(canonicalize_axis(i, b_nd) for i in ax_b))
  else:
    raise TypeError("tensordot axes argument must be an int, a pair of ints, or a pair of "
                    f"lists/tuples of ints; got {axes!r}.")
  return _weak_result(_dot_general(a, b, contract, ((), ()), precision,
                                   _preferred(preferred_element_type, a, b)),
                      preferred_element_type, a, b)


@internal_jit(static_argnames=("precision", "preferred_element_type"), name="matvec")
def _matvec(x1, x2, precision=None, preferred_element_type=None):
  return matmul(x1, x2, precision=precision, preferred_element_type=preferred_element_type)


def matvec(x1, x2, /, *, precision=None, preferred_element_type=None):
  """jnp.matvec: matrix (..., m, n) times vector (..., n)."""
  x1, x2 = _arrays("matvec", x1, x2)
  return _matvec(x1, x2, precision=precision, preferred_element_type=preferred_element_type)


@internal_jit(static_argnames=("precision", "preferred_element_type"), name="vecmat")
def _vecmat(x1, x2, precision=None, preferred_element_type=None):
  if dtype_weak(x1)[0].kind == "c":
    x1 = ew.conj_p.bind(x1)
  return matmul(x1, x2, precision=precision, preferred_element_type=preferred_element_type)


def vecmat(x1, x2, /, *, precision=None, preferred_element_type=None):
  """jnp.vecmat: conj(vector (..., m)) times matrix (..., m, n)."""
  x1, x2 = _arrays("vecmat", x1, x2)
  return _vecmat(x1, x2, precision=precision, preferred_element_type=preferred_element_type)


@internal_jit(name="kron")
def _kron(a, b):
  a, b = promote_dtypes(a, b)
  na, nb = len(shape_of(a)), len(shape_of(b))
  # the lower rank gets leading unit axes; then a's axes go to even positions and b's to odd
  # ones (expand_dims, as JAX stages it: nothing for 0-d operands); their product then merges
  # pairwise
  if na < nb:
    a = shape_prims.expand_dims(a, tuple(range(nb - na)))
  elif nb < na:
    b = shape_prims.expand_dims(b, tuple(range(na - nb)))
  nd = max(na, nb)
  out_shape = tuple(x * y for x, y in zip(shape_of(a), shape_of(b)))
  product = ew.mul_p.bind(shape_prims.expand_dims(a, tuple(range(1, 2 * nd, 2))),
                          shape_prims.expand_dims(b, tuple(range(0, 2 * nd, 2))))
  return reshape(product, out_shape)


def kron(a, b):
  """jnp.kron: the Kronecker product."""
  a, b = _arrays("kron", a, b)
  return _kron(a, b)


# --- trace, diagonal, diag ---------------------------------------------------------------------

def _diagonal_mask(shape, offset, axis1, axis2):
  """eq(iota(axis1) + offset, iota(axis2)) over `shape`."""
  rows = iota_p.bind(dtype=dtypes.default_int_dtype(), shape=shape, dimension=axis1,
                     sharding=None)
  cols = iota_p.bind(dtype=dtypes.default_int_dtype(), shape=shape, dimension=axis2,
                     sharding=None)
  if isinstance(offset, core.Array):  # a traced offset (jnp.trace's): an integer scalar
    if offset.ndim or dtype_weak(offset)[0].kind not in "iu":
      raise ValueError(f"k must be a scalar integer; got {offset}")
    k = _convert_element_type(offset, dtypes.default_int_dtype(), weak_type=False)
  else:
    if not isinstance(offset, (int, np.integer)):
      raise ValueError(f"k must be a scalar integer; got {offset}")
    k = dtypes.TypedInt(offset, dtypes.default_int_dtype())
  return ew.eq_p.bind(ew.add_p.bind(rows, k), cols)


@internal_jit(static_argnames=("axis1", "axis2", "dtype"), name="trace")
def _trace(a, offset=0, axis1=0, axis2=1, dtype=None):
  from jaxlite._src.numpy.creation import zeros_like
  from jaxlite._src.numpy.reductions import sum as jnp_sum
  # As JAX: the two axes moved last, masked by a 2-D eye (broadcast inside `where`), summed.
  shape = tuple(shape_of(a))
  nd = len(shape)
  a = transpose(a, tuple(i for i in range(nd) if i not in (axis1, axis2)) + (axis1, axis2))
  mask = _diagonal_mask((shape[axis1], shape[axis2]), offset, 0, 1)
  return jnp_sum(_where(mask, a, zeros_like(a)), axis=(-2, -1), dtype=dtype)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
  """jnp.trace: the sum along a diagonal of the (axis1, axis2) planes."""
  (a,) = _arrays("trace", a)
  nd = len(shape_of(a))
  if nd < 2:
    raise ValueError(f"Incompatible shapes for broadcasting: diag requires an array of at least "
                     f"two dimensions, got {nd}")
  # JAX's trace traces `offset` (an operand of its jit, when it is passed)
  given = {} if type(offset) is int and offset == 0 else {"offset": offset}
  return _trace(a, axis1=canonicalize_axis(axis1, nd), axis2=canonicalize_axis(axis2, nd),
                dtype=None if dtype is None else dtypes.check_user_dtype(dtype, "trace"),
                **given)


@internal_jit(static_argnames=("offset", "axis1", "axis2"), name="diagonal")
def _diagonal(a, offset=0, axis1=0, axis2=1):
  """As JAX's default branch: the two axes moved last and a gather of (i, i + offset) pairs.
  (JAX stages a square 2-D non-bool matrix at offset 0 as lax.platform_dependent, a cond on
  platform_index whose other branch is Mosaic's eye-mask sum; jaxlite has one CPU backend and
  stages the branch it runs: RELIABILITY.md, campaign 10.)"""
  from jaxlite._src.numpy.creation import arange
  from jaxlite._src.numpy.shape_ops import moveaxis
  shape = tuple(shape_of(a))
  a = moveaxis(a, (axis1, axis2), (-2, -1))
  size = max(0, min(shape[axis1] + min(offset, 0), shape[axis2] - max(offset, 0)))
  i = arange(size)
  j = arange(abs(offset), abs(offset) + size)
  return a[..., i, j] if offset >= 0 else a[..., j, i]


def diagonal(a, offset=0, axis1=0, axis2=1):
  """jnp.diagonal: the diagonal of the (axis1, axis2) planes, as the last axis."""
  (a,) = _arrays("diagonal", a)
  nd = len(shape_of(a))
  if nd < 2:
    raise ValueError("diagonal requires an array of at least two dimensions.")
  ax1, ax2 = canonicalize_axis(axis1, nd), canonicalize_axis(axis2, nd)
  if ax1 == ax2:  # JAX's class: its transpose rejects the repeated axis
    raise TypeError(f"diagonal: axis1 and axis2 must not be equal, got axis1={axis1} and "
                    f"axis2={axis2}")
  return _diagonal(a, offset=operator.index(offset), axis1=ax1, axis2=ax2)


@internal_jit(static_argnames=("k",), name="_diag")
def _diag(v, k=0):
  shape = tuple(shape_of(v))
  if len(shape) == 2:
    return diagonal(v, offset=k)
  n = shape[0] + abs(k)
  padded = v
  if k:
    from jaxlite._src.numpy.creation import zeros
    from jaxlite._src.lax import shape as lax_shape
    pad = zeros((abs(k),), dtype_weak(v)[0])
    padded = lax_shape.concatenate([v, pad] if k > 0 else [pad, v], 0)
  column = shape_prims.broadcast_in_dim_p.bind(padded, shape=(n, 1), broadcast_dimensions=(0,),
                                               sharding=None)
  return _where(_diagonal_mask((n, n), k, 0, 1), column, np.zeros((), dtype_weak(v)[0])[()])


def diag(v, k=0):
  """jnp.diag: the k-th diagonal of a matrix, or a matrix with `v` on its k-th diagonal."""
  (v,) = _arrays("diag", v)
  if len(shape_of(v)) not in (1, 2):
    raise ValueError("diag input must be 1d or 2d")
  return _diag(v, k=operator.index(k))


# --- einsum ------------------------------------------------------------------------------------

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _parse_einsum(subscripts, shapes):
  """(input index strings, output index string) with '...' expanded to fresh letters."""
  spec = subscripts.replace(" ", "")
  if "->" in spec:
    lhs, out = spec.split("->")
  else:
    lhs, out = spec, None
  inputs = lhs.split(",")
  if len(inputs) != len(shapes):
    raise ValueError(f"einsum: {len(inputs)} operand subscripts given for {len(shapes)} "
                     "operands")
  used = set(spec) - set(".,->")
  spare = [c for c in _LETTERS if c not in used]
  ell_rank = 0
  for term, shape in zip(inputs, shapes):
    if "..." in term:
      ell_rank = max(ell_rank, len(shape) - (len(term) - 3))
  ell = "".join(spare[:ell_rank])
  expanded = []
  for term, shape in zip(inputs, shapes):
    if "..." in term:
      n = len(shape) - (len(term) - 3)
      term = term.replace("...", ell[ell_rank - n:])
    if len(term) != len(shape):
      raise ValueError(f"einsum: operand with subscripts {term!r} has rank {len(shape)}")
    expanded.append(term)
  if out is None:
    counts = {}
    for term in expanded:
      for c in term:
        counts[c] = counts.get(c, 0) + 1
    out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
  else:
    out = out.replace("...", ell)
    for c in out:  # JAX's (opt_einsum's) checks, before any contraction
      if c not in "".join(expanded):
        raise ValueError(f"einsum: Output character '{c}' did not appear in the input")
  sizes = {}
  for k, (term, shape) in enumerate(zip(expanded, shapes)):
    for c, d in zip(term, shape):
      if sizes.setdefault(c, d) != d and 1 not in (d, sizes[c]):
        raise ValueError(f"einsum: Size of label '{c}' for operand {k} ({d}) does not match "
                         f"previous terms ({sizes[c]}).")
  return expanded, out


def _sublists_to_subscripts(first, rest):
  """einsum(op0, sublist0, op1, sublist1, ..., [sublist_out]) as a subscripts string and the
  operands: each sublist holds ints (labels) and Ellipsis."""
  args = (first, *rest)
  out = args[-1] if len(args) % 2 else None
  args = args[:-1] if len(args) % 2 else args
  ops, subs = args[0::2], args[1::2]
  if len(subs) != len(ops):
    raise ValueError("einsum: in the interleaved form each operand needs a subscript list")

  def term(sub):
    letters = []
    for s in sub:
      if s is Ellipsis:
        letters.append("...")
      elif isinstance(s, (int, np.integer)) and not isinstance(s, bool) \
          and 0 <= s < len(_LETTERS):
        letters.append(_LETTERS[s])
      else:
        raise TypeError(f"einsum: subscript labels must be integers in [0, {len(_LETTERS)}) or "
                        f"Ellipsis, got {s!r}")
    return "".join(letters)
  spec = ",".join(term(s) for s in subs)
  return (spec if out is None else f"{spec}->{term(out)}"), ops


def _sum_repeats(x, term, keep, preferred):
  """JAX's sum_repeats: a letter repeated in `term` masks `x` off its diagonal (a Kronecker
  delta of uint32 iotas), then sums all those axes (or all but the last, if kept)."""
  counts = {}
  for c in term:
    counts[c] = counts.get(c, 0) + 1
  for c, count in counts.items():
    if count < 2:
      continue
    axes = tuple(i for i, n in enumerate(term) if n == c)
    shape = tuple(shape_of(x))
    base = tuple(shape[a] for a in axes)
    iotas = [iota_p.bind(dtype=np.dtype(np.uint32), shape=base, dimension=k, sharding=None)
             for k in range(len(base))]
    eyes = [ew.eq_p.bind(a, b) for a, b in zip(iotas, iotas[1:])]  # all eqs, then the ands
    eye = eyes[0]
    for e in eyes[1:]:
      eye = ew.and_p.bind(eye, e)
    if base != shape:
      eye = shape_prims.broadcast_in_dim_p.bind(eye, shape=shape, broadcast_dimensions=axes,
                                                sharding=None)
    from jaxlite._src.numpy.creation import zeros_like
    x = ew.select_n_p.bind(eye, zeros_like(x), x)
    if c not in keep:
      x, term = _einsum_sum(x, term, [c] * count, preferred, axes)
    else:
      x, term = _einsum_sum(x, term, [c] * (count - 1), preferred, axes[:-1])
  return x, term


def _einsum_sum(x, term, letters, preferred, axes=None):
  """JAX's einsum `sum`: reduces the axes of `letters` (in that order; or the given `axes`),
  first casting `x` to `preferred` when promoting with it would change x's dtype; bools reduce
  with or. Each reduced axis drops its letter."""
  if not letters:
    return x, term
  d, w = dtype_weak(x)
  if dtypes.promote_signature(((d, w), (preferred, False)))[0] != d:
    x = convert(x, preferred, False)
  prim = red.reduce_or_p if dtype_weak(x)[0] == np.bool_ else red.reduce_sum_p
  axes = tuple(term.index(c) for c in letters) if axes is None else tuple(axes)
  x = prim.bind(x, **prim.params_of(axes))
  return x, "".join(c for i, c in enumerate(term) if i not in axes)


def _filter_singleton_dims(x, term, other_shape, other_term):
  """Squeezes size-1 axes whose label has another size in the other operand (JAX's rule)."""
  shape = shape_of(x)
  squeeze = tuple(i for i, c in enumerate(term) if shape[i] == 1 and c in other_term
                  and other_shape[other_term.index(c)] != 1)
  if not squeeze:
    return x, term
  x = shape_prims.squeeze_p.bind(x, dimensions=squeeze)
  return x, "".join(c for i, c in enumerate(term) if i not in squeeze)


def _einsum_pair(lhs, tl, rhs, tr, result, precision, preferred, keep=None):
  """One two-operand contraction as JAX's _einsum: `lhs` is the later operand (opt_einsum pops
  the higher index first); dot_general takes (rhs, lhs) when that yields `result`'s order
  directly, else (lhs, rhs) and a transpose. `result` None: an intermediate whose letters in
  `keep` survive, in any order."""
  keep = result if result is not None else keep
  contracted = sorted(c for c in set(tl) | set(tr) if c not in keep)
  lhs, tl = _filter_singleton_dims(lhs, tl, shape_of(rhs), tr)
  rhs, tr = _filter_singleton_dims(rhs, tr, shape_of(lhs), tl)
  lhs, tl = _einsum_sum(lhs, tl, [c for c in contracted if tl.count(c) == 1 and c not in tr],
                        preferred)
  rhs, tr = _einsum_sum(rhs, tr, [c for c in contracted if tr.count(c) == 1 and c not in tl],
                        preferred)
  lhs, tl = _sum_repeats(lhs, tl, keep + tr, preferred)
  rhs, tr = _sum_repeats(rhs, tr, keep + tl, preferred)
  contracted = [c for c in contracted if c in tl or c in tr]
  both = set(tl) & set(tr)
  order = result if result is not None else tl + tr
  batch = "".join(c for c in dict.fromkeys(order) if c in both and c not in contracted)
  gone = batch + "".join(contracted)
  rem_l = "".join(c for c in tl if c not in gone)
  rem_r = "".join(c for c in tr if c not in gone)
  cont_l, cont_r = tuple(tl.index(c) for c in contracted), tuple(tr.index(c) for c in contracted)
  bat_l, bat_r = tuple(tl.index(c) for c in batch), tuple(tr.index(c) for c in batch)
  names = batch + rem_r + rem_l
  if names == result:
    out = lax_dot.dot_general_p.bind(rhs, lhs, dimension_numbers=((cont_r, cont_l),
                                                                    (bat_r, bat_l)),
                                     precision=precision, preferred_element_type=preferred,
                                     out_sharding=_einsum_out_sharding(names, result or names))
  else:
    names = batch + rem_l + rem_r
    out = lax_dot.dot_general_p.bind(lhs, rhs, dimension_numbers=((cont_l, cont_r),
                                                                    (bat_l, bat_r)),
                                     precision=precision, preferred_element_type=preferred,
                                     out_sharding=_einsum_out_sharding(names, result or names))
  if result is not None and names != result:
    out = transpose(out, tuple(names.index(c) for c in result))
    names = result
  return out, names


def _einsum_along_path(ops, terms, out_term, optimize, precision, preferred):
  """Three or more operands, contracted pairwise along the path JAX's opt_einsum would choose
  (einsum_path.py): each step takes the operands at its two positions (the later one as the
  dot_general's lhs, as JAX pops them) and appends the result, whose labels are those still
  needed, in their order of appearance in the pair (the last step: the output's order)."""
  sizes = {}
  for x, t in zip(ops, terms):
    for c, d in zip(t, shape_of(x)):
      if sizes.get(c, 1) == 1:  # a size-1 label broadcasts against the others
        sizes[c] = int(d)
  path = einsum_path.contraction_path(terms, out_term, sizes, optimize)
  ops, terms = list(ops), list(terms)
  for n, step in enumerate(path):
    hi, lo = sorted(step, reverse=True)
    lhs, tl = ops.pop(hi), terms.pop(hi)
    rhs, tr = ops.pop(lo), terms.pop(lo)
    if n == len(path) - 1:
      result = out_term
    else:
      needed = set(out_term).union(*terms)
      pair = tl + tr
      result = "".join(sorted({c for c in pair if c in needed}, key=pair.find))
    x, t = _einsum_pair(lhs, tl, rhs, tr, result, precision, preferred)
    ops.append(x)
    terms.append(t)
  return ops[0], terms[0]


def _einsum_out_sharding(term, keep):
  """The einsum's `out_sharding=` for the contraction that makes its result (`term` holds the
  output letters `keep`, maybe permuted), its spec in `term`'s order; None for the others."""
  s = _pending_out_sharding.value
  if s is None or sorted(term) != sorted(keep):
    return None
  from jaxlite._src.sharding.partition_spec import PartitionSpec
  spec = tuple(s.spec) + (None,) * (len(keep) - len(s.spec))
  return s.with_spec(PartitionSpec(*(spec[keep.index(c)] for c in term)))


def _check_sequence_operand_ranks(subscripts, operands):
  """A list, tuple or string operand is refused as an array (TypeError) only after JAX's contraction
  path has read every operand's shape as opt_einsum does (for a sequence, the lengths along its
  first elements) and compared its rank with its subscripts (ValueError)."""
  terms = subscripts.split("->")[0].replace(" ", "").split(",")
  for i, (term, op) in enumerate(zip(terms, operands)):
    if "." in term:
      continue
    if hasattr(op, "shape"):  # arrays too, in operand order: an array of the wrong rank before
      rank = len(op.shape)    # a string operand is the ValueError (einsum('i,->i', int8, 'a'))
    else:
      rank = 0  # a string is one of opt_einsum's scalar base types
      while isinstance(op, (list, tuple)):
        rank += 1
        if not op:
          break
        op = op[0]
    if rank != len(term):
      raise ValueError(f"Einstein sum subscript '{term}' does not contain the correct number "
                       f"of indices for operand {i}.")


def einsum(subscripts, *operands, out=None, optimize="auto", precision=None,
           preferred_element_type=None, _dot_general=None, out_sharding=None):
  """jnp.einsum: Einstein summation, lowered to transposes, reductions and dot_generals."""
  if out_sharding is not None:
    return _sharded_product(einsum, (subscripts, *operands), dict(
      out=out, optimize=optimize, precision=precision,
      preferred_element_type=preferred_element_type, _dot_general=_dot_general), out_sharding)
  if not isinstance(subscripts, str):
    subscripts, operands = _sublists_to_subscripts(subscripts, operands)
  for op in operands:  # JAX's einsum asks each operand's shape first
    if op is None or not (isinstance(op, (list, tuple)) or hasattr(op, "shape")
                          or isinstance(op, (int, float, complex, bool, str, bytes))):
      raise ValueError(f"Cannot determine the shape of {op}, can only determine the shape of "
                       "array-like objects.")
  _check_sequence_operand_ranks(subscripts, operands)
  ops = _arrays("einsum", *operands)
  if preferred_element_type is not None:
    preferred, out_weak = dtypes.check_user_dtype(preferred_element_type), False
  else:
    preferred, out_weak = dtypes.promote_signature(tuple(dtype_weak(a) for a in ops))
  # Operands keep their dtypes (JAX): dot_general gets `preferred_element_type`.
  terms, out_term = _parse_einsum(subscripts, [tuple(shape_of(o)) for o in ops])
  precision = lax_dot.canonicalize_precision(precision)
  if len(ops) == 1:
    term = terms[0]
    x, term = _einsum_sum(ops[0], term, sorted(c for c in set(term) if c not in out_term
                                               and term.count(c) == 1), preferred)
    x, term = _sum_repeats(x, term, out_term, preferred)
  elif len(ops) == 2:
    x, term = _einsum_pair(ops[1], terms[1], ops[0], terms[0], out_term, precision, preferred)
  else:
    x, term = _einsum_along_path(ops, terms, out_term, optimize, precision, preferred)
  if term != out_term:
    x = transpose(x, tuple(term.index(c) for c in out_term))
  return _convert_element_type(x, preferred, out_weak)
