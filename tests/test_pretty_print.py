"""Tests of the jaxpr printer: the document layer, then hand-built jaxprs printed as JAX 0.10.2 does.

Expected strings are JAX's own printouts; where JAX is installed, jaxprs it traces are also converted
to jaxlite IR and printed by both sides.
"""
import functools

import numpy as np
import pytest

from jaxlite._src import core, dtypes
from jaxlite._src import pretty_print as pp

# --- builders ----------------------------------------------------------------------------------

F32, I32, BOOL = np.dtype("float32"), np.dtype("int32"), np.dtype("bool")
_PRIMS: dict = {}


def aval(dtype, *shape):
  return core.ShapedArray(shape, dtype)


def f32(*shape):
  return aval(F32, *shape)


def i32(*shape):
  return aval(I32, *shape)


def b1(*shape):
  return aval(BOOL, *shape)


def prim(name):
  return _PRIMS.setdefault(name, core.Primitive(name))


def var(a):
  return core.Var(a)


def lit(val, a=None):
  return core.Literal(val, a if a is not None else f32())


def weak(x):
  """A weak Python float literal, printed with its Python value (`0.1:f32[]`)."""
  return lit(dtypes.TypedFloat(x, F32))


class Builder:
  """Collects eqns; `b("sin", x, out=f32())` appends one and returns its output var(s)."""

  def __init__(self):
    self.eqns = []

  def __call__(self, prim_name, /, *ins, out=None, **params):
    outs = [] if out is None else out if isinstance(out, list) else [out]
    outvars = [var(a) for a in outs]
    self.eqns.append(core.JaxprEqn(ins, outvars, prim(prim_name), params))
    return outvars[0] if len(outvars) == 1 and not isinstance(out, list) else outvars

  def jaxpr(self, invars, outvars, constvars=()):
    return core.Jaxpr(constvars, invars, outvars, self.eqns)


def closed(jaxpr):
  return core.ClosedJaxpr(jaxpr, [])


def jit_params(name, callee, **extra):
  """A jit eqn's params as the tracer makes them, every droppable default included."""
  callee = callee if isinstance(callee, core.ClosedJaxpr) else closed(callee)
  n_in, n_out = len(callee.jaxpr.invars), len(callee.jaxpr.outvars)
  params = dict(jaxpr=callee, in_shardings=(pp.UNSPECIFIED,) * n_in,
                out_shardings=(pp.UNSPECIFIED,) * n_out, in_layouts=(None,) * n_in,
                out_layouts=(None,) * n_out, donated_invars=(False,) * n_in, ctx_mesh=None,
                name=name, keep_unused=False, inline=False, compiler_options_kvs=())
  params.update(extra)
  return params


def chain(prim_name, n, a=None):
  """A jaxpr of `n` unary eqns in a row."""
  a = a or f32()
  b = Builder()
  x = var(a)
  y = x
  for _ in range(n):
    y = b(prim_name, y, out=a)
  return b.jaxpr([x], [y])


# --- the document layer ------------------------------------------------------------------------


def test_group_is_flat_iff_its_width_fits_what_is_left_of_the_line():
  doc = lambda w: pp.concat(pp.text("x" * 70), pp.group(pp.concat(pp.text("a" * w), pp.brk(),
                                                                    pp.text("b"))))
  assert pp.render(doc(8)) == "x" * 70 + "a" * 8 + " b"   # 70 + 10 == 80 fits
  assert pp.render(doc(9)) == "x" * 70 + "a" * 9 + "\nb"  # 81 does not


def test_text_after_a_group_does_not_count():
  doc = pp.concat(pp.group(pp.concat(pp.text("a"), pp.brk(), pp.text("b"))), pp.text("c" * 100))
  assert pp.render(doc) == "a b" + "c" * 100


def test_nest_indents_broken_lines_relative_to_the_indentation_not_the_column():
  inner = pp.group(pp.concat(pp.text("["), pp.nest(2, pp.concat(pp.brk(""), pp.text("x" * 80))),
                             pp.brk(""), pp.text("]")))
  doc = pp.nest(4, pp.concat(pp.text("head "), inner))
  assert pp.render(doc) == "head [\n      " + "x" * 80 + "\n    ]"


def test_a_flat_group_keeps_its_inner_groups_flat():
  inner = pp.group(pp.concat(pp.text("a"), pp.brk("; "), pp.text("b")))
  assert pp.render(pp.group(pp.concat(inner, pp.brk(), inner))) == "a; b a; b"


@pytest.mark.parametrize("width,expected", [(7, "aaa bbb\nccc"), (8, "aaa bbb ccc"),
                                            (3, "aaa\nbbb\nccc"), (4, "aaa bbb\nccc")])
def test_render_width(width, expected):
  # Separators in their own groups: each wraps only once the line has no room for it.
  items = [pp.text(s) for s in ("aaa", "bbb", "ccc")]
  seps = pp.join(pp.group(pp.brk()), items)
  assert pp.render(seps, width) == expected


@pytest.mark.parametrize("i,name", [(0, "a"), (1, "b"), (25, "z"), (26, "ba"), (27, "bb"),
                                    (51, "bz"), (52, "ca"), (675, "zz"), (676, "baa")])
def test_var_names_are_base_26_with_a_as_zero(i, name):
  assert pp.var_name(i) == name


# --- the contract's examples -------------------------------------------------------------------

SELU = """\
{ lambda ; a:f32[5]. let
    b:bool[5] = gt a 0.0:f32[]
    c:f32[5] = exp a
    d:f32[5] = mul 1.6699999570846558:f32[] c
    e:f32[5] = sub d 1.6699999570846558:f32[]
    f:f32[5] = jit[
      name=_where
      jaxpr={ lambda ; b:bool[5] a:f32[5] e:f32[5]. let
          f:f32[5] = select_n b e a
        in (f,) }
    ] b a e
    g:f32[5] = mul 1.0499999523162842:f32[] f
  in (g,) }"""

JIT_SELU = """\
{ lambda ; a:f32[5]. let
    b:f32[5] = jit[
      name=selu
      jaxpr={ lambda ; a:f32[5]. let
          c:bool[5] = gt a 0.0:f32[]
          d:f32[5] = exp a
          e:f32[5] = mul 1.6699999570846558:f32[] d
          f:f32[5] = sub e 1.6699999570846558:f32[]
          g:f32[5] = jit[
            name=_where
            jaxpr={ lambda ; c:bool[5] a:f32[5] f:f32[5]. let
                g:f32[5] = select_n c f a
              in (g,) }
          ] c a f
          b:f32[5] = mul 1.0499999523162842:f32[] g
        in (b,) }
    ] a
  in (b,) }"""


def selu_jaxpr():
  """selu traced on f32[5]: each call builds fresh vars, as a tracer would."""
  where = Builder()
  p, t, f = var(b1(5)), var(f32(5)), var(f32(5))
  where_jaxpr = where.jaxpr([p, t, f], [where("select_n", p, f, t, out=f32(5))])
  b = Builder()
  x = var(f32(5))
  pos = b("gt", x, lit(np.float32(0.0)), out=b1(5))
  ex = b("exp", x, out=f32(5), accuracy=None)
  sc = b("mul", lit(np.float32(1.67)), ex, out=f32(5))
  neg = b("sub", sc, lit(np.float32(1.67)), out=f32(5))
  w = b("jit", pos, x, neg, out=f32(5), **jit_params("_where", where_jaxpr))
  return b.jaxpr([x], [b("mul", lit(np.float32(1.05)), w, out=f32(5))])


def test_selu():
  assert pp.pp_jaxpr(selu_jaxpr()) == SELU


def test_jit_selu_shares_names_through_two_levels():
  inner = selu_jaxpr()
  b = Builder()
  x = var(f32(5))
  jaxpr = b.jaxpr([x], [b("jit", x, out=f32(5), **jit_params("selu", inner))])
  assert pp.pp_jaxpr(jaxpr) == JIT_SELU


def test_str_of_jaxpr_and_closed_jaxpr_use_the_printer():
  assert str(selu_jaxpr()) == SELU
  assert str(closed(selu_jaxpr())) == SELU
  assert pp.pp_jaxpr(closed(selu_jaxpr())) == SELU


COND = """\
{ lambda ; a:bool[] b:f32[]. let
    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a
    d:f32[] = cond[
      branches=(
        { lambda ; e:f32[]. let f:f32[] = mul e 2.0:f32[] in (f,) }
        { lambda ; g:f32[]. let h:f32[] = add g 1.0:f32[] in (h,) }
      )
    ] c b
  in (d,) }"""


def unary_jaxpr(name, c):
  b = Builder()
  x = var(f32())
  return b.jaxpr([x], [b(name, x, weak(c), out=f32())])


def test_cond_branches_print_as_a_tuple_with_fresh_names():
  b = Builder()
  p, x = var(b1()), var(f32())
  idx = b("convert_element_type", p, out=i32(), new_dtype=I32, weak_type=False, sharding=None)
  branches = (closed(unary_jaxpr("mul", 2.0)), closed(unary_jaxpr("add", 1.0)))
  jaxpr = b.jaxpr([p, x], [b("cond", idx, x, out=f32(), branches=branches)])
  assert pp.pp_jaxpr(jaxpr) == COND


def sin_times_two():
  b = Builder()
  x = var(f32())
  return b.jaxpr([x], [b("mul", b("sin", x, out=f32(), accuracy=None), weak(2.0), out=f32())])


def test_a_jit_called_twice_is_hoisted():
  inner = closed(sin_times_two())
  b = Builder()
  x = var(f32())
  y = b("jit", x, out=f32(), **jit_params("inner", inner))
  z = b("jit", y, out=f32(), **jit_params("inner", inner))
  assert pp.pp_jaxpr(b.jaxpr([x], [z])) == """\
let inner = { lambda ; a:f32[]. let
    b:f32[] = sin a
    c:f32[] = mul b 2.0:f32[]
  in (c,) } in
{ lambda ; d:f32[]. let
    e:f32[] = jit[name=inner jaxpr=inner] d
    f:f32[] = jit[name=inner jaxpr=inner] e
  in (f,) }"""


def test_two_distinct_jaxprs_of_one_name_with_11_eqns_each():
  b = Builder()
  x = var(f32())
  y = b("jit", x, out=f32(), **jit_params("f", chain("sin", 11)))
  z = b("jit", y, out=f32(), **jit_params("f", chain("sin", 11)))
  lines = pp.pp_jaxpr(b.jaxpr([x], [z])).split("\n")
  assert lines[0] == "let f = { lambda ; a:f32[]. let"
  assert [ln.split(":")[0].strip() for ln in lines[1:12]] == list("bcdeghijklm")  # f is taken
  assert lines[13] == "let f1 = { lambda ; n:f32[]. let"
  assert lines[-4:] == ["{ lambda ; z:f32[]. let",
                        "    ba:f32[] = jit[name=f jaxpr=f] z",
                        "    bb:f32[] = jit[name=f jaxpr=f1] ba",
                        "  in (bb,) }"]


def test_an_11_eqn_branch_is_hoisted_as_jaxpr():
  b = Builder()
  p, x = var(b1()), var(f32())
  idx = b("convert_element_type", p, out=i32(), new_dtype=I32, weak_type=False, sharding=None)
  ident = Builder().jaxpr([y := var(f32())], [y])
  branches = (closed(chain("sin", 11)), closed(ident))
  out = pp.pp_jaxpr(b.jaxpr([p, x], [b("cond", idx, x, out=f32(), branches=branches)]))
  assert out.startswith("let jaxpr = { lambda ; a:f32[]. let\n    b:f32[] = sin a\n")
  assert out.endswith("""\
  in (l,) } in
{ lambda ; m:bool[] n:f32[]. let
    o:i32[] = convert_element_type[new_dtype=int32 weak_type=False] m
    p:f32[] = cond[branches=(jaxpr { lambda ; q:f32[]. let  in (q,) })] o n
  in (p,) }""")


def cos_chain_then_lt(n):
  b = Builder()
  x = var(f32())
  y = x
  for _ in range(n):
    y = b("cos", y, out=f32(), accuracy=None)
  return b.jaxpr([x], [b("lt", y, weak(3.0), out=b1())])


def test_hoisting_order_follows_params_insertion_order_breadth_first():
  # while keeps cond_jaxpr before body_jaxpr, so the cond is `jaxpr` and the body `jaxpr1`.
  b = Builder()
  x = var(f32())
  y = b("while", x, out=f32(), cond_nconsts=0, cond_jaxpr=closed(cos_chain_then_lt(11)),
        body_nconsts=0, body_jaxpr=closed(chain("sin", 11)))
  out = pp.pp_jaxpr(b.jaxpr([x], [y]))
  assert out.startswith("let jaxpr = { lambda ; a:f32[]. let\n    b:f32[] = cos a\n")
  assert "  in (m,) } in\nlet jaxpr1 = { lambda ; n:f32[]. let\n    o:f32[] = sin n\n" in out
  assert out.endswith("""\
{ lambda ; z:f32[]. let
    ba:f32[] = while[
      body_jaxpr=jaxpr1
      body_nconsts=0
      cond_jaxpr=jaxpr
      cond_nconsts=0
    ] z
  in (ba,) }""")


def test_nested_hoisting_counts_inside_repeated_jaxprs():
  # g occurs once inside h, but h is used twice: g counts twice and is hoisted after h.
  g = closed(chain("sin", 1))
  hb = Builder()
  hx = var(f32())
  h = closed(hb.jaxpr([hx], [hb("jit", hx, out=f32(), **jit_params("g", g))]))
  b = Builder()
  x = var(f32())
  y = b("jit", x, out=f32(), **jit_params("h", h))
  z = b("jit", y, out=f32(), **jit_params("h", h))
  assert pp.pp_jaxpr(b.jaxpr([x], [z])) == """\
let h = { lambda ; a:f32[]. let b:f32[] = jit[name=g jaxpr=g] a in (b,) } in
let g = { lambda ; c:f32[]. let d:f32[] = sin c in (d,) } in
{ lambda ; e:f32[]. let
    f:f32[] = jit[name=h jaxpr=h] e
    i:f32[] = jit[name=h jaxpr=h] f
  in (i,) }"""
