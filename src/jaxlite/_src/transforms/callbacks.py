"""Host callbacks: `jax.debug.print`/`callback`, `jax.pure_callback`, `io_callback`.

Each is a primitive whose impl calls the user's Python function with Arrays, so it runs when
the program runs: right away in eager mode, at execution time under jit (the NumPy backend
calls impls; DCE and CSE keep effectful eqns). vmap and autodiff follow JAX's rules.
"""
from __future__ import annotations

import copy
import logging
import string
import sys
import traceback

import numpy as np

from jaxlite._src.base import config, core, devices, dtypes, effects, tree_util
from jaxlite._src.compiler import passes
from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.interpreters import ad, batching
from jaxlite._src.spmd import runtime

logger = logging.getLogger("jax._src.debugging")
# pure_callback's and io_callback's failures are logged under JAX's name for the module that
# defines them (equinox filters that logger's "jax.pure_callback failed" record)
callback_logger = logging.getLogger("jax._src.callback")


def _as_arrays(vals):
  """A callback's operands as Arrays in host memory (JAX: on its CPU device), never placed on
  an accelerator: the program that called the callback waits for it there."""
  return [core.host_array_from_numpy(np.asarray(v), False) for v in vals]


def _call_on_host(callback, vals):
  """`callback(*vals as Arrays)` as JAX calls a host callback: under `default_device(cpu)`
  while an accelerator is the default, so that what the callback computes stays on the host. A
  callback reaching into the accelerator would wait for the program that waits for it."""
  args = _as_arrays(vals)
  if devices.default_xla_backend is None:
    return callback(*args)
  with config.default_device(devices.local_devices(backend="cpu")[0]):
    return callback(*args)


def _index(x, i, dim):
  from jaxlite._src.lax import slicing
  return slicing.index_in_dim(x, i, axis=dim, keepdims=False)


def _unrolled_batcher(primitive):
  """Calls the callback once per example, in order (JAX's rule for debug callbacks)."""
  def rule(vals, dims, **params):
    size = next(x.shape[d] for x, d in zip(vals, dims) if d is not None)
    for i in range(size):  # debug callbacks have no results: nothing to stack
      primitive.bind(*[x if d is None else _index(x, i, d) for x, d in zip(vals, dims)],
                     **params)
    return [], ()
  return rule


def _register_debug_primitive(p):
  """A callback with no results: effectful; JVP binds it on primals; transpose has nothing."""
  p.multiple_results = True
  p.def_abstract_eval(lambda *avals, **params: [])
  passes.effectful_primitives.add(p)
  runtime.per_device_primitives.add(p)
  batching.primitive_batchers[p] = _unrolled_batcher(p)
  ad.jvp_rules[p] = lambda primals, tangents, **params: (p.bind(*primals, **params), [])
  ad.primitive_transposes[p] = lambda ct, *args, **params: [None] * len(args)


# --- jax.debug.callback ----------------------------------------------------------------------

debug_callback_p = core.Primitive("debug_callback")


def _debug_callback_impl(*args, callback, effect, partitioned):
  try:
    _call_on_host(callback, args)
  except BaseException:
    logger.exception("jax.debug.callback failed")
    raise
  return ()


debug_callback_p.def_impl(_debug_callback_impl)
_register_debug_primitive(debug_callback_p)


def _split_callback_args(args, kwargs):
  """(tree of (args, kwargs), leaves that are arrays, {position: static leaf})."""
  flat, in_tree = tree_util.tree_flatten((args, kwargs))
  static, dyn = {}, []
  for i, a in enumerate(flat):
    if isinstance(a, core.Array) or core.valid_jaxtype(a):
      dyn.append(a)
    else:
      static[i] = a
  return in_tree, dyn, static


def _merge(in_tree, dyn, static):
  it = iter(dyn)
  flat = [static[i] if i in static else next(it) for i in range(len(static) + len(dyn))]
  return tree_util.tree_unflatten(in_tree, flat)


def _one_or_two_call_form(name, run, first, args, kwargs):
  """`name(first, *args, **kwargs)` runs now; `name(ordered=...)(first, *args)`, the two-call
  form, returns `run` with the options bound."""
  if first is not None:
    run(first, *args, **kwargs)
    return None
  if args or kwargs:
    raise TypeError(f"{name} received unexpected arguments in the two-call form: "
                    f"args={args} kwargs={kwargs}")
  return run


def debug_callback(callback=None, *args, ordered: bool = False, partitioned: bool = False,
                   **kwargs):
  """Calls `callback(*args, **kwargs)` when the program runs, with Arrays; returns None."""
  def _debug_callback(callback, *c_args, **c_kwargs):
    if not callable(callback):
      raise TypeError("first argument to jax.debug.callback must be callable, but got an "
                      f"object of type {type(callback)}")
    in_tree, dyn, static = _split_callback_args(c_args, c_kwargs)

    def _flat_callback(*dyn_flat):
      a, kw = _merge(in_tree, dyn_flat, static)
      callback(*a, **kw)
      return ()
    debug_callback_p.bind(*dyn, callback=_flat_callback,
                          effect=effects.ordered_debug_effect if ordered
                          else effects.debug_effect, partitioned=partitioned)

  return _one_or_two_call_form("debug_callback", _debug_callback, callback, args, kwargs)


# --- jax.debug.print -------------------------------------------------------------------------

debug_print_p = core.Primitive("debug_print")


def _format_message(fmt, np_printoptions, has_placeholders, args, kwargs) -> str:
  if has_placeholders:
    with np.printoptions(**dict(np_printoptions)):
      return fmt.format(*args, **kwargs)
  return " ".join((fmt, *(str(a) for a in args)))


def _debug_print_impl(*args, fmt, ordered, partitioned, in_tree, static_args, np_printoptions,
                      has_placeholders, logging_record):
  a, kw = _merge(in_tree, _as_arrays(args), dict(static_args))
  msg = _format_message(fmt, np_printoptions, has_placeholders, a, kw)
  if logging_record is not None:
    record = copy.copy(logging_record)
    record.msg = msg
    logger.handle(record)
  else:
    sys.stdout.write(msg + "\n")
  return ()


debug_print_p.def_impl(_debug_print_impl)
_register_debug_primitive(debug_print_p)


class _FormatChecker(string.Formatter):
  """Checks a format string against its arguments without formatting anything."""

  def format_field(self, value, format_spec):
    return ""

  def check_unused_args(self, used_args, args, kwargs):
    unused = [a for i, a in enumerate(args) if i not in used_args]
    unused_kw = [k for k in kwargs if k not in used_args]
    if unused:
      raise ValueError(f"Unused positional arguments to `jax.debug.print`: {unused}")
    if unused_kw:
      raise ValueError(
          f"Unused keyword arguments to `jax.debug.print`: {unused_kw}. You may be passing an "
          "f-string (i.e, `f\"{x}\"`) into `jax.debug.print` and instead should pass in a "
          "regular string.")


_format_checker = _FormatChecker()


def _logging_record(level):
  from jaxlite._src.base import source_info_util
  frames = source_info_util.current().traceback
  file_name, line_no = (frames[0].file_name, frames[0].start_line) if frames else \
      ("(unknown file)", 0)
  return logger.makeRecord(logger.name, level, file_name, line_no, "", (), None)


def debug_print(fmt: str | None = None, *args, ordered: bool = False, partitioned: bool = False,
                skip_format_check: bool = False, _use_logging: bool = False, **kwargs):
  """Prints `fmt.format(*args, **kwargs)` when the program runs (with values, under jit too)."""
  def _debug_print(fmt: str, *c_args, **c_kwargs):
    if not skip_format_check:
      _format_checker.format(fmt, *c_args, **c_kwargs)
    has_placeholders = False
    if fmt:
      _, field, *_ = next(iter(string.Formatter().parse(fmt)))
      has_placeholders = field is not None
    in_tree, dyn, static = _split_callback_args(c_args, c_kwargs)
    debug_print_p.bind(
        *dyn, fmt=fmt, ordered=ordered, partitioned=partitioned, in_tree=in_tree,
        static_args=tuple(static.items()), np_printoptions=tuple(np.get_printoptions().items()),
        has_placeholders=has_placeholders,
        logging_record=_logging_record(logging.INFO) if _use_logging else None)

  return _one_or_two_call_form("debug_print", _debug_print, fmt, args, kwargs)


def debug_log(fmt: str | None = None, *args, **kwargs):
  """Like debug_print, through the `jax._src.debugging` logger at INFO level."""
  return debug_print(fmt, *args, _use_logging=True, **kwargs)


# --- pure_callback and io_callback ---------------------------------------------------------------


class _FlatCallback:
  """The user's function on flat arguments; equal for the same function and argument tree."""
  __slots__ = ("callback_func", "in_tree")

  def __init__(self, callback_func, in_tree):
    self.callback_func = callback_func
    self.in_tree = in_tree

  def __call__(self, *flat_args):
    a, kw = tree_util.tree_unflatten(self.in_tree, flat_args)
    return tree_util.tree_leaves(self.callback_func(*a, **kw))

  def __eq__(self, other):
    return (type(other) is _FlatCallback and self.callback_func == other.callback_func
            and self.in_tree == other.in_tree)

  def __hash__(self):
    return hash((self.callback_func, self.in_tree))

  def __repr__(self):
    return f"_FlatCallback(callback_func={self.callback_func!r}, in_tree={self.in_tree!r})"


def _run_callback(callback, args, result_avals, name):
  """Calls the callback on Arrays and checks its results against `result_avals`."""
  from jaxlite._src.base import errors
  try:
    outs = _call_on_host(callback, args)
  except BaseException as err:
    callback_logger.exception(f"jax.{name} failed")
    if not isinstance(err, Exception) or isinstance(err, errors.JaxRuntimeError):
      raise
    # What JAX raises, eagerly and under jit: the callback runs inside an XLA program, whose
    # runtime reports the Python error as a JaxRuntimeError holding its traceback's text
    # (equinox's filter_jit finds its error_if message in that text)
    raise errors.JaxRuntimeError(
        "INTERNAL: CpuCallback error calling callback: "
        + "".join(traceback.format_exception(err)).rstrip()) from None
  if len(outs) != len(result_avals):
    raise errors.JaxRuntimeError(
        f"INTERNAL: {name}: callback returned {len(outs)} values, expected {len(result_avals)}")
  results = []
  for i, (o, aval) in enumerate(zip(outs, result_avals)):
    # Canonicalized as JAX does before its checks: float64 is float32 without x64.
    o = np.asarray(o)
    o = o.astype(dtypes.canonicalize_dtype(o.dtype), copy=False)
    if o.shape != aval.shape:
      raise errors.JaxRuntimeError(
          "INTERNAL: CpuCallback error calling callback: RuntimeError: Incorrect output shape "
          f"for return value #{i}: Expected: {aval.shape}, Actual: {o.shape}")
    if o.dtype != aval.dtype:
      raise errors.JaxRuntimeError(
          "INTERNAL: CpuCallback error calling callback: RuntimeError: Incorrect output dtype "
          f"for return value #{i}: Expected: {aval.dtype}, Actual: {o.dtype}")
    results.append(o)
  return results


def _check_shape_dtype(sds):
  dt = np.dtype(sds.dtype)
  if dtypes.canonicalize_dtype(dt) != dt:
    raise ValueError("result_shape_dtypes cannot specify 64-bit types when `jax_enable_x64` is "
                     "disabled")


def _result_avals(result_shape_dtypes):
  tree_util.tree_map(_check_shape_dtype, result_shape_dtypes)
  avals = tree_util.tree_map(lambda x: core.ShapedArray(x.shape, np.dtype(x.dtype)),
                             result_shape_dtypes)
  return tree_util.tree_flatten(avals)


pure_callback_p = core.Primitive("pure_callback")
pure_callback_p.multiple_results = True
pure_callback_p.def_impl(lambda *args, callback, result_avals, sharding, vmap_method:
                         _run_callback(callback, args, result_avals, "pure_callback"))
pure_callback_p.def_abstract_eval(lambda *avals, result_avals, **params: list(result_avals))


def _pure_callback_jvp(primals, tangents, **params):
  raise ValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use "
                   "callbacks while taking gradients.")


def _pure_callback_transpose(ct, *args, **params):
  raise ValueError("Pure callbacks do not support transpose. Please use `jax.custom_vjp` to use "
                   "callbacks while taking gradients.")


ad.jvp_rules[pure_callback_p] = _pure_callback_jvp
ad.primitive_transposes[pure_callback_p] = _pure_callback_transpose


def _sequential(prim, vals, dims, params):
  """lax.map over the batched operands, one call per example (JAX's `sequential`)."""
  from jaxlite._src.lax.control_flow.loops import map as lax_map
  moved = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(vals, dims)]
  batched = [x for x, d in zip(moved, dims) if d is not None]

  def one(xs):
    it = iter(xs)
    return prim.bind(*[next(it) if d is not None else x for x, d in zip(moved, dims)], **params)
  outs = lax_map(one, batched)
  return outs, (0,) * len(outs)


def _pure_callback_batcher(vals, dims, *, vmap_method, result_avals, **params):
  size = next(x.shape[d] for x, d in zip(vals, dims) if d is not None)
  if vmap_method in ("sequential", "sequential_unrolled"):
    return _sequential(pure_callback_p, vals, dims,
                       dict(params, vmap_method=vmap_method, result_avals=result_avals))
  if vmap_method not in ("expand_dims", "broadcast_all", "legacy_vectorized"):
    raise NotImplementedError(
        "vmap is only supported for the pure_callback primitive when vmap_method is one of "
        "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
        f"'legacy_vectorized'. Got vmap_method={vmap_method}.")
  moved = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(vals, dims)]
  if vmap_method != "legacy_vectorized":  # unbatched operands get a leading axis too
    from jaxlite._src.lax import shape as lax_shape
    n = size if vmap_method == "broadcast_all" else 1
    moved = [lax_shape.broadcast(x, (n,)) if d is None else x for x, d in zip(moved, dims)]
  batched_avals = tuple(a.update(shape=(size,) + a.shape) for a in result_avals)
  outs = pure_callback_p.bind(*moved, vmap_method=vmap_method, result_avals=batched_avals,
                              **params)
  return outs, (0,) * len(outs)


batching.primitive_batchers[pure_callback_p] = _pure_callback_batcher
runtime.per_device_primitives.add(pure_callback_p)  # in shard_map: one call per device's block

_VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                 "legacy_vectorized", None)


def pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None,
                  **kwargs):
  """Calls a pure Python function (on Arrays) from traced code; results typed as declared."""
  if vmap_method not in _VMAP_METHODS:
    raise ValueError(f"vmap_method must be on of the allowed methods {list(_VMAP_METHODS)}, "
                     f"but got: {vmap_method}")
  flat_args, in_tree = tree_util.tree_flatten((args, kwargs))
  flat_avals, out_tree = _result_avals(result_shape_dtypes)
  out = pure_callback_p.bind(*flat_args, callback=_FlatCallback(callback, in_tree),
                             result_avals=tuple(flat_avals), sharding=sharding,
                             vmap_method=vmap_method)
  return tree_util.tree_unflatten(out_tree, out)


io_callback_p = core.Primitive("io_callback")
io_callback_p.multiple_results = True
io_callback_p.def_impl(lambda *args, callback, result_avals, sharding, ordered:
                       _run_callback(callback, args, result_avals, "io_callback"))
io_callback_p.def_abstract_eval(lambda *avals, result_avals, **params: list(result_avals))
passes.effectful_primitives.add(io_callback_p)
runtime.per_device_primitives.add(io_callback_p)


def _io_callback_jvp(primals, tangents, **params):
  raise ValueError("IO callbacks do not support JVP.")


def _io_callback_transpose(ct, *args, **params):
  raise ValueError("IO callbacks do not support transpose.")


def _io_callback_batcher(vals, dims, *, ordered, **params):
  if ordered:
    raise ValueError("Cannot `vmap` ordered IO callback.")
  return _sequential(io_callback_p, vals, dims, dict(params, ordered=False))


ad.jvp_rules[io_callback_p] = _io_callback_jvp
ad.primitive_transposes[io_callback_p] = _io_callback_transpose
batching.primitive_batchers[io_callback_p] = _io_callback_batcher


def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered: bool = False,
                **kwargs):
  """Calls an impure Python function from traced code; never removed or deduplicated."""
  flat_args, in_tree = tree_util.tree_flatten((args, kwargs))
  flat_avals, out_tree = _result_avals(result_shape_dtypes)
  out = io_callback_p.bind(*flat_args, callback=_FlatCallback(callback, in_tree),
                           result_avals=tuple(flat_avals), sharding=sharding, ordered=ordered)
  return tree_util.tree_unflatten(out_tree, out)


# --- StableHLO lowering: XLA's CPU host callback (lowering.emit_host_callback) ----------------

emit_host_callback = xla.emit_host_callback


def _returning(name, callback, result_avals):
  return lambda *args: tuple(_run_callback(callback, args, result_avals, name))


def _pure_callback_hlo(ctx, *args, callback, result_avals, sharding, vmap_method):
  return emit_host_callback(ctx, _returning("pure_callback", callback, result_avals), args,
                            result_avals, side_effect=False)


def _io_callback_hlo(ctx, *args, callback, result_avals, sharding, ordered):
  return emit_host_callback(ctx, _returning("io_callback", callback, result_avals), args,
                            result_avals, side_effect=True)


def _debug_hlo(impl):
  def rule(ctx, *args, **params):
    emit_host_callback(ctx, lambda *xs: impl(*xs, **params) and (), args, [], side_effect=True)
    return []
  return rule


xla.register(pure_callback_p, _pure_callback_hlo)
xla.register(io_callback_p, _io_callback_hlo)
xla.register(debug_callback_p, _debug_hlo(_debug_callback_impl))
xla.register(debug_print_p, _debug_hlo(_debug_print_impl))
# Eager, a callback runs on the host where it is called, as JAX's impls do: a one-op program
# would run it later on the device's host thread (asynchronously: a print would come after
# the code that follows it).
xla.eager_by_impl.update((pure_callback_p, io_callback_p, debug_callback_p, debug_print_p))
