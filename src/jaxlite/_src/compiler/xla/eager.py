"""Eager primitives on XLA devices: each (primitive, params, avals, device) compiles once to a
small executable (a one-equation jaxpr) that runs on the operands' device buffers.

`route` is what `core.eager_routes[<an XLA backend's buffer type>]` and
`core.default_eager_route` hold (the eager routing contract): operands on an XLA device, or XLA
as the default backend, never take a silent round trip through host memory.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import core, dtypes
from jaxlite._src.base import devices as devices_lib
from jaxlite._src.base import errors
from jaxlite._src.base.config import config
from jaxlite._src.compiler.xla import backend as xb
from jaxlite._src.compiler.xla import lowering
from jaxlite._src.compiler.xla import platforms

_cache: dict = {}
CACHE_LIMIT = 4096
stats = {"compiles": 0}


def _freeze(v):
  """A hashable form of a param value (lists, dicts and arrays are not), or raise TypeError."""
  if isinstance(v, (list, tuple)):
    return tuple(_freeze(e) for e in v)
  if isinstance(v, dict):
    return tuple(sorted((k, _freeze(e)) for k, e in v.items()))
  if isinstance(v, np.ndarray):
    return (v.dtype.str, v.shape, v.tobytes())
  hash(v)
  return v


def _sharded_placement(primitive, args):
  """The placement of the committed arguments when one is a multi-device sharding (JAX's
  incompatible-devices error when they disagree), else None."""
  for a in args:
    d = getattr(a, "_device", None)
    if d is not None and len(getattr(d, "_device_assignment", ())) > 1:
      # an operand committed to one XLA device takes part as its SingleDeviceSharding
      return core.primitive_device(primitive, [_Committed(b) if getattr(
          getattr(b, "_value", None), "committed", False) else b for b in args])
  return None


class _Committed:
  """An Array on one XLA device put there by device_put, as the device check reads it."""
  __slots__ = ("_device", "aval")

  def __init__(self, a):
    self._device, self.aval = a._value.device.sharding_object(), a.aval


# NumPy scalars whose type is their aval's whatever jax_enable_x64 says (not float64 & co)
_NUMPY_SCALARS = frozenset(np.dtype(t).type for t in (
    np.bool_, np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32, np.float16,
    np.float32, np.complex64))


def route(primitive, args, params):
  """Runs `primitive` on `args` (Arrays on an XLA device, host values) on their device.
  NotImplemented (NumPy runs it) when no operand is on an XLA device and one is committed to
  NumPy's CPU device, or `jax.default_device` names that device."""
  if primitive not in lowering.rules or primitive in lowering.eager_by_impl:
    return _by_impl(primitive, args, params)
  device = None
  committed = placed = on_host_device = False
  vals, sig = [], []
  at = core.array_type
  for a in args:
    t = type(a)
    if t is at:  # the common operand, inline: an Array (its buffer on a device, or a host value)
      v = a._value
      if a._device is not None:
        placed = True
      if isinstance(v, xb.DeviceBuffer):
        committed = committed or v.committed
        if device is None:
          device = v.device
        vals.append(v)
        sig.append((v.shape, v.dtype, a.weak_type))
        continue
    elif t in _NUMPY_SCALARS:  # `x + 1`'s partner, made a NumPy scalar by jnp's promotion
      vals.append(a)
      sig.append(((), a.dtype, False))
      continue
    v = getattr(a, "_value", None)
    if isinstance(v, xb.DeviceBuffer):  # typed PRNG key arrays
      committed = committed or v.committed
      placed = placed or getattr(a, "_device", None) is not None
      if device is None:
        device = v.device
      vals.append(v)
      sig.append((v.shape, v.dtype, a.weak_type))
    elif isinstance(a, core.Tracer):
      raise errors.unexpected_tracer_error(a)
    else:
      d = getattr(a, "_device", None)
      placed = placed or d is not None
      if type(d) is devices_lib.CpuDevice:
        on_host_device = True
      aval = core.get_aval(a)
      if aval.dtype == dtypes.float0:  # symbolic zeros' host arrays: no device holds float0
        return NotImplemented
      if lowering.is_ref_aval(aval):  # a Ref: the executable reads and writes back its buffer
        vals.append(a)
        sig.append(aval)
        continue
      vals.append(a._host_value() if hasattr(a, "_host_value") else np.asarray(a, aval.dtype))
      sig.append((aval.shape, aval.dtype, aval.weak_type))
  placement = _sharded_placement(primitive, args) if placed else None
  if placement is not None:  # runs on the global values (the sharded Array representation)
    device = platforms.default_device()
  elif placed:
    # Committed operands: the device they share (JAX's incompatible-devices error when they
    # disagree); uncommitted ones follow it, and so do the results.
    on = core.primitive_device(primitive, args)
    if isinstance(on, xb.XlaDevice):
      device, committed = on, True
  if device is None:
    if on_host_device or type(config.jax_default_device) is devices_lib.CpuDevice:
      return NotImplemented
    device = platforms.default_device()
  try:
    # the trace context too: lowering bakes in flags (threefry's mode, x64, matmul precision)
    key = (primitive, tuple(params.items()), tuple(sig), device.pjrt, config.trace_context())
    hit = _cache.get(key)
  except TypeError:  # a list or array among the params: their frozen form keys it
    try:
      key = (primitive, _freeze(params), tuple(sig), device.pjrt, config.trace_context())
      hit = _cache.get(key)
    except TypeError:  # unhashable params: compiled every time
      key, hit = None, None
  if hit is None:
    hit = _compile(primitive, [core.get_aval(a) for a in args], params, device)
    if key is not None:
      if len(_cache) >= CACHE_LIMIT:
        _cache.pop(next(iter(_cache)))
      _cache[key] = hit
  exe, out_avals = hit
  outs = exe(*vals)
  make = core.make_array
  if committed:  # results of committed operands are committed (JAX's rule)
    for o in outs:
      o.committed = True
    if placement is None:
      out = [make(o, av) for o, av in zip(outs, out_avals)]
      for o in out:
        o._device = device
      return out if primitive.multiple_results else out[0]
  if placement is not None:  # sharded operands: global host results placed as JAX places them
    typed = core.with_out_shardings(primitive, [core.get_aval(a) for a in args], params,
                                    out_avals if primitive.multiple_results else out_avals[0])
    out_avals = list(typed) if primitive.multiple_results else [typed]  # (JAX's type errors)
    outs = [make(o.host() if isinstance(o, xb.DeviceBuffer) else o, av)
            for o, av in zip(outs, out_avals)]
    return core.place_outputs(outs if primitive.multiple_results else outs[0], placement,
                              primitive, args, params)
  if primitive.multiple_results:
    return [make(o, av) for o, av in zip(outs, out_avals)]
  return make(outs[0], out_avals[0])


def _by_impl(primitive, args, params):
  """A primitive with no StableHLO rule evaluated as JAX evaluates any primitive eagerly: by its
  impl (a user's Python impl; an internal one that raises its own error, such as linearize's
  custom_lin), with JAX's error when it has none."""
  if primitive.impl is None:
    raise NotImplementedError(f"Evaluation rule for '{primitive.name}' not implemented")
  if primitive.abstract_eval is None:
    return primitive.impl(*args, **params)
  out_avals = primitive.abstract_eval(*[core.get_aval(a) for a in args], **params)
  host = [a._host_value() if hasattr(a, "_host_value") else a for a in args]
  out = primitive.impl(*host, **params)
  if primitive.multiple_results:
    return [core.make_array(np.asarray(o, av.dtype), av) for o, av in zip(out, out_avals)]
  return core.make_array(np.asarray(out, out_avals.dtype), out_avals)


def _compile(primitive, avals, params, device):
  out = primitive.abstract_eval(*avals, **params)  # JAX's TypeErrors for bad operands
  out_avals = list(out) if primitive.multiple_results else [out]
  invars = [core.Var(a) for a in avals]
  outvars = [core.Var(a) for a in out_avals]
  eqn = core.JaxprEqn(invars, outvars, primitive, params)
  closed = core.ClosedJaxpr(core.Jaxpr([], invars, outvars, [eqn]), [])
  backend = device.backend
  exe = backend._compile(closed, device, None, name=f"jit_{primitive.name}")
  stats["compiles"] += 1
  return exe, out_avals

