"""User-facing transformations and utilities: make_jaxpr, eval_shape, device_put, typeof.

jit lives in `jit.py`; autodiff and vmap register theirs from their own modules.
"""
from __future__ import annotations

import contextlib
import functools

import numpy as np

from jaxlite._src.compat import traceback_util
from jaxlite._src.sharding.partition_spec import PartitionSpec  # (pure data: no mesh machinery)
from jaxlite._src.base import array as array_lib
from jaxlite._src.base import core
from jaxlite._src.base import devices
from jaxlite._src.base import dtypes
from jaxlite._src.base import tree_util
from jaxlite._src.base.config import config
from jaxlite._src.interpreters import partial_eval as pe
from jaxlite._src.transforms.jit import jit  # noqa: F401
from jaxlite._src.transforms.call_primitives import (
    _check_output, as_traceable_arg, fun_name, fun_src_info)
from jaxlite._src.transforms.jit_arguments import check_leaves
from jaxlite._src.transforms.stage_info import (  # noqa: F401  (public as jax.ShapeDtypeStruct)
    ShapeDtypeStruct, abstract_type_sharding)


def _abstractify(x):
  """Like JAX's shaped_abstractify: also takes an abstract value itself (flax passes a
  ShapedArray to eval_shape) and duck-typed arrays (anything with a dtype and a shape)."""
  if isinstance(x, ShapeDtypeStruct):
    return x.aval
  if isinstance(x, core.ShapedArray):  # its dtype may be a scalar type such as jnp.float32
    return x.update(dtype=dtypes.canonicalize_dtype(x.dtype))
  try:
    return core.get_aval(as_traceable_arg(x))
  except TypeError:
    if not hasattr(x, "dtype"):
      raise
    return core.ShapedArray(np.shape(x), dtypes.canonicalize_dtype(x.dtype),
                            bool(getattr(x, "weak_type", False)))


def make_jaxpr(fun, static_argnums=(), axis_env=None, return_shape=False,
               abstracted_axes=None):
  """A function returning the ClosedJaxpr of `fun` traced on its arguments' abstract values."""
  static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

  @functools.wraps(fun)
  @traceback_util.api_boundary
  def make_jaxpr_f(*args, **kwargs):
    dyn_args = [a for i, a in enumerate(args) if i not in static_argnums]
    flat, in_tree = tree_util.tree_flatten((tuple(dyn_args), kwargs))
    check_leaves(flat, fun, in_tree)
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
    # Tracers of an enclosing trace that `fun` closes over stay consts (constvars), as in JAX:
    # callers evaluate the jaxpr with `closed.consts` and their own arguments (equinox's
    # filter_closure_convert inside diffrax's loops).
    closed = pe.trace_to_jaxpr(flat_fun, in_avals, dbg)
    if return_shape:
      shapes = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                for a in closed.out_avals]
      return closed, tree_util.tree_unflatten(out_tree_box[0], shapes)
    return closed

  make_jaxpr_f.__name__ = f"make_jaxpr({fun_name(fun)})"
  return make_jaxpr_f


@traceback_util.api_boundary
def eval_shape(fun, *args, **kwargs):
  """Output ShapeDtypeStructs of `fun` without computing anything."""
  flat, in_tree = tree_util.tree_flatten((args, kwargs))
  if core.hitype_avals and any(type(x) in core.hitype_avals for x in flat):
    # mutable hi arguments (flax.nnx's hijax Variables): traced as their lo values and rebuilt
    # inside, as jit does; what `fun` does to them stays in the trace (nothing runs)
    from jaxlite._src.compat import hijax
    (args, kwargs), _ = hijax.lower_hi_args((args, kwargs))
    flat, in_tree = tree_util.tree_flatten((args, kwargs))
    user_fun = fun

    def fun(*a, **kw):
      (a, kw), _ = hijax.raise_hi_args((a, kw))
      return user_fun(*a, **kw)
    functools.update_wrapper(fun, user_fun)
  out_tree_box = []
  passed = {}  # output position -> a ShapeDtypeStruct the function returned (JAX passes it on)

  def flat_fun(*flat_in):
    a, kw = tree_util.tree_unflatten(in_tree, flat_in)
    out_flat, out_tree = tree_util.tree_flatten(fun(*a, **kw))
    out_tree_box.append(out_tree)
    passed.update((i, o) for i, o in enumerate(out_flat) if type(o) is ShapeDtypeStruct)
    return [_check_output(o, fun) for i, o in enumerate(out_flat) if i not in passed]

  in_avals = [_abstractify(x) for x in flat]
  closed = pe.trace_to_jaxpr(flat_fun, in_avals,
                             pe.TracingDebugInfo("eval_shape", fun_src_info(fun), None))
  shapes = iter(ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type,
                                 sharding=abstract_type_sharding(a)) for a in closed.out_avals)
  out_tree = out_tree_box[0]
  return tree_util.tree_unflatten(
      out_tree, [passed[i] if i in passed else next(shapes) for i in range(out_tree.num_leaves)])


def typeof(x) -> core.ShapedArray:
  """The type of `x`. An unsharded type shows JAX's sharding for it (every dim unsplit over
  an empty or the value's AbstractMesh; it compares equal to the aval's None)."""
  hi_rule = core.hitype_avals.get(type(x)) if core.hitype_avals else None
  if hi_rule is not None:  # a registered hi type (jax.experimental.hijax): its own aval
    return hi_rule(x)
  aval = core.get_aval(as_traceable_arg(x))
  if type(aval) is core.ShapedArray and aval.sharding is None:
    from jaxlite._src.sharding.named_sharding import type_sharding
    aval = core.ShapedArray(aval.shape, aval.dtype, aval.weak_type,
                            type_sharding(aval, getattr(x, "_device", None)), aval.vma)
  elif type(aval) is core.ShapedArray and hasattr(getattr(aval.sharding, "mesh", None),
                                                  "devices"):
    # A type names its mesh abstractly (JAX: AbstractMesh(..., device_kind=cpu)); the
    # concrete mesh stays with the value's placement (`x.sharding`).
    s = aval.sharding
    aval = core.ShapedArray(aval.shape, aval.dtype, aval.weak_type,
                            type(s)(s.mesh.abstract_mesh, s.spec), aval.vma)
  return aval


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
  """Places every leaf of `x` on `device`: a Device, a Sharding (a multi-device sharding splits
  the leaf over its devices), or a pytree of these that is a prefix of `x`; committed if given.
  A PartitionSpec (alone or in the pytree) means a NamedSharding over the mesh of
  `jax.set_mesh`, as in JAX."""
  device = _pspec_to_sharding(device)
  if device is not None and not _is_placement(device):
    flat_dev, dev_tree = tree_util.tree_flatten(
        device, is_leaf=lambda d: _is_placement_or_none(d) or _is_pspec(d))
    if tree_util.treedef_is_leaf(dev_tree):  # not a placement, nor a pytree of them
      return tree_util.tree_map(lambda leaf: _checked_device(device), x)
    try:
      subtrees = dev_tree.flatten_up_to(x)
    except (ValueError, TypeError) as e:
      raise ValueError(f"device_put: the device argument must be a Device, a Sharding or a "
                       f"pytree of them that is a prefix of x; got {device!r}: {e}") from None
    return dev_tree.unflatten([device_put(sub, d) for d, sub in zip(flat_dev, subtrees)])

  def put(leaf):
    if isinstance(leaf, core.Tracer):
      return leaf
    if type(leaf) is core.key_array_type:  # typed PRNG keys: placed like arrays
      dev = device._device if isinstance(device, devices.SingleDeviceSharding) else device
      return leaf if device is None else type(leaf)(leaf._host_value(), leaf.dtype,
                                                    _checked_placement(dev, leaf.shape))
    arr = core.asarray(leaf)
    if device is None:
      if devices.context_meshes and arr is not leaf and not isinstance(leaf, core.Array) \
          and type(arr) is array_lib.ArrayImpl:
        arr._device = None  # as JAX: a value put on no device stays uncommitted, mesh or not
      return arr
    dev = device
    if hasattr(device, "_device_put"):
      return device._device_put(arr)
    if getattr(getattr(device, "spec", None), "unreduced", None):
      # partial values per device along the unreduced axes (their sum is `arr`)
      from jaxlite._src.sharding.arrays import unreduced_shards
      out = array_lib.from_host(arr._host_value(), arr.weak_type,
                                _checked_placement(device, arr.shape))
      out._local_shards = tuple(unreduced_shards(arr._host_value(), arr._device, device))
      return out
    if isinstance(device, devices.SingleDeviceSharding):
      dev = device._device
      if hasattr(dev, "_device_put"):  # one XLA device
        return dev._device_put(arr)
    value = arr._host_value()
    if arr is not leaf and value is not leaf and type(value) is np.ndarray and \
        value.base is None and not np.shares_memory(value, np.asarray(leaf)):
      value.flags.writeable = False  # a fresh copy, owned by the Array (its shards may be kept
      #                                 on the devices: compiler/xla/spmd.py)
    return array_lib.from_host(value, arr.weak_type, _checked_placement(dev, arr.shape))
  return tree_util.tree_map(put, x)


def _is_pspec(d) -> bool:
  return isinstance(d, PartitionSpec)


def _pspec_to_sharding(d):
  """A bare PartitionSpec placed over the concrete mesh of `jax.set_mesh` (JAX's ValueError
  without one); anything else unchanged."""
  if not _is_pspec(d):
    return d
  from jaxlite._src.sharding.mesh import get_mesh
  from jaxlite._src.sharding.named_sharding import NamedSharding
  mesh = get_mesh()
  if mesh.empty:
    raise ValueError("Please set a mesh via `jax.set_mesh` if a PartitionSpec is passed to "
                     "device_put")
  return NamedSharding(mesh, d)


def _is_placement(d) -> bool:
  return isinstance(d, (devices.CpuDevice, devices.Sharding)) or hasattr(d, "_device_put")


def _is_placement_or_none(d) -> bool:
  return d is None or _is_placement(d)


def _checked_placement(dev, shape):
  """`dev` validated as the placement of an array of `shape`: a device of this process, or a
  multi-device sharding over them that evenly divides `shape` (JAX's ValueError otherwise)."""
  if isinstance(dev, devices.Sharding):
    assignment = dev._device_assignment
    known = devices.devices()
    if assignment and type(assignment[0]) is devices.CpuDevice:
      known = devices.cpu_devices()  # NumPy's CPU devices, also beside an accelerator
    for d in assignment:
      if d not in known:
        raise ValueError(f"device_put: device {d} of sharding {dev!r} is not one of this "
                         f"process's devices {known}")
    if getattr(dev, "_factors", None) is not None:
      if len(dev.spec) > len(shape):
        raise ValueError(f"One of device_put args is incompatible with its sharding annotation "
                         f"{dev!r}: Sharding {dev!r} is only valid for values of rank at least "
                         f"{len(dev.spec)}, but was applied to a value of rank {len(shape)}.")
      if devices.sharding_in_type(dev):  # the type's ValueError, as JAX checks it first
        from jaxlite._src.sharding.named_sharding import check_type_divisible
        check_type_divisible(dev, shape)
      dev.shard_shape(tuple(shape))  # JAX's IndivisibleError
    return assignment[0] if len(assignment) == 1 and not hasattr(dev, "mesh") else dev
  return _checked_device(dev)


def _checked_device(dev):
  if not isinstance(dev, devices.Device) or (
      dev not in devices.cpu_devices() and dev not in devices.devices()):
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
  """Waits for every Array leaf of `x` (computation is synchronous here) and returns `x`; a
  deleted or donated leaf raises JAX's error, as its `block_until_ready` does."""
  for leaf in tree_util.tree_leaves(x):
    if isinstance(leaf, core.Array) and getattr(leaf, "is_deleted", None) and leaf.is_deleted():
      leaf.block_until_ready()
  return x


def disable_jit(disable: bool = True):
  """`with jax.disable_jit():` runs jitted functions eagerly, in the calling thread only."""
  from jaxlite._src.base.config import disable_jit_ctx
  return disable_jit_ctx(disable)


from jaxlite._src.compat.core_adapters import ensure_compile_time_eval  # noqa: E402,F401


def named_call(fun, *, name=None):
  """`fun` run inside `named_scope(name)` (default: its `__name__`), as JAX's."""
  if name is None:
    name = fun.__name__

  @functools.wraps(fun)
  def named(*args, **kwargs):
    with named_scope(name):
      return fun(*args, **kwargs)
  return named


@contextlib.contextmanager
def named_scope(name):
  """Adds `name` to the name stack of the eqns staged inside (`eqn.source_info.name_stack`;
  JAX also feeds XLA's op metadata from it). A context manager and, like JAX's, a decorator
  (equinox uses it as one)."""
  if not isinstance(name, str):
    raise TypeError("named_scope name argument must be a string.")
  from jaxlite._src.base import source_info_util
  with source_info_util.extend_name_stack(name):
    yield


core.register(device_put=device_put)


# JAX defines its transformations in `jax._src.api`, and JAX's own tutorials call them from
# there (`api.jit`, `api.grad`, `api.vmap`...): they are jaxlite's, read on first use (their
# modules import this one).
# name -> the module defining it (as the public package's lazy attributes: by name, at first use).
_TRANSFORMS = {
    "jit": "jaxlite._src.transforms.jit",
    "vmap": "jaxlite._src.transforms.vmap_api",
    "pmap": "jaxlite._src.parallel.pmap",
    **dict.fromkeys(("grad", "value_and_grad", "jacfwd", "jacrev", "hessian", "jvp", "linearize",
                     "vjp"), "jaxlite._src.transforms.ad_api"),
    **dict.fromkeys(("checkpoint", "remat"), "jaxlite._src.transforms.ad_checkpoint"),
}


def __getattr__(name):
  if name in _TRANSFORMS:
    import importlib
    return getattr(importlib.import_module(_TRANSFORMS[name]), name)
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
