"""Vectorization: `BatchTrace` runs a function once on values that carry one extra, mapped axis.

A `BatchTracer` holds the batched value `val` and `batch_dim`, the axis of `val` that is mapped;
values shared by every example are left unwrapped (their dim is `not_mapped`). A primitive's rule
turns batched operands into batched results with one bind on the parent trace: no Python loops.

For rule writers (register a rule right below its primitive, or through a family helper):
  primitive_batchers[p]       rule(vals, dims, **params) -> (out, out_dim), or (outs, out_dims) for
                              multiple-results primitives. Runs with the parent trace current and
                              only when some operand is batched (otherwise `p` binds unchanged).
  axis_primitive_batchers[p]  rule(axis_data, vals, dims, **params): for rules that need the axis
                              (`axis_data.name`, `.size`): collectives, calls, control flow. Runs
                              even when nothing is batched (a body may use the axis by name).
  not_mapped                  the dim of an unbatched operand (None).
  defvectorized(p)            unary elementwise: the batch dim passes through.
  defbroadcasting(p)          n-ary elementwise with lax broadcasting of unbatched operands.
  defreducer(p)               reductions over an `axes` param (reduce_sum, argmax, ...).
  moveaxis(x, src, dst), bdim_at_front(x, bdim, size), all_at_front(vals, dims, size),
  bdim_to(x, bdim, dst, size), broadcast(x, size, axis), broadcast_front(x, size)
                              move or insert the batch axis (unbatched -> broadcast to `size`).
  shape_of(v), example_ndim(v, dim), mapped_size(vals, dims), dims_agree(vals, dims)
                              small questions rules ask about their operands.
  batch_flat(fun, axis_data, vals, dims) -> (out vals, out dims): run a flat function batched.
  batch_jaxpr(closed, axis_data, in_dims) -> (ClosedJaxpr, out_dims): a jaxpr over batched
                              inputs, cached per (jaxpr, dims, axis); for call and loop rules.
  axis_size(name)             the size of a named axis of an enclosing vmap (NameError if none).
"""
from __future__ import annotations

import os
import sys
import weakref

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base.config import config
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.state.types import AbstractRef

not_mapped = None

primitive_batchers: dict = {}
axis_primitive_batchers: dict = {}


class AxisData:
  """The mapped axis of one vmap: its name (or None), size and spmd axis name."""
  __slots__ = ("name", "size", "spmd_name")

  def __init__(self, name, size: int, spmd_name=None):
    self.name = name
    self.size = size
    self.spmd_name = spmd_name

  def key(self) -> tuple:
    return (self.name, self.size, self.spmd_name)

  def __repr__(self):
    return f"AxisData(name={self.name!r}, size={self.size})"


# --- tracers -----------------------------------------------------------------------------------

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _user_site():
  """(code, lasti) of the innermost frame outside jaxlite: where a tracer was made."""
  f = sys._getframe(2)
  while f is not None and f.f_code.co_filename.startswith(_PKG_DIR):
    f = f.f_back
  return None if f is None else (f.f_code, f.f_lasti)


def _site_str(site) -> str:
  code, lasti = site
  positions = list(code.co_positions())
  line, _, col, _ = positions[lasti // 2] if lasti // 2 < len(positions) else (None,) * 4
  line = code.co_firstlineno if line is None else line
  where = f"{code.co_filename}:{line}" + (f":{col}" if col is not None else "")
  return f"{where} ({code.co_qualname})"


class BatchTracer(core.Tracer):
  """A value of one example, standing for `val` mapped along its axis `batch_dim`."""
  __slots__ = ("_aval", "_site", "batch_dim", "val")

  def __init__(self, trace, val, batch_dim: int):
    self._trace = trace
    self.val = val
    self.batch_dim = batch_dim
    self._aval = None
    self._site = _user_site()

  @property
  def aval(self) -> ShapedArray:
    aval = self._aval
    if aval is None:
      full = core.get_aval(self.val)
      d = self.batch_dim
      if type(full) is AbstractRef:  # a batched ref: a ref to one example's slice
        inner = full.inner_aval
        aval = self._aval = AbstractRef(
            ShapedArray(inner.shape[:d] + inner.shape[d + 1:], inner.dtype, inner.weak_type),
            memory_space=full.memory_space, kind=full.kind)
        return aval
      aval = self._aval = ShapedArray(full.shape[:d] + full.shape[d + 1:], full.dtype,
                                      full.weak_type)
    return aval

  def _error_context(self) -> str:
    if self._site is None:
      return ""
    return (f"\nThis BatchTracer with object id {id(self)} was created on line:\n"
            f"  {_site_str(self._site)}")

  def __repr__(self):
    return f"VmapTracer(aval={self.aval}, batched={core.get_aval(self.val)})"

  __str__ = __repr__


class BatchTrace(core.Trace):
  """Interprets primitives on batched values by their batching rules, binding on `parent`."""
  __slots__ = ("axis_data", "tag")

  def __init__(self, parent, axis_data: AxisData, tag=None):
    super().__init__(parent)
    self.axis_data = axis_data
    # The traces of one vmap share a tag: a trace batching a custom function's body (on the
    # trace below, as JAX's batch_subtrace) takes the vmap's tracers the body closes over as
    # its own (ott's fixed-point loops pass closures over batched values as nondiff args).
    self.tag = self if tag is None else tag

  def to_batch_info(self, x):
    """(value, batch dim) of `x` as seen by this trace."""
    if type(x) is BatchTracer and x._trace.tag is self.tag:
      return x.val, x.batch_dim
    return x, not_mapped

  def wrap(self, val, dim):
    return val if dim is not_mapped else BatchTracer(self, val, dim)

  def process_primitive(self, primitive, args, params):
    vals, dims = [], []
    for x in args:
      if type(x) is BatchTracer and x._trace.tag is self.tag:
        vals.append(x.val)
        dims.append(x.batch_dim)
      else:
        vals.append(x)
        dims.append(not_mapped)
    axis_rule = axis_primitive_batchers.get(primitive)
    with core.set_current_trace(self.parent):
      if axis_rule is not None:
        out, out_dim = axis_rule(self.axis_data, vals, dims, **params)
      elif all(d is not_mapped for d in dims):
        return primitive.bind(*vals, **params)
      else:
        rule = primitive_batchers.get(primitive)
        if rule is None:
          raise NotImplementedError(f"Batching rule for '{primitive}' not implemented")
        if primitive.library:  # a library's rule gets tuples, as JAX passes them
          vals, dims = tuple(vals), tuple(dims)
        out, out_dim = rule(vals, dims, **params)
    if primitive.multiple_results:
      return [self.wrap(o, d) for o, d in zip(out, out_dim)]
    return self.wrap(out, out_dim)


# --- named axes --------------------------------------------------------------------------------

def _named_axis_traces():
  t = core.current_trace()
  while t is not None:
    data = getattr(t, "axis_data", None)
    if data is not None and data.name is not None:
      yield data
    t = t.parent


def axis_size(name) -> int:
  """The size of the innermost enclosing vmap axis called `name`."""
  for data in _named_axis_traces():
    if data.name == name:
      return data.size
  raise NameError(f"unbound axis name: {name}")


def axis_is_bound(name) -> bool:
  return any(data.name == name for data in _named_axis_traces())


def axis_env_key() -> tuple:
  """The named axes in scope (name, size), innermost first: part of jit's trace-cache key."""
  if core.current_trace() is core.eval_trace:
    return ()
  return tuple((d.name, d.size) for d in _named_axis_traces())


# --- moving and inserting the batch axis -------------------------------------------------------

def shape_of(x) -> tuple:
  """The shape of an operand value (arrays, tracers, NumPy or Python scalars)."""
  return getattr(x, "shape", ())


def example_ndim(x, bdim) -> int:
  """The rank of one example of `x`."""
  return len(shape_of(x)) - (bdim is not not_mapped)


def mapped_size(vals, dims) -> int:
  """The batch size, read off the first batched operand."""
  return next(shape_of(v)[d] for v, d in zip(vals, dims) if d is not not_mapped)


def dims_agree(vals, dims) -> bool:
  """Whether every non-scalar operand is batched, along the same axis, with the same shape."""
  first = next(i for i, d in enumerate(dims) if d is not not_mapped)
  shape, dim = shape_of(vals[first]), dims[first]
  return all(shape_of(v) == shape and d == dim for v, d in zip(vals, dims) if shape_of(v))


class _ShapePrimitives:
  """lax's transpose and broadcast_in_dim, registered by lax.shape at its import (this module
  stands below lax: issue 29)."""
  transpose_p = broadcast_in_dim_p = None


_shape_prims = _ShapePrimitives()


def register_shape_primitives(*, transpose_p, broadcast_in_dim_p):
  _shape_prims.transpose_p, _shape_prims.broadcast_in_dim_p = transpose_p, broadcast_in_dim_p


def _prims():
  return _shape_prims


def moveaxis(x, src: int, dst: int):
  """`x` with its axis `src` moved to position `dst` (one transpose, or nothing)."""
  nd = len(shape_of(x))
  src, dst = src % nd, dst % nd
  if src == dst:
    return x
  perm = [i for i in range(nd) if i != src]
  perm.insert(dst, src)
  return _prims().transpose_p.bind(x, permutation=tuple(perm))


def broadcast(x, size: int, axis: int):
  """`x` with a new axis of `size` at `axis` (JAX leaves NumPy ints in the dims it prints)."""
  shape = list(shape_of(x))
  shape.insert(axis, size)
  dims = tuple(np.delete(np.arange(len(shape)), axis))
  return _prims().broadcast_in_dim_p.bind(x, shape=tuple(shape), broadcast_dimensions=dims,
                                          sharding=None)


def bdim_at_front(x, bdim, size: int):
  """`x` with its batch axis first; an unbatched `x` is broadcast to `size` there."""
  if bdim is not_mapped:
    return broadcast(x, size, 0)
  return moveaxis(x, bdim, 0)


def broadcast_front(x, size: int):
  """`x` with a new leading axis of `size`, as `lax.broadcast` does it (plain int dims)."""
  shape = shape_of(x)
  return _prims().broadcast_in_dim_p.bind(
      x, shape=(size,) + shape, broadcast_dimensions=tuple(range(1, len(shape) + 1)),
      sharding=None)


def all_at_front(vals, dims, size: int) -> list:
  return [bdim_at_front(v, d, size) for v, d in zip(vals, dims)]


def bdim_to(x, bdim, dst: int, size: int):
  """`x` with its batch axis at `dst`; an unbatched `x` is broadcast to `size` there."""
  if bdim is not_mapped:
    return broadcast(x, size, dst)
  return moveaxis(x, bdim, dst)


def batched_aval(aval: ShapedArray, dim, size: int) -> ShapedArray:
  if dim is not_mapped:
    return aval
  shape = list(aval.shape)
  shape.insert(dim, size)
  return ShapedArray(tuple(shape), aval.dtype, aval.weak_type)


def shift_axes(axes, bdim: int) -> tuple:
  """Per-example axes renumbered for a value whose batch axis sits at `bdim` (NumPy ints)."""
  axes = np.asarray(axes, dtype=np.int64)
  return tuple(np.where(axes < bdim, axes, axes + 1))


# --- family helpers ----------------------------------------------------------------------------

def defvectorized(prim) -> None:
  """Registers the rule of a primitive acting on each element alone: the dim passes through."""
  def rule(vals, dims, **params):
    return prim.bind(*vals, **params), dims[0]
  primitive_batchers[prim] = rule


def broadcast_batcher(prim, vals, dims, **params):
  """Elementwise n-ary rule: agreeing operands bind as they are; others meet at the front."""
  if dims_agree(vals, dims):
    out_dim = next(d for d in dims if d is not not_mapped)
  else:
    # Unbatched operands get a size-1 leading axis and rely on the primitive's broadcasting.
    vals = [bdim_at_front(v, d, 1) if shape_of(v) else v for v, d in zip(vals, dims)]
    nd = max(len(shape_of(v)) for v in vals)
    vals = [v if d is not_mapped or len(shape_of(v)) == nd else _expand_trailing(v, nd)
            for v, d in zip(vals, dims)]
    out_dim = 0
  out = prim.bind(*vals, **params)
  return (out, [out_dim] * len(out)) if prim.multiple_results else (out, out_dim)


def _expand_trailing(x, nd: int):
  """A batched per-example scalar given trailing size-1 axes up to rank `nd`."""
  shape = shape_of(x)
  return _prims().broadcast_in_dim_p.bind(
      x, shape=shape + (1,) * (nd - len(shape)), broadcast_dimensions=tuple(range(len(shape))),
      sharding=None)


def defbroadcasting(prim) -> None:
  """Registers the elementwise broadcasting rule for an n-ary primitive."""
  primitive_batchers[prim] = lambda vals, dims, **params: broadcast_batcher(prim, vals, dims,
                                                                            **params)


def reducer_batcher(prim, vals, dims, *, axes, **params):
  """Reductions over per-example `axes`: renumber them around the batch axis, which survives."""
  (x,), (bdim,) = vals, dims
  new_axes = shift_axes(axes, bdim)
  out_dim = bdim - int(np.sum(np.asarray(axes, dtype=np.int64) < bdim))
  return prim.bind(x, axes=new_axes, **params), out_dim


def defreducer(prim) -> None:
  primitive_batchers[prim] = lambda vals, dims, **params: reducer_batcher(prim, vals, dims,
                                                                          **params)


# --- batching whole functions and jaxprs -------------------------------------------------------

def batch_flat(flat_fun, axis_data: AxisData, in_vals, in_dims, tag=None):
  """Runs `flat_fun` under a fresh BatchTrace (of the vmap `tag` names, when given); returns its
  flat outputs as (vals, dims)."""
  trace = BatchTrace(core.current_trace(), axis_data, tag)
  tracers = [trace.wrap(v, d) for v, d in zip(in_vals, in_dims)]
  try:
    with core.set_current_trace(trace):
      outs = flat_fun(*tracers)
    pairs = [trace.to_batch_info(o) for o in outs]
  finally:
    trace.invalidate()
  return [v for v, _ in pairs], [d for _, d in pairs]


_jaxpr_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def batch_jaxpr(closed: core.ClosedJaxpr, axis_data: AxisData, in_dims):
  """`closed` turned into a jaxpr over batched inputs, with the batch dims of its outputs."""
  key = (tuple(in_dims), axis_data.key(), config.trace_context(), axis_env_key())
  per_jaxpr = _jaxpr_cache.get(closed)
  if per_jaxpr is None:
    per_jaxpr = _jaxpr_cache[closed] = {}
  hit = per_jaxpr.get(key)
  if hit is None:
    hit = per_jaxpr[key] = _batch_jaxpr(closed, axis_data, tuple(in_dims))
  return hit


def _batch_jaxpr(closed, axis_data, in_dims):
  from jaxlite._src.interpreters import partial_eval as pe
  out_dims = []

  def fun(*args):
    outs, dims = batch_flat(lambda *a: core.eval_jaxpr(closed.jaxpr, closed.consts, *a),
                            axis_data, args, in_dims)
    out_dims.extend(dims)
    return outs

  in_avals = [batched_aval(a, d, axis_data.size) for a, d in zip(closed.in_avals, in_dims)]
  batched = pe.trace_to_jaxpr(fun, in_avals)
  return batched, tuple(out_dims)


# The PRNG key primitives sit below this module (dtypes name key types): their batching rules
# are installed from here.
from jaxlite._src.rng import prng as _prng  # noqa: E402

_prng.register_batching_rules(sys.modules[__name__])


# --- batching a closed jaxpr (loop and cond bodies) ------------------------------------------

_batched_bodies: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def batch_body(closed: core.ClosedJaxpr, axis_data, in_batched, force_out) -> tuple:
  """(jaxpr over inputs batched at axis 0 where `in_batched`, which outputs are batched).

  Batched outputs come out at axis 0; outputs in `force_out` are batched even when the body
  leaves them unbatched (loop carries must keep one type across iterations).
  """
  key = (tuple(in_batched), tuple(force_out), axis_data.key(), config.trace_context(),
         axis_env_key())
  per_jaxpr = _batched_bodies.setdefault(closed, {})
  hit = per_jaxpr.get(key)
  if hit is None:
    hit = per_jaxpr[key] = _batch_body(closed, axis_data, in_batched, force_out)
  return hit


def _batch_body(closed, axis_data, in_batched, force_out):
  from jaxlite._src.interpreters import partial_eval as pe
  size = axis_data.size
  in_dims = [0 if b else None for b in in_batched]
  out_batched = []

  def fun(*args):
    outs, dims = batch_flat(
        lambda *a: core.eval_jaxpr(closed.jaxpr, closed.consts, *a), axis_data, args, in_dims)
    out_batched[:] = [d is not None or f for d, f in zip(dims, force_out)]
    return [bdim_at_front(o, d, size) if b else o
            for o, d, b in zip(outs, dims, out_batched)]

  in_avals = [batched_aval(a, d, size) for a, d in zip(closed.in_avals, in_dims)]
  jaxpr = pe.trace_to_jaxpr(fun, in_avals)
  return jaxpr, tuple(out_batched)
