"""shard_map's argument checks with JAX 0.10.2's errors: axis names that are not manual or
repeated, specs longer than the rank, indivisible dimensions, arguments committed to devices
outside the mesh, and out_specs claiming replication (check_vma)."""
from __future__ import annotations

import inspect
import math

from jaxlite._src.sharding.partition_spec import PartitionSpec


def _names(entry) -> tuple:
  if entry is None:
    return ()
  return tuple(entry) if isinstance(entry, tuple) else (entry,)


def _fun_name(f) -> str:
  return getattr(f, "__name__", str(f))


def _param_extra(f, i) -> str:
  """', where args[i] is bound to f's parameter 'p',' as JAX words it (positional args)."""
  try:
    params = [p for p in inspect.signature(f).parameters.values()
              if p.kind not in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD)]
  except (TypeError, ValueError):
    return ""
  name = _fun_name(f)
  if i >= len(params) or params[i].kind == inspect.Parameter.VAR_POSITIONAL:
    if not params:
      return ""
    return (f", where args[{i}] is the index {i - len(params) + 1} component of {name}'s "
            f"varargs parameter '{params[-1].name}',")
  return f", where args[{i}] is bound to {name}'s parameter '{params[i].name}',"


def _check_names(mesh, manual, specs, what):
  for spec in specs:
    for entry in spec:
      for n in _names(entry):
        if n not in manual:
          raise ValueError(
              f"shard_map {what}_specs argument must refer to an axis marked as manual "
              f"({frozenset(manual)}), but:\n\n  {what}_specs refers to {n!r}\n\n"
              f"Check the {what}_specs values passed to shard_map.")


def _check_unique(specs):
  from jaxlite._src.sharding.named_sharding import check_unique_axes
  for spec in specs:
    check_unique_axes(spec)  # JAX's DuplicateSpecError, worded as for a NamedSharding


def _padded(spec, ndim) -> PartitionSpec:
  entries = [e[0] if isinstance(e, tuple) and len(e) == 1 else e for e in tuple(spec)]
  return PartitionSpec(*entries, *([None] * (ndim - len(entries))))


def _check_explicit_args(mesh, manual, specs, avals):
  """On Explicit mesh axes an argument's type carries its sharding, and shard_map (JAX 0.10.2)
  takes it as given: an in_specs entry that differs raises instead of resharding."""
  types = dict(zip(mesh.axis_names, getattr(mesh, "axis_types", ())))
  if not any(getattr(types.get(n), "name", None) == "Explicit" for n in manual):
    return
  for spec, aval in zip(specs, avals):
    held = getattr(getattr(aval, "sharding", None), "spec", None)
    have = _padded(held if held is not None else PartitionSpec(), aval.ndim)
    want = _padded(spec, aval.ndim)
    if tuple(have) != tuple(want):
      raise ValueError(
          f"in_specs passed to shard_map: {want} does not match the specs of the input: "
          f"{have} for arg: {aval.str_short(short_dtypes=False)}. `in_specs` is an optional "
          "argument so you can omit specifying it and shard_map will infer the in_specs from "
          "the arguments. If you want to reshard your inputs, you can use `jax.reshard` on the "
          "arguments and then pass those args to shard_map.")


def check_in_specs(f, mesh, manual, in_tree, specs, avals):
  _check_names(mesh, manual, specs, "in")
  _check_unique(specs)
  # Leaf i's top-level argument, for the "bound to parameter" phrase.
  tops = []
  for k, kid in enumerate(_children(in_tree)):
    tops.extend([k] * kid.num_leaves)
  name = _fun_name(f)
  for i, (spec, aval) in enumerate(zip(specs, avals)):
    ty = aval.str_short(short_dtypes=False)
    if len(spec) > len(aval.shape):
      msg = (f"shard_map applied to the function '{name}' was given an in_specs entry which "
             "is too long to be compatible with the corresponding input value from the "
             f"function:\n\nin_specs is {spec} which has length {len(spec)}, but the passed "
             f"args[{tops[i]}]{_param_extra(f, tops[i])} has shape {ty}, which "
             f"has rank {aval.ndim} (and {aval.ndim} < {len(spec)})\n\nEntries in in_specs "
             "must be of length no greater than the number of axes in the corresponding "
             f"input value.\n\nEither revise the spec to be shorter, or modify '{name}' so "
             "that its inputs have sufficient rank.")
      if not aval.ndim:
        msg += ("\n\nFor scalar values (rank 0), consider using an in_specs entry of `P()`, "
                "where `P = jax.sharding.PartitionSpec`.")
      raise ValueError(msg)
  for i, (spec, aval) in enumerate(zip(specs, avals)):
    ty = aval.str_short(short_dtypes=False)
    for d, entry in enumerate(spec):
      ns = _names(entry)
      sz = math.prod(mesh.shape[n] for n in ns)
      if ns and aval.shape[d] % sz:
        axis = f"axes {ns}" if len(ns) > 1 else f"axis '{ns[0]}'"
        total = "total " if len(ns) > 1 else ""
        raise ValueError(
            f"shard_map applied to the function '{name}' was given argument arrays with axis "
            "sizes that are not evenly divisible by the corresponding mesh axis sizes:\n\n"
            f"The mesh given has shape {tuple(mesh.shape.values())} with corresponding axis "
            f"names {mesh.axis_names}.\n\nthe passed args[{tops[i]}] of shape "
            f"{ty}{_param_extra(f, tops[i])} corresponds to in_specs of value "
            f"{spec}, which maps array axis {d} (of size {aval.shape[d]}) to mesh {axis} (of "
            f"{total}size {sz}), but {sz} does not evenly divide {aval.shape[d]}\n\nArray "
            "arguments' axis sizes must be evenly divisible by the mesh axis or axes "
            "indicated by the corresponding elements of the argument's in_specs entry. "
            "Consider checking that in_specs are correct, and if so consider changing the "
            f"mesh axis sizes or else padding the input and adapting '{name}' appropriately.")
  _check_explicit_args(mesh, manual, specs, avals)


def _children(tree):
  from jaxlite._src.base import tree_util
  return tree_util.treedef_children(tree)


def check_out_specs(f, mesh, manual, specs, avals):
  _check_names(mesh, manual, specs, "out")
  _check_unique(specs)
  name = _fun_name(f)
  for spec, aval in zip(specs, avals):
    # JAX names the output's type without its varying axes here
    ty = (aval.update(vma=frozenset()) if getattr(aval, "vma", None) else aval).str_short(
        short_dtypes=False)
    if len(spec) > len(aval.shape):
      raise ValueError(
          f"shard_map applied to the function '{name}' was given an out_specs entry which is "
          "too long to be compatible with the corresponding output value from the "
          f"function:\n\nout_specs is {spec} which has length {len(spec)}, but {name}(*args) "
          f"has shape {ty}, which has rank {aval.ndim} (and {aval.ndim} < "
          f"{len(spec)})\n\nEntries in out_specs must be of length no greater than the "
          "number of axes in the corresponding output value.\n\nEither revise the spec to be "
          f"shorter, or modify '{name}' so that its outputs have sufficient rank.")


def check_vma_out(f, mesh, manual, specs, vmas, fun_name=None):
  """out_specs may leave out only axes the output is known not to vary over (the error names
  `fun_name`, else `f`)."""
  msgs = []
  for spec, vma in zip(specs, vmas):
    mentioned = {n for e in spec for n in _names(e)}
    if vma <= mentioned:
      continue
    unmentioned = [n for n in mesh.axis_names if n not in mentioned]
    order = lambda names: ",".join(n for n in mesh.axis_names if n in names)  # noqa: E731
    if len(unmentioned) > 1:
      msgs.append(
          f"out_specs is {spec} which implies that the corresponding output value is only "
          f"varying across mesh axes {{{order(mentioned)}}} and not "
          f"{{{order([n for n in unmentioned if n in vma])}}}, but it was inferred to be "
          f"possibly varying over {{{order(vma)}}}")
    else:
      msgs.append(
          f"out_specs is {spec} which implies that the corresponding output value is "
          f"replicated across mesh axis '{unmentioned[0]}', but could not infer replication "
          "over any axes")
  if not msgs:
    return
  body = msgs[0] if len(msgs) == 1 else "\n\n".join("* " + m for m in msgs)
  raise ValueError(
      f"shard_map applied to the function '{fun_name or _fun_name(f)}' was given out_specs "
      "which require replication which can't be statically inferred given the mesh:\n\nThe "
      f"mesh given has shape {tuple(mesh.shape.values())} with corresponding axis names "
      f"{mesh.axis_names}."
      f"\n\n{body}\n\nCheck if these output values are meant to be replicated over those mesh "
      "axes. If not, consider revising the corresponding out_specs entries. If so, consider "
      "disabling the check by passing the check_vma=False argument to `jax.shard_map`.")


def infer_in_specs(flat_args) -> list:
  """in_specs from the arguments' own NamedShardings (P() for the others); a traced argument
  (shard_map under jit) gives the sharding of its type, as JAX infers it from the aval."""
  out = []
  for a in flat_args:
    spec = getattr(getattr(a, "_device", None), "spec", None)
    if spec is None and hasattr(a, "_trace"):
      spec = getattr(getattr(a.aval, "sharding", None), "spec", None)
    out.append(spec if isinstance(spec, PartitionSpec) else PartitionSpec())
  return out


def check_arg_devices(f, mesh, flat_args):
  """JAX's error for an argument committed to devices other than the shard_map's mesh (JAX
  reports it as jit's, since shard_map runs inside one)."""
  want = None
  for i, a in enumerate(flat_args):
    placed = getattr(a, "_device", None)
    assignment = getattr(placed, "_device_assignment", None)
    if assignment is None or len(assignment) < 2:
      continue  # uncommitted or on one device: placed by the in_spec
    if want is None:
      want = set(mesh.devices.flat)
    if set(assignment) != want:
      ids = sorted(d.id for d in assignment)
      mesh_ids = [d.id for d in mesh.devices.flat]
      raise ValueError(
          f"Received incompatible devices for jitted computation. Got argument args[{i}] of "
          f"{_fun_name(f)} with shape {a.aval.str_short(short_dtypes=False)} and with device "
          f"ids {ids} on platform CPU and shard_map inside jit with device ids {mesh_ids} on "
          "platform CPU")
