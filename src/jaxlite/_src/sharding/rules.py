"""Sharding rules: each primitive's output sharding computed from its operands' in explicit mode.

A table keyed by Primitive (families registered by helpers, the rest in rules_lax.py); `apply`
runs the rule in abstract evaluation and `eager_placements` for eager results on a mesh.

A rule sees `specs` (per operand, a tuple with one entry per dimension: None, an Explicit axis
name or a tuple of names: the operand's type-level sharding; Auto axes are not part of types),
the operand avals, the output avals of abstract evaluation, the mesh and the primitive's params.
It returns one spec per output (a list, or a bare spec for single-result primitives), or KEEP to
leave abstract evaluation's outputs as they are (higher-order primitives: their jaxprs already
carry the shardings). Bad combinations raise JAX's ShardingTypeError with JAX's message.
"""
from __future__ import annotations

from jaxlite._src.base import core
from jaxlite._src.base import primitive_kinds as kinds
from jaxlite._src.base.core import ShardingTypeError

_RULES: dict = {}
KEEP = object()  # a rule's answer: abstract evaluation's output shardings stand
_lax_rules_loaded = False


def register(primitive, rule):
  _RULES[primitive] = rule
  return rule


def rule_of(primitive):
  """The sharding rule registered for `primitive` (None if it has none)."""
  _load_lax_rules()
  return _RULES.get(primitive)


# Loads the per-primitive registrations (rules_lax.py, which imports every lax module), set by
# lax.namespace at its import: run on the first sharded value, so that `import jaxlite` and
# unsharded programs never pay for them, and this table never imports the lax layer.
_lax_rules_loader = None
# The partitioner's layout of a jit eqn's results (sharding/partition.py), set by jit_function.
_jit_eqn_placements = None


def register_jit_eqn_placements(fn) -> None:
  global _jit_eqn_placements
  _jit_eqn_placements = fn


def register_lax_rules_loader(load) -> None:
  global _lax_rules_loader
  _lax_rules_loader = load


def _load_lax_rules():
  global _lax_rules_loaded
  if not _lax_rules_loaded and _lax_rules_loader is not None:
    _lax_rules_loaded = True
    _lax_rules_loader()


# --- the mesh in a result's type ---------------------------------------------------------------
# JAX types every value over a mesh, empty for one made outside `jax.set_mesh`. A result takes its
# operands' mesh; where none has one, some rules name the context mesh (the n-ary elementwise
# ops' broadcasting rule, broadcast_in_dim, concatenate, select_n, gather and scatter, iota...)
# and the others (unary ops, reductions, reshapes, slices, dot_general, clamp...) leave it empty.
# Under set_mesh that decides an eager result's placement: over the mesh as its type says,
# P(None, ...), or, with no mesh in its type, replicated as JAX reads XLA's layout back, P().
_NAMES_CONTEXT_MESH: set = set()
# Higher-order primitives: primitive -> flow(params, on_mesh) -> one bool per result, through
# their jaxprs (rules_lax.py: jit, cond, while, scan).
_MESH_FLOWS: dict = {}
_outputs_cache: dict = {}  # id(jaxpr) -> (jaxpr, {operands' meshes: results' meshes})


def names_context_mesh(*primitives) -> None:
  """Registers primitives whose results' types name the context mesh when no operand has one."""
  _NAMES_CONTEXT_MESH.update(primitives)


def register_mesh_flow(primitive, flow) -> None:
  _MESH_FLOWS[primitive] = flow


def results_name_mesh(primitive, params, n_out: int, on_mesh) -> list:
  """Whether each of the `n_out` results of `primitive` has a mesh in its type, given whether
  each operand has (`on_mesh`); a higher-order primitive's follow its jaxprs."""
  _load_lax_rules()
  flow = _MESH_FLOWS.get(primitive)
  if flow is not None:  # first: cond's predicate, say, lends its mesh to no result
    return flow(params, on_mesh)
  if any(on_mesh):
    return [True] * n_out
  subs = core.jaxprs_in_params(params)
  if not subs:
    return [primitive in _NAMES_CONTEXT_MESH] * n_out
  # other higher-order primitives (custom rules, checkpoint...): their bodies' types, joined
  return [any(_names_mesh_somewhere(j) for j in subs)] * n_out


def jaxpr_outputs_name_mesh(closed, on_mesh) -> list:
  """`results_name_mesh` through a (Closed)Jaxpr: the mesh flows from operands to results, eqn
  by eqn; a closed-over constant has one when it lives on a mesh."""
  if type(closed) is not core.ClosedJaxpr:
    closed = core.ClosedJaxpr(closed, [None] * len(closed.constvars))
  entry = _outputs_cache.get(id(closed))
  if entry is None or entry[0] is not closed:
    if len(_outputs_cache) >= 256:
      _outputs_cache.clear()
    entry = _outputs_cache[id(closed)] = (closed, {})
  key = tuple(on_mesh)
  hit = entry[1].get(key)
  if hit is None:
    hit = entry[1][key] = _outputs_name_mesh(closed.jaxpr, closed.consts, key)
  return hit


def _outputs_name_mesh(jaxpr, consts, on_mesh) -> list:
  named = {v: hasattr(getattr(c, "_device", None), "mesh")
           for v, c in zip(jaxpr.constvars, consts)}
  named.update(zip(jaxpr.invars, on_mesh))
  for eqn in jaxpr.eqns:
    ins = [type(v) is core.Var and named.get(v, False) for v in eqn.invars]
    named.update(zip(eqn.outvars, results_name_mesh(eqn.primitive, eqn.params,
                                                    len(eqn.outvars), ins)))
  return [type(v) is core.Var and named.get(v, False) for v in jaxpr.outvars]


def _names_mesh_somewhere(jaxpr) -> bool:
  return any(e.primitive in _NAMES_CONTEXT_MESH or any(
      _names_mesh_somewhere(j) for j in core.jaxprs_in_params(e.params)) for e in jaxpr.eqns)


# --- specs -------------------------------------------------------------------------------------

def entry_names(e) -> tuple:
  if e is None:
    return ()
  return e if isinstance(e, tuple) else (e,)


def entry(names):
  names = tuple(names)
  return None if not names else names[0] if len(names) == 1 else names


def spec_of(aval) -> tuple:
  """`aval`'s type-level spec: one entry per dimension, Explicit axes only."""
  nd = len(aval.shape)
  s = getattr(aval, "sharding", None)
  if s is None:
    return (None,) * nd
  types = s.mesh._name_to_type
  parts = tuple(s.spec)[:nd]
  out = [entry(n for n in entry_names(_canon(e)) if types[n].name == "Explicit")
         for e in parts]
  return tuple(out) + (None,) * (nd - len(out))


def _canon(e):
  if isinstance(e, (tuple, list)):
    return entry(e)
  return None if e is None or not isinstance(e, str) else e


def axes_size(mesh, e) -> int:
  size = 1
  for n in entry_names(e):
    size *= mesh.shape[n]
  return size


def spec_str(spec) -> str:
  return str(tuple(spec))


def sharding_str(mesh, spec) -> str:
  """A NamedSharding as JAX prints it inside a type (its mesh abstract, spec of full rank)."""
  from jaxlite._src.sharding.partition_spec import PartitionSpec
  m = mesh.abstract_mesh if mesh is not None else None
  return f"NamedSharding(mesh={m!r}, spec={PartitionSpec(*spec)!r})"


def type_str(aval, spec=None, short_dtypes=False) -> str:
  """`float32[8@x,4]` (`f32[8@x,4]` with `short_dtypes`): JAX's `str_short` of an aval with
  `spec`."""
  from jaxlite._src.base import dtypes
  spec = spec_of(aval) if spec is None else spec
  dims = ",".join(f"{d}@{_axes_str(e)}" if e is not None else str(d)
                  for d, e in zip(aval.shape, spec))
  name = dtypes.short_dtype_name if short_dtypes else dtypes.dtype_name
  return f"{name(aval.dtype)}[{dims}]"


def _axes_str(e):
  return e if isinstance(e, str) else "(" + ",".join(e) + ")"


# --- applying rules ----------------------------------------------------------------------------

def _mesh_of(avals):
  mesh = None
  for a in avals:
    s = getattr(a, "sharding", None)
    if s is None:
      continue
    m = s.mesh
    if mesh is None:
      mesh = m
    elif m != mesh and m.abstract_mesh != mesh.abstract_mesh:
      raise ShardingTypeError(f"Mesh for all inputs should be equal. Got one mesh: {mesh} and "
                              f"another mesh: {m}")
  return mesh


def _is_named(s):
  return s is not None and type(s).__name__ in ("NamedSharding", "PartitionSpec")


def resolve_out_sharding(out_sharding, mesh=None, fun_name="out_sharding"):
  """An `out_sharding=` argument (a NamedSharding, a PartitionSpec or None) as a NamedSharding:
  a PartitionSpec names axes of `mesh`, else of the mesh set by `set_mesh`/`use_abstract_mesh`."""
  if out_sharding is None:
    return None
  from jaxlite._src.sharding.mesh import get_abstract_mesh, get_mesh
  from jaxlite._src.sharding.named_sharding import NamedSharding
  from jaxlite._src.sharding.partition_spec import PartitionSpec
  if isinstance(out_sharding, NamedSharding):
    return out_sharding
  if isinstance(out_sharding, PartitionSpec):
    if mesh is None:
      concrete = get_mesh()
      mesh = concrete if not concrete.empty else get_abstract_mesh()
    if mesh.empty:
      raise ValueError(f"{fun_name}: a PartitionSpec out_sharding ({out_sharding!r}) needs a "
                       "mesh: use `jax.set_mesh(mesh)` or pass a NamedSharding")
    return NamedSharding(mesh, out_sharding)
  raise TypeError(f"{fun_name}: out_sharding must be a NamedSharding or a PartitionSpec, got "
                  f"{type(out_sharding).__name__}")


def _with_sharding(aval, mesh, spec):
  if type(aval) is not core.ShapedArray:
    return aval
  sharding = None
  if spec is not None and any(e is not None for e in spec):
    from jaxlite._src.sharding.named_sharding import NamedSharding
    from jaxlite._src.sharding.partition_spec import PartitionSpec
    sharding = NamedSharding(mesh, PartitionSpec(*spec))
  if sharding is None and aval.sharding is None:
    return aval
  return core.ShapedArray(aval.shape, aval.dtype, aval.weak_type, sharding, aval.vma)


def apply(primitive, avals, params, out_avals):
  """`out_avals` (abstract evaluation's, one aval or a list) with the shardings `primitive`'s
  rule gives them (the hook `core.with_out_shardings` calls when an operand is sharded in its
  type or the params carry an out_sharding)."""
  mesh = _mesh_of(avals)
  given = params.get("out_sharding")
  if given is None:
    given = params.get("sharding")
  # Only named shardings and specs are output shardings (a param may hold other placements).
  given = resolve_out_sharding(given, mesh) if _is_named(given) else None
  multiple = primitive.multiple_results
  outs = list(out_avals) if multiple else [out_avals]
  if given is not None and not multiple:
    res = [spec_of(core.ShapedArray(outs[0].shape, outs[0].dtype, False, given))]
    mesh = given.mesh
  else:
    if mesh is None:
      return out_avals
    rule = rule_of(primitive)
    if rule is None:
      # No rule here: the primitive's own abstract evaluation types its results (shard_map,
      # sharding constraints, collectives...); every lax primitive has a rule (a test checks).
      return out_avals
    res = rule([spec_of(a) for a in avals], avals, outs, mesh, **params)
    if res is KEEP:
      return out_avals
    if not multiple:
      res = [res]
  try:
    new = [_with_sharding(a, mesh, s) for a, s in zip(outs, res)]
  except Exception as e:
    from jaxlite._src.sharding.named_sharding import DuplicateSpecError
    if multiple or not isinstance(e, DuplicateSpecError):
      raise
    # JAX's wording for a rule whose result names one mesh axis twice (x:P('X',None) +
    # y:P(None,'X')): the operands' types and the illegal result's.
    ins = ", ".join(a.str_short(short_dtypes=True) for a in avals)
    out = type_str(outs[0], res[0], short_dtypes=True)
    raise ShardingTypeError(f"{primitive.name} operation with inputs: {ins} produces an "
                            f"illegally sharded result: {out}") from e
  return new if multiple else new[0]


def eager_placements(primitive, args, params, outs, device):
  """Placements of eager results `outs` of `primitive` on `args` that live on the multi-device
  sharding `device`: the rule's NamedSharding where the result is sharded in its type, else
  replicated over the same devices."""
  if primitive is kinds.roles.jit:
    got = _jit_placements(args, params, outs, device)
    if got is not None:
      return got
  avals = [core.get_aval(a) for a in args]
  out_avals = [core.ShapedArray(o.shape, o.dtype, o.weak_type) if hasattr(o, "shape") else None
               for o in outs]
  res = apply(primitive, avals, params, out_avals if primitive.multiple_results else
              out_avals[0])
  res = res if primitive.multiple_results else [res]
  replicated = device._replicated()
  return [concrete_sharding(a.sharding, device) if a is not None and getattr(
      a, "sharding", None) is not None else replicated for a in res]


def auto_placements(primitive, args, params, outs, device):
  """Placements of eager results computed from arrays sharded over Auto axes (not in their
  types): the rule run as if the axes were Explicit proposes each result's layout (JAX's
  propagation follows the operands too); where it raises, the result is replicated."""
  from jaxlite._src.sharding.mesh import AxisType, Mesh
  from jaxlite._src.sharding.named_sharding import NamedSharding
  from jaxlite._src.sharding.partition_spec import PartitionSpec
  if primitive is kinds.roles.jit:
    got = _jit_placements(args, params, outs, device)
    if got is not None:
      return got
  mesh = device.mesh
  explicit = Mesh(mesh.devices, mesh.axis_names, (AxisType.Explicit,) * len(mesh.axis_names))
  multiple = primitive.multiple_results
  out_avals = [core.ShapedArray(o.shape, o.dtype, o.weak_type) for o in outs]

  def proposal(keep):
    # The rule's answer when only the arguments `keep` allows show their layout.
    avals = []
    for i, a in enumerate(args):
      aval = core.get_aval(a)
      d = getattr(a, "_device", None)
      if keep(i) and isinstance(d, NamedSharding) and d.mesh == mesh and \
          type(aval) is core.ShapedArray:
        aval = core.ShapedArray(aval.shape, aval.dtype, aval.weak_type,
                                NamedSharding(explicit, d.spec), aval.vma)
      avals.append(aval)
    return apply(primitive, avals, params, out_avals if multiple else out_avals[0])

  # Where the operands' layouts conflict, follow the first sharded operand; where that still
  # has no answer, replicate ("follow the operands, replicate when in doubt").
  first = next((i for i, a in enumerate(args)
                if not getattr(getattr(a, "_device", None), "is_fully_replicated", True)), 0)
  try:
    res = proposal(lambda i: True)
  except (ShardingTypeError, ValueError, TypeError):
    try:
      res = proposal(lambda i: i == first)
    except (ShardingTypeError, ValueError, TypeError):
      res = [None] * len(outs) if multiple else None
  res = res if multiple else [res]
  out = []
  for a in res:
    s = getattr(a, "sharding", None)
    parts = list(s.spec) if s is not None else []
    while parts and parts[-1] is None:
      parts.pop()  # outside types JAX keeps specs as short as they go
    out.append(NamedSharding(mesh, PartitionSpec(*parts), memory_kind=device._memory_kind))
  return out


def _jit_placements(args, params, outs, device):
  """A `jit` eqn run eagerly (the staged jit of grad(jit(f)), vmap(jit(f))...): its results
  are laid out as propagation through its jaxpr gives (sharding/partition.py), as JAX's
  partitioner lays out a transformed jit's results; None to fall back to the rules."""
  got = _jit_eqn_placements(params["jaxpr"], args, device)
  return got if got is not None and len(got) == len(outs) else None


def concrete_sharding(sharding, like=None):
  """`sharding` over a concrete Mesh (a type's sharding may name an AbstractMesh: it is matched
  with the mesh of `like` or the one `set_mesh` set); None if no concrete mesh matches."""
  from jaxlite._src.sharding.mesh import Mesh, get_mesh
  from jaxlite._src.sharding.named_sharding import NamedSharding
  if isinstance(sharding.mesh, Mesh):
    return sharding
  for m in (getattr(like, "mesh", None), get_mesh()):
    if isinstance(m, Mesh) and not m.empty and m.abstract_mesh.axis_names == \
        sharding.mesh.axis_names and m.axis_sizes == sharding.mesh.axis_sizes:
      return NamedSharding(m, sharding.spec, memory_kind=sharding._memory_kind)
  return None


# --- family helpers ----------------------------------------------------------------------------

def first_spec(specs, avals, outs, mesh, **params):
  return specs[0]


def broadcasting(name):
  """Elementwise n-ary ops: each dimension takes the operands' common entry; an unsharded
  operand (or a size-1 dimension) defers to a sharded one; two different axes raise."""
  def rule(specs, avals, outs, mesh, **params):
    ranked = [(s, a.shape) for s, a in zip(specs, avals) if a.shape]
    if not ranked:
      return ()
    out = []
    for i in range(len(ranked[0][0])):
      ss = [s[i] for s, _ in ranked]
      if all(s == ss[0] for s in ss):
        out.append(ss[0])
        continue
      nontrivial = [s for s, (_, shp) in zip(ss, ranked) if not (shp[i] == 1 and s is None)]
      if not nontrivial:
        out.append(None)
      elif all(s == nontrivial[0] for s in nontrivial):
        out.append(nontrivial[0])
      else:
        got = None
        for s in ss:
          if got is None:
            got = s
          elif s is not None and s != got:
            raise ShardingTypeError(
              f"{name} got incompatible shardings for broadcasting: "
              f"{', '.join(spec_str(s) for s, _ in ranked)}.")
        out.append(got)
    return tuple(out)
  return rule


def elementwise(primitive, name=None):
  """Registers the n-ary elementwise rule (JAX's broadcasting_sharding_rule) for `primitive`."""
  return register(primitive, broadcasting(name or primitive.name))


def same_as_first(primitive):
  """Unary ops whose result is laid out as the operand (convert, rev, copy...)."""
  return register(primitive, first_spec)


def _drop_axes(specs, avals, outs, mesh, *, axes, **params):
  axes = set(axes)
  return tuple(e for i, e in enumerate(specs[0]) if i not in axes)


def reduction(primitive):
  """Reductions over `axes`: the reduced dimensions drop their axes, the others keep theirs."""
  return register(primitive, _drop_axes)


def cumulative(primitive):
  """Scans along `axis`: the operand must be unsharded over it (else JAX's error)."""
  def rule(specs, avals, outs, mesh, *, axis, **params):
    if specs[0][axis] is not None:
      raise ShardingTypeError(
        "Input should be unsharded over the axis being reduced. Got input type="
        f"{type_str(avals[0], specs[0])} and axis={axis}")
    return specs[0]
  return register(primitive, rule)


def keep(primitive):
  """Higher-order primitives (jit, cond, while, scan, custom rules...): their jaxprs were traced
  on the operands' types, so abstract evaluation's outputs already carry the shardings."""
  return register(primitive, lambda *a, **k: KEEP)


def replicated(primitive):
  """Results that are replicated whatever the operands' layout (e.g. factorizations' small
  outputs, callbacks with declared result types)."""
  def rule(specs, avals, outs, mesh, **params):
    return [None] * len(outs) if primitive.multiple_results else None
  return register(primitive, rule)


core.register(apply_sharding_rules=apply)
