"""jax.experimental.hijax on jaxlite: a mutable hi type (a box of one array) defined with
HiPrimitive / MutableHiType / register_hitype, run eagerly and under jit, grad and vmap.
"""
import dataclasses

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite.experimental import hijax as hjx
from jaxlite.extend.core import Effect


class Cell:
  """A mutable box holding one array (the hi value)."""

  def __init__(self, val):
    self.val = val

  def cur_qdd(self):
    return CellQDD(jax.typeof(self.val))


@dataclasses.dataclass(frozen=True)
class CellQDD(hjx.QuasiDynamicData):
  aval: object


class CellTy(hjx.MutableHiType):
  def __hash__(self):
    return hash(CellTy)

  def __eq__(self, other):
    return isinstance(other, CellTy)

  def lo_ty_qdd(self, state):
    return [state.aval]

  value = hjx.aval_property(lambda cell: cell_get(cell))


calls = []


class CellNew(hjx.HiPrimitive):
  def impl(self, val):
    calls.append(("impl", self.name))
    return Cell(val)

  def abstract_eval(self, aval):
    return hjx.AvalQDD(CellTy(), CellQDD(aval)), set()

  def to_lojax(self, val):
    calls.append(("to_lojax", self.name))
    return Cell(val)


class CellGet(hjx.HiPrimitive):
  def to_lojax(self, cell):  # no impl: runs eagerly too
    return cell.val


class CellSet(hjx.HiPrimitive):
  multiple_results = True

  def to_lojax(self, cell, val):
    cell.val = val
    return []


cell_new_p, cell_get_p, cell_set_p = CellNew("cell_new"), CellGet("cell_get"), CellSet("cell_set")
hjx.register_hitype(Cell, lambda cell: CellTy())


def cell_get(cell):
  return cell_get_p.bind(cell)


def accumulate(xs):
  """Sums xs into a fresh cell with a Python loop of get/set; returns the total."""
  cell = cell_new_p.bind(jnp.zeros_like(xs[0]))
  for x in xs:
    cell_set_p.bind(cell, cell_get_p.bind(cell) + x)
  return cell_get_p.bind(cell)


def test_eager_runs_impl_and_typeof_uses_registered_type():
  calls.clear()
  cell = cell_new_p.bind(jnp.float32(2.0))
  assert calls == [("impl", "cell_new")]
  assert isinstance(cell, Cell) and jax.typeof(cell) == CellTy()
  cell_set_p.bind(cell, jnp.float32(5.0))
  assert float(cell_get_p.bind(cell)) == 5.0
  assert hjx.cur_qdd(cell) == CellQDD(jax.typeof(jnp.float32(5.0)))
  assert jax.experimental.cur_qdd(cell) == hjx.cur_qdd(cell)
  # aval_property/aval_method hold the function a hi value's attribute reads through
  assert float(CellTy.value.fget(cell)) == 5.0
  assert hjx.aval_method(Cell.cur_qdd).bound_to(cell)() == hjx.cur_qdd(cell)


@pytest.mark.parametrize("transform,expected", [
    ("eager", 6.0),
    ("jit", 6.0),
    ("grad", 3.0),
])
def test_hi_primitives_expand_to_lo_ops_under_transformations(transform, expected):
  xs = [jnp.float32(1.0), jnp.float32(2.0), jnp.float32(3.0)]
  calls.clear()
  if transform == "eager":
    out = accumulate(xs)
  elif transform == "jit":
    out = jax.jit(accumulate)(xs)
    assert calls == [("to_lojax", "cell_new")]  # traced: expanded, not run by impl
    calls.clear()
    assert float(jax.jit(accumulate)(xs)) == 6.0 and calls == []  # cache hit: no retrace
  else:
    out = jax.grad(lambda xs: accumulate(xs))(xs)
    assert [float(g) for g in out] == [1.0, 1.0, 1.0]
    out = jax.grad(lambda a: accumulate([a, a * a, jnp.float32(1.0)]))(jnp.float32(1.0))
  assert float(out) == expected


def test_vmap_of_hi_state():
  xs = jnp.arange(6, dtype=jnp.float32).reshape(3, 2)
  out = jax.vmap(lambda row: accumulate([row[0], row[1], row[0] * row[1]]))(xs)
  np.testing.assert_allclose(np.asarray(out), [1.0, 11.0, 29.0])


def test_make_jaxpr_shows_only_lo_ops():
  jaxpr = jax.make_jaxpr(accumulate)([jnp.float32(1.0), jnp.float32(2.0)])
  names = [e.primitive.name for e in jaxpr.jaxpr.eqns]
  assert "cell_new" not in names and "cell_get" not in names and names.count("add") == 2


def test_control_flow_allowed_effects():
  class MyEffect(Effect):
    pass

  hjx.control_flow_allowed_effects.add_type(MyEffect)
  assert hjx.control_flow_allowed_effects.contains(MyEffect())
  assert not hjx.control_flow_allowed_effects.contains(Effect())
  with pytest.raises(TypeError, match="add_type: expected a subclass of Effect"):
    hjx.control_flow_allowed_effects.add_type(int)


@pytest.mark.parametrize("call,match", [
    (lambda: hjx.cur_qdd(jnp.float32(1.0)), "cur_qdd: expected a value of a mutable hi type"),
    (lambda: hjx.register_hitype(Cell(1), None), "register_hitype: expected a class"),
    (lambda: CellTy().lo_ty(), "lo_ty_qdd"),
])
def test_bad_input(call, match):
  with pytest.raises(TypeError, match=match):
    call()


def test_unimplemented_rule_names_the_primitive():
  class Bare(hjx.HiPrimitive):
    pass

  with pytest.raises(NotImplementedError, match="Bare.to_lojax must be overridden"):
    Bare("bare").bind(jnp.float32(1.0))


def test_reexports_are_jaxlites_own():
  from jaxlite._src.interpreters import ad
  assert hjx.Zero is ad.Zero and hjx.instantiate_zeros is ad.instantiate_zeros
  assert hjx.is_undefined_primal(ad.UndefinedPrimal(jax.typeof(jnp.float32(0))))
  assert isinstance(jax.typeof(jnp.float32(0)), hjx.AbstractValue)
  assert issubclass(hjx.HiPrimitive, jax.extend.core.Primitive)
