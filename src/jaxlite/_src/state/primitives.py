"""Mutable array references: the `new_ref`, `get`, `swap`, `addupdate`, `freeze`, `empty_ref` and
`free_ref` primitives, their kernels, printed forms, and how they run under each trace.

Where a ref runs (`_StatePrimitive.bind`):
- at the top level a `Ref` holds a NumPy buffer that the kernels read and write in place;
- under jit (a staging trace) every op is an eqn; the compiled code passes the `Ref` object to
  the same kernels, so a ref argument or a closed-over ref is mutated when the code runs;
- under vmap/grad/jvp a ref made there holds a traced value, and each write rebinds it to a
  new value built from `dynamic_slice`/`dynamic_update_slice` (the state is discharged as it
  happens), so every transformation sees only pure operations.
"""
from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.compiler import passes
from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.interpreters import batching
from jaxlite._src.interpreters import partial_eval as pe
from jaxlite._src.state import lowering as state_lowering
from jaxlite._src.state.types import AbstractRef, Ref, register_ops

# --- indexers ------------------------------------------------------------------------------------


class Slice:
  """`jax.ds(start, size, stride)`: a slice whose start may be traced (its size is static)."""
  __slots__ = ("start", "size", "stride")

  def __init__(self, start, size, stride=1):
    self.start, self.size, self.stride = start, size, stride

  def __eq__(self, other):
    return (type(other) is Slice and (self.start, self.size, self.stride)
            == (other.start, other.size, other.stride))

  def __hash__(self):
    return hash((Slice, self.size, self.stride))

  def __repr__(self):
    return f"Slice(start={self.start}, size={self.size}, stride={self.stride})"


def ds(start, size=None, stride=None):
  """`jax.ds`: `ds(None)` is `:`, `ds(j)` is `:j`, `ds(i, j)` is `i:i+j`, with a traced `i`."""
  if start is None:
    return slice(None)
  if stride is None:
    stride = 1
  if not isinstance(stride, int):
    raise ValueError("Non-static stride in `dslice`")
  if size is None:
    start, size = 0, start
  return Slice(start, size, stride)


class _Dim(NamedTuple):
  """How an indexer reads one axis: `size` elements from `start` (None: the next dynamic
  operand) every `stride`; `squeeze` drops the axis (an integer index). `shown` is the
  printed text of a static entry."""
  start: object
  size: int
  stride: int
  squeeze: bool
  shown: str


def _is_dynamic(x) -> bool:
  return isinstance(x, (core.Array, np.ndarray))


def _static_slice_text(start, size, dim) -> str:
  # JAX prints `start:start+size` (the stride is not shown), `:` for a whole axis.
  if start == 0 and size == dim:
    return ":"
  return f":{size}" if start == 0 else f"{start}:{start + size}"


def make_indexer(idx, shape, fun_name="get") -> tuple[tuple, list]:
  """(one `_Dim` per axis of `shape`, the dynamic index operands) for a ref index `idx`."""
  items = list(idx) if isinstance(idx, tuple) else [idx]
  n_ell = sum(1 for i in items if i is Ellipsis)
  if n_ell > 1:
    raise IndexError("an index can only have a single ellipsis ('...')")
  if n_ell:
    k = items.index(Ellipsis)
    items[k:k + 1] = [slice(None)] * (len(shape) - len(items) + 1)
  if len(items) > len(shape):
    raise IndexError(f"Too many indices for Ref `{fun_name}`: the ref has {len(shape)} axes, "
                     f"got {len(items)} indices")
  items += [slice(None)] * (len(shape) - len(items))
  dims, dyn = [], []
  for item, dim in zip(items, shape):
    if isinstance(item, slice):
      if any(_is_dynamic(v) for v in (item.start, item.stop, item.step)):
        raise TypeError(f"Ref `{fun_name}`: slice bounds must be static; use jax.ds(start, "
                        f"size) for a traced start, got {item}")
      start, stop, step = item.indices(dim)
      if step < 1:  # JAX's indexer takes strides >= 1 only (its ValueError)
        raise ValueError(f"slice must have a step >= 1 (found: {step})")
      size = len(range(start, stop, step))
      dims.append(_Dim(start, size, step, False, _static_slice_text(start, size, dim)))
    elif isinstance(item, Slice):
      size, stride = operator.index(item.size), operator.index(item.stride)
      if _is_dynamic(item.start):
        dyn.append(item.start)
        dims.append(_Dim(None, size, stride, False, ""))
        continue
      start = operator.index(item.start)
      if start < 0 or start + (size - 1) * stride >= dim or size < 0:
        raise ValueError(f"Out of bound slice: start={start}, size={size}, stride={stride}, "
                         f"dim={dim}.")
      dims.append(_Dim(start, size, stride, False, _static_slice_text(start, size, dim)))
    elif _is_dynamic(item):
      if np.ndim(item) != 0 or not np.issubdtype(item.dtype, np.integer):
        raise NotImplementedError(
            f"Ref `{fun_name}`: indices are ints, slices and jax.ds; got an array index of "
            f"shape {np.shape(item)} and dtype {item.dtype}")
      dyn.append(item)
      dims.append(_Dim(None, 1, 1, True, ""))
    elif isinstance(item, (int, np.integer)) and not isinstance(item, bool):
      i = operator.index(item)
      if not -dim <= i < dim:
        raise IndexError(f"index {i} is out of bounds for axis with size {dim}")
      dims.append(_Dim(i % dim, 1, 1, True, str(i)))
    else:
      raise TypeError(f"Ref `{fun_name}`: unsupported index {item!r} of type {type(item)}")
  return tuple(dims), dyn


def _full_indexer(shape) -> tuple:
  return make_indexer((), shape)[0]


def _window_shape(indexer) -> tuple:
  return tuple(d.size for d in indexer if not d.squeeze)


def _extent(d: _Dim) -> int:
  return (d.size - 1) * d.stride + 1 if d.size else 0


def _np_window(shape, indexer, dyn_vals) -> tuple:
  """NumPy indices for `indexer`; dynamic starts wrap when negative and clamp into range, as
  `dynamic_slice` does."""
  out, k = [], 0
  for d, dim in zip(indexer, shape):
    start = d.start
    if start is None:
      start = int(dyn_vals[k])
      k += 1
      start = start + dim if start < 0 else start
      start = min(max(start, 0), dim - _extent(d))
    out.append(start if d.squeeze else slice(start, start + _extent(d), d.stride))
  return tuple(out)


def index_text(indexer, dyn_texts) -> str:
  """The index as JAX prints it in `a[...] <- b`: `...` when whole, else one entry per axis."""
  if all(d.start == 0 and not d.squeeze and d.shown == ":" for d in indexer):
    return "..."
  dyn_texts, parts = iter(dyn_texts), []
  for d in indexer:
    if d.start is not None:
      parts.append(d.shown)
    else:
      t = next(dyn_texts)
      parts.append(t if d.squeeze else f"{t}:{t}+{d.size}")
  return ",".join(parts)


# --- discharged (functional) reads and writes of a traced buffer --------------------------------


def _starts_and_extents(indexer, dyn):
  from jaxlite._src.lax import elementwise_functions as ef
  starts, k = [], 0
  for d in indexer:
    if d.start is None:
      starts.append(ef.convert_element_type(dyn[k], np.int32))
      k += 1
    else:
      starts.append(np.int32(d.start))
  return starts, [_extent(d) for d in indexer]


def _is_whole(indexer, buf) -> bool:
  return all(d.start == 0 and d.size == n and d.stride == 1 and not d.squeeze
             for d, n in zip(indexer, core.get_aval(buf).shape))


def discharged_get(buf, indexer, dyn):
  """`buf[indexer]` with lax ops (so it traces under any transformation)."""
  from jaxlite._src.lax import shape as shape_lax
  from jaxlite._src.lax import slicing
  if _is_whole(indexer, buf):
    return buf
  starts, extents = _starts_and_extents(indexer, dyn)
  out = slicing.dynamic_slice(buf, starts, extents)
  if any(d.stride != 1 for d in indexer):
    out = slicing.slice(out, [0] * len(extents), extents, [d.stride for d in indexer])
  squeezed = tuple(i for i, d in enumerate(indexer) if d.squeeze)
  return shape_lax.squeeze(out, squeezed) if squeezed else out


def discharged_set(buf, indexer, dyn, val):
  """`buf` with `buf[indexer]` replaced by `val`, with lax ops."""
  from jaxlite._src.lax import shape as shape_lax
  from jaxlite._src.lax import slicing
  if _is_whole(indexer, buf):
    return val
  starts, extents = _starts_and_extents(indexer, dyn)
  full = tuple(1 if d.squeeze else d.size for d in indexer)
  val = shape_lax.reshape(val, full)
  if any(d.stride != 1 for d in indexer):
    window = slicing.dynamic_slice(buf, starts, extents)
    strided = tuple(slice(None, None, d.stride) for d in indexer)
    val = window.at[strided].set(val)
  return slicing.dynamic_update_slice(buf, val, starts)


# --- primitives ----------------------------------------------------------------------------------


class _StatePrimitive(core.Primitive):
  """A ref primitive: `bind` picks where it runs (see the module docstring)."""

  def bind(self, *args, **params):
    trace = core.current_trace()
    ref = args[0] if self.reads_ref else None
    if self.reads_ref and not isinstance(ref, Ref):
      raise TypeError(f"jax.ref.{self.name}: expected a Ref, got {type(ref).__name__}")
    if type(ref) is Ref and not isinstance(ref._buf, np.ndarray):
      return self.discharged(ref, *args[1:], **params)
    staging = isinstance(trace, pe.DynamicJaxprTrace)
    if trace is not core.eval_trace and not staging and not self.reads_ref:
      return self.discharged(*args, **params)  # a ref made under vmap/grad/jvp
    tracers = [a for a in args if isinstance(a, core.Tracer)]
    if trace is core.eval_trace or (not tracers and not staging):
      return self._eager(args, params)
    if type(ref) is Ref and not staging:
      if self.name == "get":  # reading a top-level ref at a traced index: a pure read
        return discharged_get(core.make_array(ref._buf.copy(), ref.aval.inner_aval),
                              params["indexer"], args[1:])
      raise vmapped_write_error(self, ref.aval)
    return trace.process_primitive(self, args, params)

  def _eager(self, args, params):
    from jaxlite._src.lax.elementwise_functions import asarg
    args = [a if isinstance(a, Ref) else asarg(a) for a in args]
    out_aval = self.abstract_eval(*[core.get_aval(a) for a in args], **params)
    out = self.impl(*[_host(a) for a in args], **params)
    if self.multiple_results:
      return [core.make_array(o, a) for o, a in zip(out, out_aval)]
    if isinstance(out_aval, AbstractRef):
      out._aval = out_aval  # keeps the weak type of the initial value
      return out
    return core.make_array(out, out_aval)


def vmapped_write_error(prim, ref_aval) -> Exception:
  """JAX's error (a bare Exception) for a batched value written to an unbatched ref."""
  what = "a set/swap" if prim is swap_p else f"an {prim.name}"
  return Exception(f"performing {what} operation with vmapped value on an unbatched array "
                   f"reference of type {ref_aval}. Move the array reference to be an argument "
                   "to the vmapped function?")


def _host(x):
  """The kernel's view of an eager operand: a Ref itself, else a NumPy value."""
  if isinstance(x, (Ref, np.ndarray, np.generic)):
    return x
  if type(x) is core.array_type:
    return x._host_value()
  return x.dtype.type(x)  # dtypes.Typed* weak scalars


def _state_primitive(name, reads_ref, multiple_results=False):
  p = _StatePrimitive(name)
  p.reads_ref = reads_ref
  p.multiple_results = multiple_results
  passes.effectful_primitives.add(p)  # never removed by DCE nor merged by CSE
  return p


def _check_value(prim_name, ref_aval, val_aval, indexer):
  want = _window_shape(indexer)
  if tuple(val_aval.shape) != want:
    shown = "()" if index_text(indexer, ["?"] * len(indexer)) == "..." else \
        f"[{index_text(indexer, ['?'] * len(indexer))}]"
    raise ValueError(f"Invalid shape for `{prim_name}`. Ref shape: {ref_aval.shape}. Expected "
                     f"shape: {want}. Value shape: {tuple(val_aval.shape)}. "
                     f"Transforms: {shown}. ")
  if val_aval.dtype != ref_aval.dtype:
    raise ValueError(f"Invalid dtype for `{prim_name}`. Ref dtype: {ref_aval.dtype}. "
                     f"Value dtype: {val_aval.dtype}. ")


def _check_ref(prim_name, aval):
  if not isinstance(aval, AbstractRef):
    raise TypeError(f"jax.ref.{prim_name}: expected a Ref, got a value of type {aval}")


# new_ref: a fresh buffer holding a copy of the initial value.
new_ref_p = _state_primitive("new_ref", reads_ref=False)
xla.register(new_ref_p, state_lowering.new_ref_rule)


@new_ref_p.def_abstract_eval
def _new_ref_abstract_eval(aval, *, memory_space, kind):
  return AbstractRef(aval, memory_space=memory_space, kind=kind)


@new_ref_p.def_impl
def _new_ref_impl(val, *, memory_space, kind):
  val = np.array(val, copy=True)
  return Ref(AbstractRef(ShapedArray(val.shape, val.dtype), kind=kind), val)


def _new_ref_discharged(val, *, memory_space, kind):
  from jaxlite._src.lax.elementwise_functions import asarg
  val = asarg(val)
  aval = core.get_aval(val)
  if not isinstance(val, core.Tracer):  # a constant: held as an Array (never written in place)
    val = core.make_array(np.array(_host(val)), aval)
  return Ref(AbstractRef(aval, memory_space=memory_space, kind=kind), val)


new_ref_p.discharged = _new_ref_discharged

# empty_ref: a fresh buffer of type `ty` (zero-filled here, so reads before writes are defined).
empty_ref_p = _state_primitive("empty_ref", reads_ref=False)
xla.register(empty_ref_p, state_lowering.empty_ref_rule)
empty_ref_p.def_abstract_eval(lambda *, ty, memory_space: AbstractRef(ty,
                                                                      memory_space=memory_space))


@empty_ref_p.def_impl
def _empty_ref_impl(*, ty, memory_space):
  return Ref(AbstractRef(ty, memory_space=memory_space), np.zeros(ty.shape, ty.dtype))


def _empty_ref_discharged(*, ty, memory_space):
  from jaxlite._src.lax.convenience import full
  return Ref(AbstractRef(ty, memory_space=memory_space), full(ty.shape, 0, ty.dtype))


empty_ref_p.discharged = _empty_ref_discharged

# get: reads `ref[indexer]` (dynamic starts are the operands after the ref).
get_p = _state_primitive("get", reads_ref=True)
xla.register(get_p, state_lowering.get_rule)


@get_p.def_abstract_eval
def _get_abstract_eval(ref_aval, *dyn_avals, indexer):
  _check_ref("get", ref_aval)
  return ShapedArray(_window_shape(indexer), ref_aval.dtype, ref_aval.weak_type)


@get_p.def_impl
def _get_impl(ref, *dyn, indexer):
  return np.array(ref._buf[_np_window(ref.shape, indexer, dyn)])


get_p.discharged = lambda ref, *dyn, indexer: discharged_get(ref._buf, indexer, dyn)

# swap: writes `val` at `ref[indexer]` and returns what was there (`ref[i] = v` drops it).
swap_p = _state_primitive("swap", reads_ref=True)
xla.register(swap_p, state_lowering.swap_rule)


@swap_p.def_abstract_eval
def _swap_abstract_eval(ref_aval, val_aval, *dyn_avals, indexer):
  _check_ref("swap", ref_aval)
  _check_value("swap", ref_aval, val_aval, indexer)
  return ShapedArray(_window_shape(indexer), ref_aval.dtype, ref_aval.weak_type)


@swap_p.def_impl
def _swap_impl(ref, val, *dyn, indexer):
  window = _np_window(ref.shape, indexer, dyn)
  old = np.array(ref._buf[window])
  ref._buf[window] = val
  return old


def _swap_discharged(ref, val, *dyn, indexer):
  old = discharged_get(ref._buf, indexer, dyn)
  ref._buf = discharged_set(ref._buf, indexer, dyn, val)
  return old


swap_p.discharged = _swap_discharged

# addupdate: `ref[indexer] += val`, no result.
addupdate_p = _state_primitive("addupdate", reads_ref=True, multiple_results=True)
xla.register(addupdate_p, state_lowering.addupdate_rule)


@addupdate_p.def_abstract_eval
def _addupdate_abstract_eval(ref_aval, val_aval, *dyn_avals, indexer):
  _check_ref("addupdate", ref_aval)
  _check_value("addupdate", ref_aval, val_aval, indexer)
  return []


@addupdate_p.def_impl
def _addupdate_impl(ref, val, *dyn, indexer):
  ref._buf[_np_window(ref.shape, indexer, dyn)] += val
  return []


def _addupdate_discharged(ref, val, *dyn, indexer):
  ref._buf = discharged_set(ref._buf, indexer, dyn, discharged_get(ref._buf, indexer, dyn) + val)
  return []


addupdate_p.discharged = _addupdate_discharged

# freeze: the final value of a ref, as an array.
freeze_p = _state_primitive("freeze", reads_ref=True)
xla.register(freeze_p, state_lowering.freeze_rule)


@freeze_p.def_abstract_eval
def _freeze_abstract_eval(ref_aval):
  _check_ref("freeze", ref_aval)
  return ref_aval.inner_aval


freeze_p.def_impl(lambda ref: ref._buf.copy())
freeze_p.discharged = lambda ref: ref._buf

# free_ref: invalidates a ref; as in JAX it changes nothing at run time.
free_ref_p = _state_primitive("free_ref", reads_ref=True, multiple_results=True)
xla.register(free_ref_p, state_lowering.free_ref_rule)


@free_ref_p.def_abstract_eval
def _free_ref_abstract_eval(ref_aval):
  _check_ref("free_ref", ref_aval)
  return []


free_ref_p.def_impl(lambda ref: [])
free_ref_p.discharged = lambda ref: []


# --- vmap ------------------------------------------------------------------------------------
# A ref passed to vmap with an axis is batched (its BatchTracer's type is the ref of one
# example's slice): the rules read the whole ref, apply the example's read or write to each
# slice with vmap of the discharged forms, and write the whole ref back. A ref made inside
# vmap is discharged and never reaches these rules; a ref closed over by the vmapped code is
# unbatched: reads at batched indices gather, writes of batched values raise (as in JAX).


def _whole(ref):
  return get_p.bind(ref, indexer=_full_indexer(core.get_aval(ref).shape))


def _per_example(fn, ref_dim, dims, args, out_axes=0):
  from jaxlite._src.transforms.vmap_api import vmap
  return vmap(fn, in_axes=(ref_dim, *dims), out_axes=out_axes)(*args)


def _get_batcher(vals, dims, *, indexer):
  ref, dyn = vals[0], vals[1:]
  read = lambda whole, *d: discharged_get(whole, indexer, d)
  ref_dim = None if dims[0] is batching.not_mapped else dims[0]
  return _per_example(read, ref_dim, dims[1:], (_whole(ref), *dyn)), 0


def _write_batcher(prim):
  def rule(vals, dims, *, indexer):
    ref, val, dyn = vals[0], vals[1], vals[2:]
    if dims[0] is batching.not_mapped:
      raise vmapped_write_error(prim, core.get_aval(ref))
    ref_dim = dims[0]
    whole = _whole(ref)

    def write(w, v, *d):
      if prim is addupdate_p:
        v = discharged_get(w, indexer, d) + v
      return discharged_set(w, indexer, d, v)
    val_dim = None if dims[1] is batching.not_mapped else dims[1]
    dyn_dims = [None if d is batching.not_mapped else d for d in dims[2:]]
    new = _per_example(write, ref_dim, (val_dim, *dyn_dims), (whole, val, *dyn),
                       out_axes=ref_dim)
    swap_p.bind(ref, new, indexer=_full_indexer(core.get_aval(ref).shape))
    if prim is addupdate_p:
      return [], []
    old = _per_example(lambda w, *d: discharged_get(w, indexer, d), ref_dim, dyn_dims,
                       (whole, *dyn))
    return old, 0
  return rule


batching.primitive_batchers[get_p] = _get_batcher
batching.primitive_batchers[swap_p] = _write_batcher(swap_p)
batching.primitive_batchers[addupdate_p] = _write_batcher(addupdate_p)


# --- printed forms: `c:f32[3] <- a[...]`, `a[1] <- d`, `a[...] += c` ----------------------------


def _pp_get(eqn, binder, atom):
  ref, dyn = eqn.invars[0], eqn.invars[1:]
  idx = index_text(eqn.params["indexer"], [atom(v) for v in dyn])
  return f"{binder(eqn.outvars[0])} <- {atom(ref)}[{idx}]"


def _pp_swap(eqn, binder, atom):
  ref, val, dyn = eqn.invars[0], eqn.invars[1], eqn.invars[2:]
  target = f"{atom(ref)}[{index_text(eqn.params['indexer'], [atom(v) for v in dyn])}]"
  if atom(eqn.outvars[0]) == "_":
    return f"{target} <- {atom(val)}"
  return f"{binder(eqn.outvars[0])}, {target} <- {target}, {atom(val)}"


def _pp_addupdate(eqn, binder, atom):
  ref, val, dyn = eqn.invars[0], eqn.invars[1], eqn.invars[2:]
  idx = index_text(eqn.params["indexer"], [atom(v) for v in dyn])
  return f"{atom(ref)}[{idx}] += {atom(val)}"


def _register_printers():
  from jaxlite._src.base import pretty_print
  pretty_print.eqn_printers[get_p] = _pp_get
  pretty_print.eqn_printers[swap_p] = _pp_swap
  pretty_print.eqn_printers[addupdate_p] = _pp_addupdate


_register_printers()

# --- the public functions (jax.ref.*, jax.new_ref, ...) -----------------------------------------


def new_ref(init_val, *, memory_space=None, kind=None):
  """A mutable array reference holding a copy of `init_val` (`jax.new_ref`)."""
  if memory_space is not None and core.current_trace() is core.eval_trace:
    raise NotImplementedError("array ref with memory space only works inside of a `jit`.")
  return new_ref_p.bind(init_val, memory_space=memory_space, kind=kind)


def empty_ref(ty, memory_space=None):
  """A reference of type `ty` (anything with `.shape` and `.dtype`), zero-filled here."""
  from jaxlite._src.base import dtypes
  aval = ShapedArray(tuple(ty.shape), dtypes.canonicalize_dtype(np.dtype(ty.dtype)),
                     bool(getattr(ty, "weak_type", False)))
  return empty_ref_p.bind(ty=aval, memory_space=memory_space)


def free_ref(ref):
  """Invalidates `ref`; returns ()."""
  free_ref_p.bind(ref)
  return ()


def freeze(ref):
  """The contents of `ref` as an array (`jax.ref.freeze`)."""
  return freeze_p.bind(ref)


def _indexer_of(ref, idx, fun_name):
  if not isinstance(ref, Ref):
    raise ValueError(f"Can only call `ref_{fun_name}` on a `Ref`: jax.ref.{fun_name} expected "
                     f"a Ref as first argument, got {type(ref).__name__}")  # JAX's class
  return make_indexer(idx, ref.aval.shape, fun_name)


def _has_array_index(idx) -> bool:
  """Whether `idx` holds an integer array (advanced indexing: a gather or scatter)."""
  items = idx if isinstance(idx, tuple) else (idx,)
  return any(_is_dynamic(i) and np.ndim(i) > 0 for i in items)


def _whole_of(ref):
  return get_p.bind(ref, indexer=_full_indexer(ref.aval.shape))


def _write_whole(ref, value):
  swap_p.bind(ref, value, indexer=_full_indexer(ref.aval.shape))


def ref_get(ref, idx=()):
  """`ref[idx]` (`jax.ref.get`)."""
  if isinstance(ref, Ref) and _has_array_index(idx):  # NumPy's advanced indexing: a gather
    return _whole_of(ref)[idx]
  indexer, dyn = _indexer_of(ref, idx, "get")
  return get_p.bind(ref, *dyn, indexer=indexer)


def ref_swap(ref, idx, value, _function_name="swap"):
  """Writes `value` at `ref[idx]` and returns the old contents (`jax.ref.swap`)."""
  if isinstance(ref, Ref) and _has_array_index(idx):  # a scatter into the whole ref
    whole = _whole_of(ref)
    _write_whole(ref, whole.at[idx].set(value))
    return whole[idx]
  indexer, dyn = _indexer_of(ref, idx, _function_name)
  return swap_p.bind(ref, value, *dyn, indexer=indexer)


def ref_set(ref, idx, value):
  """`ref[idx] = value` (`jax.ref.set`); returns None."""
  ref_swap(ref, idx, value, "set")


def ref_addupdate(ref, idx, x):
  """`ref[idx] += x` (`jax.ref.addupdate`); returns None."""
  if isinstance(ref, Ref) and _has_array_index(idx):
    _write_whole(ref, _whole_of(ref).at[idx].add(x))
    return
  indexer, dyn = _indexer_of(ref, idx, "addupdate")
  addupdate_p.bind(ref, x, *dyn, indexer=indexer)


def _tracer_addupdate(self, x, idx=()):
  if not isinstance(self.aval, AbstractRef):
    raise AttributeError(f"{type(self).__name__} of type {self.aval} has no attribute "
                         "'addupdate' (only refs do)")
  ref_addupdate(self, idx, x)


# A ref staged by jit is a tracer of AbstractRef type; as JAX's does, it has `addupdate` (its
# indexing goes through array_methods, which sends refs here).
pe.DynamicJaxprTracer.addupdate = _tracer_addupdate
batching.BatchTracer.addupdate = _tracer_addupdate  # a ref passed to vmap


register_ops(ref_get=ref_get, ref_set=ref_set, ref_addupdate=ref_addupdate)

