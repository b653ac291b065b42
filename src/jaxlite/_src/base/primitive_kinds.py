"""What each primitive is, keyed by the primitive object: its kind, and the facts that compiler
passes, the tiers and sharding propagation act on.

A primitive's module (or the family helper in `lax/families.py` that makes it) registers these
next to the primitive; the passes look them up here instead of testing `primitive.name`. This
module sits below every user of it and imports nothing of jaxlite: a new primitive defined
anywhere, with its kind and facts registered, is fused, hoisted and propagated without touching
the passes.

Kinds (one per primitive):
  elementwise     computed element by element over operands of the output's shape (or rank 0)
  reduction       a reduction over `axes`
  view            a shape op that keeps the leading axis and may be a view (broadcast, reshape,
                  squeeze)
  shape           other shape and layout ops (transpose, slice, concatenate, pad...)
  gather_scatter  indexed reads and writes
  product         matrix products and convolutions (BLAS keeps them)
  control_flow    loops and branches over sub-jaxprs
  call            calls of a sub-jaxpr (jit, custom rules, checkpoint)
  collective      cross-device communication
  effectful       ordered or unordered side effects (callbacks, printing, state)
  random          random bit generation
  sharding        sharding annotations (constraints, inspection)
  other           anything else

Facts (each a table keyed by the primitive):
  fusible         elementwise primitives tier 1 may fuse into a kernel (checked against tier 0
                  by tests/test_tier1.py, or by the test of the module that adds one)
  hoistable       primitives whose batched form computes exactly the per-step rows (scan_hoist)
  monoid          reductions whose kernel takes only `axes` (tile by tile the same result)
  collective_of   reduction -> the collective that completes it over a split axis ("psum"...)
  call_jaxpr      call primitive -> the param holding its ClosedJaxpr
  never_fused     primitives never in a tier 1 kernel (products: BLAS keeps them)
  row_sources     primitives that may start a kernel from nothing but a key (random bits)
  propagation     primitive -> the name of sharding propagation's rule for it (a rule of
                  sharding/propagation.py: "transpose", "broadcast_in_dim", "per_key"...);
                  elementwise primitives and reductions with a collective need none
  shape_param     primitive -> the param naming its result's shape (a partitioned program
                  runs it on blocks: the shape becomes the block's)
  identities      primitives that compute their operand unchanged when run (stop_gradient):
                  the compiler drops them
  whole_dims      primitive -> fn(params) -> the dims it works along (sharding propagation
                  keeps them whole on each device: sorts, scans, other reductions)
  operation       primitive -> the operation it computes, by lax's name for it ("tanh", "add",
                  "reduce_sum"...): code-text backends (compiler/native) key their tables by it.
                  Registered by whoever makes the primitive (the family helpers record the op
                  they were asked for; a role names its operation), so a primitive that merely
                  shares a name with a lax op is never printed as that op

Roles: a few primitives the passes rewrite by what they are (a broadcast is made lazy, a mul
then add becomes an fma...). Their module registers each under `roles`, and a pass compares
`eqn.primitive is roles.broadcast_in_dim`: an object test, never a name test. A role no module
registered is a placeholder that matches nothing.
"""
from __future__ import annotations

ELEMENTWISE = "elementwise"
REDUCTION = "reduction"
VIEW = "view"
SHAPE = "shape"
GATHER_SCATTER = "gather_scatter"
PRODUCT = "product"
CONTROL_FLOW = "control_flow"
CALL = "call"
COLLECTIVE = "collective"
EFFECTFUL = "effectful"
RANDOM = "random"
SHARDING = "sharding"
OTHER = "other"
KINDS = frozenset((ELEMENTWISE, REDUCTION, VIEW, SHAPE, GATHER_SCATTER, PRODUCT, CONTROL_FLOW,
                   CALL, COLLECTIVE, EFFECTFUL, RANDOM, SHARDING, OTHER))

kind_of: dict = {}          # primitive -> kind
fusible: set = set()
hoistable: set = set()
monoid: set = set()
collective_of: dict = {}
call_jaxpr: dict = {}
never_fused: set = set()
row_sources: set = set()
views: set = set()          # the primitives of kind VIEW
propagation: dict = {}
whole_dims: dict = {}
identities: set = set()
shape_param: dict = {}
operation: dict = {}        # primitive -> the operation it computes (module doc)


class _Unregistered:
  """A role no module registered: matches no primitive."""
  __slots__ = ("role",)

  def __init__(self, role):
    self.role = role

  def __repr__(self):
    return f"<unregistered primitive role {self.role!r}>"


class Roles:
  """The primitives the passes rewrite by what they are, as attributes (see the module doc)."""
  NAMES = ("broadcast_in_dim", "squeeze", "reshape", "convert_element_type", "select_n", "add",
           "mul", "logistic", "integer_pow", "slice", "dot_general", "random_bits",
           "shift_left", "shift_right_logical", "reduce_sum", "reduce_max", "reduce_min",
           "shard_map", "jit", "custom_vjp_call", "sharding_constraint", "inspect_sharding",
           "reshard", "transpose", "psum", "pmax", "pmin")

  def __init__(self):
    for n in self.NAMES:
      setattr(self, n, _Unregistered(n))


roles = Roles()


def register(prim, kind: str, *, fuse: bool = False, hoist: bool | None = None,
             monoid_reduction: bool = False, collective: str | None = None,
             jaxpr_param: str | None = None, role: str | None = None,
             source: bool = False, propagation_rule: str | None = None,
             dims=None, identity: bool = False, result_shape_param: str | None = None,
             op: str | None = None):
  """Records `prim`'s kind and facts (see the module doc); returns `prim`. `hoist` defaults to
  True for fusible elementwise primitives; `role` names it in `roles` (and is its operation,
  unless `op` names another)."""
  if kind not in KINDS:
    raise ValueError(f"primitive_kinds.register: unknown kind {kind!r} for {prim}; expected one "
                     f"of {', '.join(sorted(KINDS))}")
  kind_of[prim] = kind
  (fusible.add if fuse else fusible.discard)(prim)
  if hoist is None:
    hoist = fuse
  (hoistable.add if hoist else hoistable.discard)(prim)
  (monoid.add if monoid_reduction else monoid.discard)(prim)
  (views.add if kind == VIEW else views.discard)(prim)
  (never_fused.add if kind == PRODUCT else never_fused.discard)(prim)
  (row_sources.add if source else row_sources.discard)(prim)
  if collective is not None:
    collective_of[prim] = collective
  if jaxpr_param is not None:
    call_jaxpr[prim] = jaxpr_param
  if propagation_rule is not None:
    propagation[prim] = propagation_rule
  if dims is not None:
    whole_dims[prim] = dims
  (identities.add if identity else identities.discard)(prim)
  if result_shape_param is not None:
    shape_param[prim] = result_shape_param
  if role is not None:
    if role not in Roles.NAMES:
      raise ValueError(f"primitive_kinds.register: unknown role {role!r} for {prim}")
    setattr(roles, role, prim)
  if op is not None or role is not None:
    operation[prim] = op if op is not None else role
  return prim


def set_role(prim, role: str):
  """Names `prim` (already registered) in `roles`; returns `prim`."""
  if role not in Roles.NAMES:
    raise ValueError(f"primitive_kinds.set_role: unknown role {role!r} for {prim}")
  setattr(roles, role, prim)
  operation.setdefault(prim, role)
  return prim


def set_operation(prim, op: str):
  """Records that `prim` computes lax's operation `op` (see the module doc); returns `prim`."""
  operation[prim] = op
  return prim


def kind(prim) -> str:
  """The registered kind of `prim`, else "other"."""
  return kind_of.get(prim, OTHER)
