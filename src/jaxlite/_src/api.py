"""User-facing transformations and utilities: make_jaxpr, eval_shape, device_put, typeof.

jit lives in `jit.py`; autodiff and vmap register theirs from their own modules.
"""
from __future__ import annotations

import contextlib
import functools

import numpy as np

from jaxlite._src import array as array_lib
from jaxlite._src import core
from jaxlite._src import devices
from jaxlite._src import dtypes
from jaxlite._src import tree_util
from jaxlite._src.config import config
from jaxlite._src.interpreters import partial_eval as pe
from jaxlite._src.jit import jit  # noqa: F401
from jaxlite._src.jit_function import (  # noqa: F401
    as_traceable_arg, fun_name, fun_src_info, _check_output, _check_leaves)
from jaxlite._src.jit_function import ShapeDtypeStruct  # noqa: F401  (public as jax.ShapeDtypeStruct)


def _abstractify(x):
  if isinstance(x, ShapeDtypeStruct):
    return x.aval
  return core.get_aval(as_traceable_arg(x))


def make_jaxpr(fun, static_argnums=(), axis_env=None, return_shape=False,
               abstracted_axes=None):
  """A function returning the ClosedJaxpr of `fun` traced on its arguments' abstract values."""
  static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

  @functools.wraps(fun)
  def make_jaxpr_f(*args, **kwargs):
    dyn_args = [a for i, a in enumerate(args) if i not in static_argnums]
    flat, in_tree = tree_util.tree_flatten((tuple(dyn_args), kwargs))
    _check_leaves(flat, fun, in_tree)
    out_tree_box = []

    def flat_fun(*flat_in):
      d_args, kw = tree_util.tree_unflatten(in_tree, flat_in)
      it = iter(d_args)
      full = [args[i] if i in static_argnums else next(it) for i in range(len(args))]
      out = fun(*full, **kw)
      out_flat, out_tree = tree_util.tree_flatten(out)
      out_tree_box.append(out_tree)
      return [_check_output(o, fun) for o in out_flat]

    in_avals = [_abstractify(x) for x in flat]
    dbg = pe.TracingDebugInfo("make_jaxpr", fun_src_info(fun), None)
    closed = pe.trace_to_jaxpr(flat_fun, in_avals, dbg)
    closed, lifted = pe.convert_constvars_to_invars(closed)
    if return_shape:
      shapes = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                for a in closed.out_avals]
      return closed, tree_util.tree_unflatten(out_tree_box[0], shapes)
    return closed

  make_jaxpr_f.__name__ = f"make_jaxpr({fun_name(fun)})"
  return make_jaxpr_f


def eval_shape(fun, *args, **kwargs):
  """Output ShapeDtypeStructs of `fun` without computing anything."""
  flat, in_tree = tree_util.tree_flatten((args, kwargs))
  out_tree_box = []

  def flat_fun(*flat_in):
    a, kw = tree_util.tree_unflatten(in_tree, flat_in)
    out_flat, out_tree = tree_util.tree_flatten(fun(*a, **kw))
    out_tree_box.append(out_tree)
    return [_check_output(o, fun) for o in out_flat]

  in_avals = [_abstractify(x) for x in flat]
  closed = pe.trace_to_jaxpr(flat_fun, in_avals,
                             pe.TracingDebugInfo("eval_shape", fun_src_info(fun), None))
  shapes = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in closed.out_avals]
  return tree_util.tree_unflatten(out_tree_box[0], shapes)


def typeof(x) -> core.ShapedArray:
  return core.get_aval(as_traceable_arg(x))


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
  """Places every leaf of `x` on `device` (a Device or a Sharding); committed if given."""
  def put(leaf):
    if isinstance(leaf, core.Tracer):
      return leaf
    if type(leaf) is core.key_array_type:  # typed PRNG keys: placed like arrays
      dev = device._device if isinstance(device, devices.SingleDeviceSharding) else device
      return leaf if device is None else type(leaf)(leaf._host_value(), leaf.dtype,
                                                    _checked_device(dev))
    from jaxlite._src.numpy.creation import asarray
    arr = asarray(leaf)
    if device is None:
      return arr
    dev = device
    if hasattr(device, "_device_put"):
      return device._device_put(arr)
    if isinstance(device, devices.SingleDeviceSharding):
      dev = device._device
    return array_lib.from_host(arr._host_value(), arr.weak_type, _checked_device(dev))
  return tree_util.tree_map(put, x)


def _checked_device(dev):
  if not isinstance(dev, devices.CpuDevice) or dev not in devices.devices():
    raise ValueError("`jax.device_put` only accepts `None`, `jax.sharding.Sharding`, "
                     "`jax.Device`, `Format`, `jax.memory.Space` or a pytree of these values. "
                     f"Received invalid value: {dev}")
  return dev


def device_get(x):
  def get(leaf):
    if type(leaf) is core.array_type:
      return np.asarray(leaf._host_value())
    return leaf
  return tree_util.tree_map(get, x)


def block_until_ready(x):
  return x


def disable_jit(disable: bool = True):
  """`with jax.disable_jit():` runs jitted functions eagerly, in the calling thread only."""
  from jaxlite._src.config import disable_jit_ctx
  return disable_jit_ctx(disable)


from jaxlite._src.core_adapters import ensure_compile_time_eval  # noqa: E402,F401


def named_call(fun, *, name=None):
  return fun


@contextlib.contextmanager
def named_scope(name):
  """Names the ops staged inside (JAX only feeds profiler/HLO metadata from it, which jaxlite does
  not emit). A context manager and, like JAX's, a decorator (equinox uses it as one)."""
  if not isinstance(name, str):
    raise TypeError("named_scope name argument must be a string.")
  yield
