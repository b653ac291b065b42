"""`reshard`, `auto_axes` and `explicit_axes`: changing an array's sharding in its type.

Eagerly a reshard is a placement (`device_put`); under a trace it is the `reshard` primitive,
whose impl on one host is the identity on the global buffer (the layout is metadata)."""
from __future__ import annotations

import math

import functools

from jaxlite._src.base import core
from jaxlite._src.base import primitive_kinds as pk
from jaxlite._src.base import devices
from jaxlite._src.compiler.xla import lowering as hlo
from jaxlite._src.compiler.xla import spmd as xla_spmd
from jaxlite._src.interpreters import ad, batching
from jaxlite._src.sharding import rules
from jaxlite._src.sharding.mesh import (AxisType, Mesh, _stack, get_abstract_mesh, get_mesh,
                                        use_abstract_mesh)
from jaxlite._src.sharding.named_sharding import NamedSharding, check_type_divisible
from jaxlite._src.sharding.partition_spec import PartitionSpec

reshard_p = core.Primitive("reshard")


def _type_sharding(sharding):
  return sharding if devices.sharding_in_type(sharding) else None


def _reshard_abstract(x, *, dst_sharding):
  if len(dst_sharding.spec) > len(x.shape):
    raise ValueError(f"reshard: the sharding {dst_sharding.spec!r} has more entries than the "
                     f"rank of the operand {x.str_short()}")
  return core.ShapedArray(x.shape, x.dtype, x.weak_type, _type_sharding(dst_sharding), x.vma)


def _reshard_impl(x, *, dst_sharding):
  # One host: every device sees the global buffer, so moving data between layouts is a
  # change of the Array's placement, which the result's type carries (`_from_numpy_aval`).
  return x


reshard_p.def_impl(_reshard_impl)
reshard_p.def_abstract_eval(_reshard_abstract)
hlo.register(reshard_p, xla_spmd.reshard_rule)  # sdy.sharding_constraint
xla_spmd.SPMD_PRIMITIVES.add(reshard_p)
rules.register(reshard_p, lambda *a, **k: rules.KEEP)
pk.set_role(reshard_p, "reshard")  # the partitioner passes its blocks through
# Linear: the cotangent goes back to the operand's layout.
ad.deflinear(reshard_p, lambda ct, x, *, dst_sharding: [
  reshard_p.bind(ct, dst_sharding=x.aval.sharding or dst_sharding.with_spec(PartitionSpec()))])


def _reshard_batcher(vals, dims, *, dst_sharding):
  (x,), (d,) = vals, dims
  spec = list(dst_sharding.spec) + [None] * (x.ndim - 1 - len(dst_sharding.spec))
  if d is not None:
    spec.insert(d, None)
  return reshard_p.bind(x, dst_sharding=dst_sharding.with_spec(PartitionSpec(*spec))), d


batching.primitive_batchers[reshard_p] = _reshard_batcher


def current_mesh():
  """The mesh `set_mesh` set, with the axis types the innermost `use_abstract_mesh` (or
  auto_axes/explicit_axes) gives its axes; the abstract mesh when no concrete one is set."""
  concrete, abstract = get_mesh(), get_abstract_mesh()
  if concrete.empty:
    return abstract
  if (abstract.axis_names == concrete.axis_names and abstract.axis_sizes == concrete.axis_sizes
      and abstract.axis_types != concrete.axis_types):
    return Mesh(concrete.devices, concrete.axis_names, abstract.axis_types)
  if (not abstract.empty and abstract.axis_names != concrete.axis_names
      and math.prod(abstract.axis_sizes) == concrete.devices.size):
    # another mesh shape over the same devices (JAX: the abstract mesh made concrete with the
    # set mesh's devices in their order)
    return Mesh(concrete.devices.reshape(abstract.axis_sizes), abstract.axis_names,
                abstract.axis_types)
  return concrete


def _as_sharding(s, x, fun_name, check=True):
  if isinstance(s, PartitionSpec):
    mesh = current_mesh()
    if mesh.empty:
      mesh = getattr(getattr(core.get_aval(x), "sharding", None), "mesh", None) or \
          getattr(getattr(x, "_device", None), "mesh", None)
    if mesh is None or mesh.empty:
      raise ValueError("Using PartitionSpec when you are not under a mesh context is not "
                       "allowed. Please pass a NamedSharding instance or enter into a mesh "
                       f"context via `jax.set_mesh`. Got {s!r}")
    if check:
      _check_explicit(s, mesh, fun_name)
    return NamedSharding(mesh, s)
  if isinstance(s, NamedSharding):
    return s
  raise TypeError(f"{fun_name}: expected a NamedSharding or a PartitionSpec, got "
                  f"{type(s).__name__}")


def _check_explicit(spec, mesh, fun_name):
  """JAX's error for a reshard target naming mesh axes that are not Explicit."""
  types = mesh._name_to_type
  for e in spec:
    for n in rules.entry_names(e if isinstance(e, (str, tuple)) else None):
      if n in types and types[n] != AxisType.Explicit:
        raise ValueError(
          f"PartitionSpec passed to {fun_name} cannot contain axis names that are of type "
          f"Auto or Manual. Got PartitionSpec: {spec!r} with axis name: {n} of type: "
          f"{types[n]!s}")


def _reshard_leaf(x, s, fun_name="reshard", check=True):
  s = _as_sharding(s, x, fun_name, check)
  shape = core.get_aval(x).shape
  ndim = len(shape)
  if len(s.spec) > ndim:
    if any(e is not None for e in tuple(s.spec)[ndim:]):
      raise ValueError(f"Sharding {s!r} is only valid for values of rank at least "
                       f"{len(s.spec)}, but was applied to a value of rank {ndim}")
    s = s.with_spec(PartitionSpec(*tuple(s.spec)[:ndim]))  # JAX drops the extra Nones
  check_type_divisible(s, shape)
  # As JAX: a sharding in the type names every dimension; one outside it drops trailing Nones.
  parts = list(s.spec)
  if devices.sharding_in_type(s):
    parts += [None] * (ndim - len(parts))
  else:
    while parts and parts[-1] is None:
      parts.pop()
  s = s.with_spec(PartitionSpec(*parts))
  if isinstance(x, core.Tracer):
    return reshard_p.bind(x, dst_sharding=s)
  from jaxlite._src.transforms import api
  concrete = rules.concrete_sharding(s, getattr(x, "_device", None))
  if concrete is None:
    return reshard_p.bind(x, dst_sharding=s)
  return api.device_put(x, concrete)


def reshard(xs, out_shardings, *, _fun_name="reshard"):
  """`jax.sharding.reshard`: `xs` (a pytree) laid out as `out_shardings` (a NamedSharding or a
  PartitionSpec of the current mesh, or a pytree prefix of them)."""
  from jaxlite._src.base import tree_util
  for s in tree_util.tree_leaves(out_shardings, is_leaf=_is_sharding_leaf):
    if isinstance(s, NamedSharding):  # (JAX words it as for a PartitionSpec)
      _check_explicit(s.spec, s.mesh, _fun_name)
  return _over_prefix(xs, out_shardings, lambda x, s: _reshard_leaf(x, s, _fun_name))


def _is_sharding_leaf(s) -> bool:
  return s is None or isinstance(s, (PartitionSpec, NamedSharding))


def _over_prefix(xs, shardings, fn):
  """`fn(x, s)` over every leaf `x` of `xs`, `s` its sharding in `shardings`, a pytree prefix
  of `xs` whose leaves are shardings, specs or None."""
  from jaxlite._src.base import tree_util
  if _is_sharding_leaf(shardings):
    return tree_util.tree_map(lambda x: fn(x, shardings), xs)
  flat, tree = tree_util.tree_flatten(shardings, is_leaf=_is_sharding_leaf)
  return tree.unflatten([tree_util.tree_map(lambda x, s=s: fn(x, s), sub)
                         for s, sub in zip(flat, tree.flatten_up_to(xs))])


def _axes_tuple(axes, mesh, fun_name):
  if mesh.empty:
    raise ValueError(f"{fun_name} requires a mesh: use `jax.set_mesh(mesh)`")
  axes = mesh.axis_names if axes is None else (axes,) if isinstance(axes, str) else tuple(axes)
  for a in axes:
    if a not in mesh.axis_names:
      raise ValueError(f"{fun_name}: axis {a!r} is not in the mesh's axes {mesh.axis_names}")
  return axes


class _axis_types:
  """Makes the current mesh's `axes` of type `kind` (abstract and concrete) inside."""

  def __init__(self, axes, kind):
    self.axes, self.kind = axes, kind

  def __enter__(self):
    abstract = get_abstract_mesh()
    self.ctx = use_abstract_mesh(abstract.update_axis_types({a: self.kind for a in self.axes}))
    self.ctx.__enter__()
    self.prev = list(_stack.concrete)
    if _stack.concrete:
      m = _stack.concrete[-1]
      _stack.concrete[-1] = Mesh(m.devices, m.axis_names,
                                 tuple(self.kind if n in self.axes else t
                                       for n, t in zip(m.axis_names, m.axis_types)))
    return self

  def __exit__(self, *exc):
    _stack.concrete[:] = self.prev
    return self.ctx.__exit__(*exc)


def _retyped(x, mesh):
  """`x` with its sharding's mesh given `mesh`'s axis types (same devices, same spec)."""
  s = getattr(core.get_aval(x), "sharding", None) or getattr(x, "_device", None)
  if not isinstance(s, NamedSharding) or s.mesh.axis_names != mesh.axis_names:
    return x
  return _reshard_leaf(x, NamedSharding(mesh, s.spec))


def auto_axes(f=None, /, *, axes=None, out_sharding=None):
  """`jax.sharding.auto_axes`: runs `f` with mesh `axes` (all by default) of type Auto (their
  shardings leave the types), then reshards its outputs to `out_sharding` (required)."""
  if f is None:
    return functools.partial(auto_axes, axes=axes, out_sharding=out_sharding)

  @functools.wraps(f)
  def wrapped(*args, **kwargs):
    if out_sharding is None and "out_sharding" not in kwargs:
      raise TypeError("Missing required keyword argument: 'out_sharding'")
    out_s = kwargs.pop("out_sharding", out_sharding)
    return _switched(f, args, kwargs, axes, AxisType.Auto, "auto_axes", out_s, None)
  return wrapped


def explicit_axes(f=None, /, *, axes=None, in_sharding=None):
  """`jax.sharding.explicit_axes`: runs `f` with mesh `axes` of type Explicit, its arguments
  resharded to `in_sharding`; the outputs leave with the axes' former (Auto) types."""
  if f is None:
    return functools.partial(explicit_axes, axes=axes, in_sharding=in_sharding)

  @functools.wraps(f)
  def wrapped(*args, **kwargs):
    if in_sharding is None and "in_sharding" not in kwargs:
      raise TypeError("Missing required keyword argument: 'in_sharding'")
    in_s = kwargs.pop("in_sharding", in_sharding)
    return _switched(f, args, kwargs, axes, AxisType.Explicit, "explicit_axes", None, in_s)
  return wrapped


def _switched(f, args, kwargs, axes, kind, fun_name, out_s, in_s):
  from jaxlite._src.base import tree_util
  outer = current_mesh()
  axes = _axes_tuple(axes, outer, fun_name)
  with _axis_types(axes, kind):
    inner = current_mesh()
    if in_s is not None:
      args = reshard(args, in_s)
    else:
      args = tree_util.tree_map(lambda x: _retyped(x, inner), args)
    out = f(*args, **kwargs)
  if out_s is not None:
    return _mesh_cast(out, out_s, fun_name)
  return tree_util.tree_map(lambda x: _retyped(x, outer), out)


def _mesh_cast(xs, shardings, fun_name):
  """`xs` laid out as `shardings` (a pytree prefix; None leaves as is), as JAX's mesh_cast: like
  reshard, but a spec may name Auto axes (auto_axes' out_sharding over an Auto mesh): the
  layout changes, the type holds the Explicit axes only."""
  return _over_prefix(xs, shardings, lambda x, s: x if s is None else
                      _reshard_leaf(x, s, fun_name, check=False))


def takes_out_sharding(fn):
  """`fn` with JAX's keyword-only `out_sharding=` (a NamedSharding or a PartitionSpec of the
  current mesh): the result is computed, then resharded to it (jax.random's samplers)."""
  @functools.wraps(fn)
  def wrapper(*args, out_sharding=None, **kwargs):
    out = fn(*args, **kwargs)
    return out if out_sharding is None else reshard(out, out_sharding, _fun_name=fn.__name__)
  return wrapper
