"""Tests of the jaxpr printer: the document layer, then hand-built jaxprs printed as JAX does.

Expected strings are JAX 0.10.2's own printouts; where JAX is installed, jaxprs it traces are
also converted to jaxlite IR and printed by both sides.
"""
import functools

import numpy as np
import pytest

from jaxlite._src.base import core, dtypes
from jaxlite._src.base import pretty_print as pp

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
  """jaxlite's own primitive of that name where it has print rules (they are keyed by the
  primitive object), else a fresh one."""
  if not _PRIMS:
    import jaxlite  # noqa: F401  (its modules register the rules next to their primitives)
    _PRIMS.update({p.name: p for p in (*pp.param_rules, *pp.name_sharing)})
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
  def doc(w):
    return pp.concat(pp.text("x" * 70), pp.group(pp.concat(pp.text("a" * w), pp.brk(),
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


# --- edge forms and wrapping -------------------------------------------------------------------


def test_eqn_without_args_ends_in_a_space():
  b = Builder()
  y = b("iota", out=f32(3), dimension=0, dtype=F32, shape=(3,), sharding=None)
  assert pp.pp_jaxpr(b.jaxpr([], [y])) == """\
{ lambda ; . let
    a:f32[3] = iota[dimension=0 dtype=float32 shape=(3,) sharding=None]\x20
  in (a,) }"""


@pytest.mark.parametrize("build,expected", [
    (lambda x: ([], [x], [x]), "{ lambda ; a:f32[]. let  in (a,) }"),
    (lambda x: ([x], [], [x]), "{ lambda a:f32[]; . let  in (a,) }"),
    (lambda x: ([], [x], []), "{ lambda ; a:f32[]. let  in () }"),
    (lambda x: ([], [x], [x, lit(2, i32())]), "{ lambda ; a:f32[]. let  in (a, 2:i32[]) }"),
])
def test_jaxprs_without_eqns(build, expected):
  consts, ins, outs = build(var(f32()))
  assert pp.pp_jaxpr(core.Jaxpr(consts, ins, outs, [])) == expected


def test_constvars_come_before_the_semicolon():
  b = Builder()
  c, x = var(f32(3)), var(f32(3))
  jaxpr = b.jaxpr([x], [b("add", x, c, out=f32(3))], constvars=[c])
  assert pp.pp_jaxpr(jaxpr) == "{ lambda a:f32[3]; b:f32[3]. let c:f32[3] = add b a in (c,) }"


@pytest.mark.parametrize("n,broken", [(77, False), (80, False), (81, True)])
def test_the_closing_brace_counts_toward_a_jaxpr_fitting(n, broken):
  # Flat text of `lambda *a: sin(a[0])` on f32[100] f32[100] f32[100,X]: 80 chars fit.
  shapes = {77: (10, 10, (10, 1, 1)), 80: (100, 100, (100, 11)), 81: (100, 100, (100, 1, 1))}[n]
  ins = [var(f32(*(s if isinstance(s, tuple) else (s,)))) for s in shapes]
  b = Builder()
  jaxpr = b.jaxpr(ins, [b("sin", ins[0], out=ins[0].aval, accuracy=None)])
  out = pp.pp_jaxpr(jaxpr)
  assert ("\n" in out) == broken
  assert len(out.replace("\n    ", " ").replace("\n  ", " ")) == n


def many(n, a):
  return [var(a) for _ in range(n)]


LONG_BINDERS = """\
{ lambda ; a:f32[3,4] b:f32[3,4] c:f32[3,4] d:f32[3,4] e:f32[3,4] f:f32[3,4] g:f32[3,4]
    h:f32[3,4] i:f32[3,4] j:f32[3,4] k:f32[3,4] l:f32[3,4] m:f32[3,4] n:f32[3,4]
    o:f32[3,4] p:f32[3,4] q:f32[3,4] r:f32[3,4] s:f32[3,4] t:f32[3,4] u:f32[3,4]
    v:f32[3,4] w:f32[3,4] x:f32[3,4] y:f32[3,4] z:f32[3,4] ba:f32[3,4] bb:f32[3,4]
    bc:f32[3,4] bd:f32[3,4] be:f32[3,4] bf:f32[3,4] bg:f32[3,4] bh:f32[3,4] bi:f32[3,4]
    bj:f32[3,4] bk:f32[3,4] bl:f32[3,4] bm:f32[3,4] bn:f32[3,4]. let
\x20\x20\x20\x20
  in (bn, bm, bl, bk, bj, bi, bh, bg, bf, be, bd, bc, bb, ba, z, y, x, w, v, u, t,
    s, r, q, p, o, n, m, l, k, j, i, h, g, f, e, d, c, b, a) }"""


def test_long_binder_and_output_lists_wrap_only_past_column_80():
  xs = many(40, f32(3, 4))
  assert pp.pp_jaxpr(core.Jaxpr([], xs, xs[::-1], [])) == LONG_BINDERS


HOISTED_LAMBDA = """\
let lambda = { lambda ; a:f32[3,4] b:f32[3,4] c:f32[3,4] d:f32[3,4] e:f32[3,4] f:f32[3,4]
    g:f32[3,4] h:f32[3,4] i:f32[3,4] j:f32[3,4] k:f32[3,4] l:f32[3,4] m:f32[3,4]
    n:f32[3,4]. let
    o:f32[3,4] = mul a 2.0:f32[]
    p:f32[3,4] = mul b 2.0:f32[]
    q:f32[3,4] = mul c 2.0:f32[]
    r:f32[3,4] = mul d 2.0:f32[]
    s:f32[3,4] = mul e 2.0:f32[]
    t:f32[3,4] = mul f 2.0:f32[]
    u:f32[3,4] = mul g 2.0:f32[]
    v:f32[3,4] = mul h 2.0:f32[]
    w:f32[3,4] = mul i 2.0:f32[]
    x:f32[3,4] = mul j 2.0:f32[]
    y:f32[3,4] = mul k 2.0:f32[]
    z:f32[3,4] = mul l 2.0:f32[]
    ba:f32[3,4] = mul m 2.0:f32[]
    bb:f32[3,4] = mul n 2.0:f32[]
  in (o, p, q, r, s, t, u, v, w, x, y, z, ba, bb) } in
{ lambda ; bc:f32[3,4] bd:f32[3,4] be:f32[3,4] bf:f32[3,4] bg:f32[3,4] bh:f32[3,4]
    bi:f32[3,4] bj:f32[3,4] bk:f32[3,4] bl:f32[3,4] bm:f32[3,4] bn:f32[3,4] bo:f32[3,4]
    bp:f32[3,4]. let
    bq:f32[3,4] br:f32[3,4] bs:f32[3,4] bt:f32[3,4] bu:f32[3,4] bv:f32[3,4] bw:f32[3,4]
      bx:f32[3,4] by:f32[3,4] bz:f32[3,4] ca:f32[3,4] cb:f32[3,4] cc:f32[3,4] cd:f32[3,4] = jit[
      name=<lambda>
      jaxpr=lambda
    ] bc bd be bf bg bh bi bj bk bl bm bn bo bp
  in (bq, br, bs, bt, bu, bv, bw, bx, by, bz, ca, cb, cc, cd) }"""


def test_a_jit_of_14_eqns_is_hoisted_with_wrapped_output_binders_and_broken_params():
  ib = Builder()
  ins = many(14, f32(3, 4))
  callee = ib.jaxpr(ins, [ib("mul", v, weak(2.0), out=f32(3, 4)) for v in ins])
  b = Builder()
  xs = many(14, f32(3, 4))
  ys = b("jit", *xs, out=[f32(3, 4)] * 14, **jit_params("<lambda>", callee))
  assert pp.pp_jaxpr(b.jaxpr(xs, ys)) == HOISTED_LAMBDA


def test_long_argument_lists_wrap_at_eqn_indent_plus_2():
  xs = many(40, f32(3, 4))
  callee = core.Jaxpr([], many(40, f32(3, 4)), [], [])
  callee.outvars = callee.invars[:1]
  b = Builder()
  y = b("jit", *xs, out=f32(3, 4), **jit_params("<lambda>", callee))
  lines = pp.pp_jaxpr(b.jaxpr(xs, [y])).split("\n")
  assert lines[6:11] == [
      "    bo:f32[3,4] = jit[",
      "      name=<lambda>",
      "      jaxpr={ lambda ; a:f32[3,4] b:f32[3,4] c:f32[3,4] d:f32[3,4] e:f32[3,4] f:f32[3,4]",
      "          g:f32[3,4] h:f32[3,4] i:f32[3,4] j:f32[3,4] k:f32[3,4] l:f32[3,4] m:f32[3,4]",
      "          n:f32[3,4] o:f32[3,4] p:f32[3,4] q:f32[3,4] r:f32[3,4] s:f32[3,4] t:f32[3,4]"]
  assert lines[-5:] == [
      "          ",
      "        in (a,) }",
      "    ] a b c d e f g h i j k l m n o p q r s t u v w x y z ba bb bc bd be bf bg bh",
      "      bi bj bk bl bm bn",
      "  in (bo,) }"]


# --- `_` and jit name sharing ------------------------------------------------------------------


def test_unused_top_level_outputs_print_underscore_without_taking_a_name():
  # grad(jnp.sin)(1.0): the primal sin is dead.
  b = Builder()
  x = var(f32())
  b("sin", x, out=f32(), accuracy=None)
  c = b("cos", x, out=f32(), accuracy=None)
  y = b("mul", weak(1.0), c, out=f32())
  assert pp.pp_jaxpr(b.jaxpr([x], [y])) == """\
{ lambda ; a:f32[]. let
    _:f32[] = sin a
    b:f32[] = cos a
    c:f32[] = mul 1.0:f32[] b
  in (c,) }"""


def test_underscore_only_at_top_level():
  dead = Builder()
  x = var(f32())
  dead("sin", x, out=f32(), accuracy=None)
  dead_jaxpr = dead.jaxpr([x], [dead("mul", x, weak(2.0), out=f32())])
  b = Builder()
  p, y = var(b1()), var(f32())
  ident = core.Jaxpr([], [z := var(f32())], [z], [])
  out = b("cond", p, y, out=f32(), branches=(closed(ident), closed(dead_jaxpr)))
  assert pp.pp_jaxpr(b.jaxpr([p, y], [out])) == """\
{ lambda ; a:bool[] b:f32[]. let
    c:f32[] = cond[
      branches=(
        { lambda ; d:f32[]. let  in (d,) }
        { lambda ; e:f32[]. let
            f:f32[] = sin e
            g:f32[] = mul e 2.0:f32[]
          in (g,) }
      )
    ] a b
  in (c,) }"""


def sin_cos_jaxpr():
  b = Builder()
  x = var(f32())
  outs = [b(name, x, out=f32(), accuracy=None) for name in ("sin", "cos")]
  return b.jaxpr([x], outs)


def test_an_outer_underscore_names_the_inner_outvar():
  # grad(jax.jit(jnp.sin))(1.0): the primal and the linear jit of one name.
  lin = Builder()
  r, t = var(f32()), var(f32())
  lin_jaxpr = lin.jaxpr([r, t], [lin("mul", t, r, out=f32())])
  b = Builder()
  x = var(f32())
  _, cos = b("jit", x, out=[f32(), f32()], **jit_params("sin", sin_cos_jaxpr()))
  y = b("jit", cos, weak(1.0), out=f32(), **jit_params("sin", lin_jaxpr))
  assert pp.pp_jaxpr(b.jaxpr([x], [y])) == """\
{ lambda ; a:f32[]. let
    _:f32[] b:f32[] = jit[
      name=sin
      jaxpr={ lambda ; a:f32[]. let _:f32[] = sin a; b:f32[] = cos a in (_, b) }
    ] a
    c:f32[] = jit[
      name=sin
      jaxpr={ lambda ; b:f32[] d:f32[]. let c:f32[] = mul d b in (c,) }
    ] b 1.0:f32[]
  in (c,) }"""


def jit_of(callee, *args, n_out=None, name="<lambda>", **extra):
  """A one-eqn jaxpr calling `callee` through jit on `args` (vars or literals)."""
  b = Builder()
  outs = b("jit", *args, out=[v.aval for v in callee.outvars], **jit_params(name, callee, **extra))
  return b, outs


def test_a_var_passed_twice_names_only_the_first_inner_invar():
  ib = Builder()
  p, q = var(f32()), var(f32())
  callee = ib.jaxpr([p, q], [ib("add", p, q, out=f32())])
  x = var(f32())
  b, outs = jit_of(callee, x, x)
  assert pp.pp_jaxpr(b.jaxpr([x], outs)) == """\
{ lambda ; a:f32[]. let
    b:f32[] = jit[
      name=<lambda>
      jaxpr={ lambda ; a:f32[] c:f32[]. let b:f32[] = add a c in (b,) }
    ] a a
  in (b,) }"""


@pytest.mark.parametrize("second", ["var", "literal"])
def test_identity_outvars_keep_their_names_and_literal_args_are_skipped(second):
  p, q = var(f32()), var(f32())
  callee = core.Jaxpr([], [p, q], [q, p, p], [])
  x = var(f32())
  b, outs = jit_of(callee, x, x if second == "var" else weak(2.0))
  arg2 = "a" if second == "var" else "2.0:f32[]"
  assert pp.pp_jaxpr(b.jaxpr([x], outs)) == f"""\
{{ lambda ; a:f32[]. let
    b:f32[] c:f32[] d:f32[] = jit[
      name=<lambda>
      jaxpr={{ lambda ; a:f32[] b:f32[]. let  in (b, a, a) }}
    ] a {arg2}
  in (b, c, d) }}"""


def test_shared_outputs_are_named_before_the_other_outputs():
  # jit(lambda a, b: (a, b*2, a, b*3)): the outputs tied to inner eqns take c and d first.
  ib = Builder()
  p, q = var(f32()), var(f32())
  c2, c3 = ib("mul", q, weak(2.0), out=f32()), ib("mul", q, weak(3.0), out=f32())
  callee = ib.jaxpr([p, q], [p, c2, p, c3])
  x, y = var(f32()), var(f32())
  b, outs = jit_of(callee, x, y)
  assert pp.pp_jaxpr(b.jaxpr([x, y], outs)) == """\
{ lambda ; a:f32[] b:f32[]. let
    e:f32[] c:f32[] f:f32[] d:f32[] = jit[
      name=<lambda>
      jaxpr={ lambda ; a:f32[] b:f32[]. let
          c:f32[] = mul b 2.0:f32[]
          d:f32[] = mul b 3.0:f32[]
        in (a, c, a, d) }
    ] a b
  in (e, c, f, d) }"""


def test_dead_shared_outputs_make_inner_eqns_underscore():
  ib = Builder()
  p, q = var(f32()), var(f32())
  c2, c3 = ib("mul", q, weak(2.0), out=f32()), ib("mul", q, weak(3.0), out=f32())
  callee = ib.jaxpr([p, q], [p, c2, p, c3])
  x, y = var(f32()), var(f32())
  b, outs = jit_of(callee, x, y)
  assert pp.pp_jaxpr(b.jaxpr([x, y], outs[1:3])) == """\
{ lambda ; a:f32[] b:f32[]. let
    _:f32[] c:f32[] d:f32[] _:f32[] = jit[
      name=<lambda>
      jaxpr={ lambda ; a:f32[] b:f32[]. let
          c:f32[] = mul b 2.0:f32[]
          _:f32[] = mul b 3.0:f32[]
        in (a, c, a, _) }
    ] a b
  in (c, d) }"""


def test_nested_jit_identity_shares_through_both_levels():
  p = var(f32())
  innermost = core.Jaxpr([], [p], [p, p], [])
  q = var(f32())
  mb, mouts = jit_of(innermost, q)
  middle = mb.jaxpr([q], mouts)
  x = var(f32())
  b, outs = jit_of(middle, x)
  assert pp.pp_jaxpr(b.jaxpr([x], outs)) == """\
{ lambda ; a:f32[]. let
    b:f32[] c:f32[] = jit[
      name=<lambda>
      jaxpr={ lambda ; a:f32[]. let
          b:f32[] c:f32[] = jit[
            name=<lambda>
            jaxpr={ lambda ; a:f32[]. let  in (a, a) }
          ] a
        in (b, c) }
    ] a
  in (b, c) }"""


def test_inner_constvars_get_fresh_names_after_shared_ones():
  ib = Builder()
  c, p = var(f32(2)), var(f32(2))
  callee = ib.jaxpr([p], [ib("add", p, c, out=f32(2))], constvars=[c])
  x = var(f32(2))
  b, outs = jit_of(callee, x)
  assert pp.pp_jaxpr(b.jaxpr([x], outs)) == """\
{ lambda ; a:f32[2]. let
    b:f32[2] = jit[
      name=<lambda>
      jaxpr={ lambda c:f32[2]; a:f32[2]. let b:f32[2] = add a c in (b,) }
    ] a
  in (b,) }"""


def test_custom_jvp_call_gets_fresh_names_while_its_inner_jit_shares():
  # jax.nn.relu
  jb = Builder()
  p = var(f32())
  relu = jb.jaxpr([p], [jb("max", p, lit(np.float32(0.0)), out=f32())])
  cb = Builder()
  q = var(f32())
  call = cb.jaxpr([q], [cb("jit", q, out=f32(), **jit_params("relu", relu))])

  def jvp(primals, tangents):
    return primals, tangents

  b = Builder()
  x = var(f32())
  y = b("custom_jvp_call", x, out=f32(), name="relu", call_jaxpr=closed(call), jvp=jvp,
        num_consts=0, symbolic_zeros=False, jvp_jaxpr_thunk=lambda: None)
  assert pp.pp_jaxpr(b.jaxpr([x], [y])) == """\
{ lambda ; a:f32[]. let
    b:f32[] = custom_jvp_call[
      name=relu
      call_jaxpr={ lambda ; c:f32[]. let
          d:f32[] = jit[
            name=relu
            jaxpr={ lambda ; c:f32[]. let d:f32[] = max c 0.0:f32[] in (d,) }
          ] c
        in (d,) }
      jvp=jvp
      symbolic_zeros=False
    ] a
  in (b,) }"""


def test_a_hoisted_jit_shares_no_names():
  callee = closed(chain("sin", 1))
  b = Builder()
  x = var(f32())
  y = b("jit", x, out=f32(), **jit_params("g", callee))
  z = b("jit", y, out=f32(), **jit_params("g", callee))
  assert pp.pp_jaxpr(b.jaxpr([x], [z])) == """\
let g = { lambda ; a:f32[]. let b:f32[] = sin a in (b,) } in
{ lambda ; c:f32[]. let
    d:f32[] = jit[name=g jaxpr=g] c
    e:f32[] = jit[name=g jaxpr=g] d
  in (e,) }"""


# --- scan and while ----------------------------------------------------------------------------


def fori_body(a0, a1, a2=None):
  b = Builder()
  ins = [var(i32()) for _ in range(3 if a2 else 2)]
  i, c = ins[0], ins[-1]
  outs = [b("add", i, lit(1, i32()), out=i32())] + ins[1:-1] + [b("add", c, i, out=i32())]
  return b.jaxpr(ins, outs)


def test_scan_params():
  b = Builder()
  x = var(i32())
  _, y = b("scan", lit(0, i32()), x, out=[i32(), i32()], jaxpr=closed(fori_body(0, 1)),
           length=5, reverse=False, num_consts=0, num_carry=2, unroll=1)
  assert pp.pp_jaxpr(b.jaxpr([x], [y])) == """\
{ lambda ; a:i32[]. let
    _:i32[] b:i32[] = scan[
      jaxpr={ lambda ; c:i32[] d:i32[]. let
          e:i32[] = add c 1:i32[]
          f:i32[] = add d c
        in (e, f) }
      length=5
      num_carry=2
      num_consts=0
      reverse=False
      unroll=1
    ] 0:i32[] a
  in (b,) }"""


def test_while_params():
  cb = Builder()
  ins = [var(i32()) for _ in range(3)]
  cond = cb.jaxpr(ins, [cb("lt", ins[0], ins[1], out=b1())])
  b = Builder()
  x, n = var(i32()), var(i32())
  *_, y = b("while", lit(0, i32()), n, x, out=[i32()] * 3, cond_nconsts=0,
            cond_jaxpr=closed(cond), body_nconsts=0, body_jaxpr=closed(fori_body(0, 1, 2)))
  assert pp.pp_jaxpr(b.jaxpr([x, n], [y])) == """\
{ lambda ; a:i32[] b:i32[]. let
    _:i32[] _:i32[] c:i32[] = while[
      body_jaxpr={ lambda ; d:i32[] e:i32[] f:i32[]. let
          g:i32[] = add d 1:i32[]
          h:i32[] = add f d
        in (g, e, h) }
      body_nconsts=0
      cond_jaxpr={ lambda ; i:i32[] j:i32[] k:i32[]. let
          l:bool[] = lt i j
        in (l,) }
      cond_nconsts=0
    ] 0:i32[] b a
  in (c,) }"""


# --- literals ----------------------------------------------------------------------------------

C64, U32, U8, F16 = (np.dtype(t) for t in ("complex64", "uint32", "uint8", "float16"))


@pytest.mark.parametrize("val,a,expected", [
    (np.float32(0.1), f32(), "0.10000000149011612:f32[]"),
    (dtypes.TypedFloat(0.1, F32), f32(), "0.1:f32[]"),
    (dtypes.TypedFloat(1.67, F32), f32(), "1.67:f32[]"),
    (0.1, f32(), "0.1:f32[]"),
    (np.array(2.0, F32), f32(), "2.0:f32[]"),
    (np.int32(1), i32(), "1:i32[]"),
    (dtypes.TypedInt(-3, I32), i32(), "-3:i32[]"),
    (True, b1(), "True:bool[]"),
    (np.bool_(True), b1(), "True:bool[]"),
    (np.uint8(3), aval(U8), "3:u8[]"),
    (np.uint32(4294967295), aval(U32), "4294967295:u32[]"),
    (np.float32(np.nan), f32(), "nan:f32[]"),
    (np.float32(-np.inf), f32(), "-inf:f32[]"),
    (dtypes.TypedFloat(1e20, F32), f32(), "1e+20:f32[]"),
    (dtypes.TypedComplex(1 + 2j, C64), aval(C64), "(1+2j):c64[]"),
    (np.complex64(1 + 2j), aval(C64), "(1+2j):c64[]"),
    (np.float16(0.1), aval(F16), "0.0999755859375:f16[]"),
    (np.array([1.0, 2.0, 3.0], F32), f32(3), "[...]:f32[3]"),
])
def test_literal_text(val, a, expected):
  b = Builder()
  x = var(a)
  jaxpr = b.jaxpr([x], [b("add", x, core.Literal(val, a), out=a)])
  t = a.str_short(short_dtypes=True)
  assert pp.pp_jaxpr(jaxpr) == f"{{ lambda ; a:{t}. let b:{t} = add a {expected} in (b,) }}"


def test_bfloat16_literal():
  ml_dtypes = pytest.importorskip("ml_dtypes")
  assert dtypes.load_ml_dtypes()
  bf16 = np.dtype(ml_dtypes.bfloat16)
  lt = core.Literal(np.array(0.1, bf16)[()], aval(bf16))
  assert pp._literal_str(lt) == "0.10009765625:bf16[]"


# --- params ------------------------------------------------------------------------------------


def one_eqn(prim_name, **params):
  """`prim[params]` as printed for an eqn `OUT = prim[params] ARG`, on one line."""
  b = Builder()
  b(prim_name, var(f32()), out=f32(), **params)
  text = pp.pp_eqn_standalone(b.eqns[0], width=1000)
  return text.split(" = ", 1)[1].rsplit(" ", 1)[0]


def fun_at_address():
  pass


@pytest.mark.parametrize("params,expected", [
    (dict(b=1, a=2), "p[a=2 b=1]"),
    (dict(axes=(np.int64(0),), out_sharding=None), "p[axes=(np.int64(0),) out_sharding=None]"),
    (dict(axis_name="x", flag=True), "p[axis_name=x flag=True]"),
    (dict(axes=frozenset({"y", "x", "z"})), "p[axes=frozenset({'x', 'y', 'z'})]"),
    (dict(axes=frozenset()), "p[axes=frozenset()]"),
    (dict(new_dtype=F32), "p[new_dtype=float32]"),
    (dict(dtype=np.int8), "p[dtype=int8]"),
    (dict(names=("a", "b")), "p[names=('a', 'b')]"),
    (dict(sizes=[np.int64(1), 2]), "p[sizes=[np.int64(1), 2]]"),
    (dict(padding_config=((1, np.int64(0), 0),)), "p[padding_config=((1, np.int64(0), 0),)]"),
])
def test_param_values(params, expected):
  assert one_eqn("p", **params) == expected


def test_addresses_are_masked_with_the_same_digit_count():
  s = pp.param_str(fun_at_address)
  digits = hex(id(fun_at_address))[2:]
  assert s == f"<function fun_at_address at 0x{'X' * len(digits)}>"
  assert pp.param_str("<object at 0x7f00aa>") == "<object at 0xXXXXXX>"


@pytest.mark.parametrize("extra,expected", [
    ({}, "jit[name=f jaxpr={J}]"),
    (dict(donated_invars=(True,)), "jit[name=f donated_invars=(True,) jaxpr={J}]"),
    (dict(keep_unused=True), "jit[name=f jaxpr={J} keep_unused=True]"),
    (dict(in_shardings=(None,), out_shardings=(None,)), "jit[name=f jaxpr={J}]"),
    (dict(in_shardings=("S",)), "jit[name=f in_shardings=('S',) jaxpr={J}]"),
    (dict(out_layouts=("L",)), "jit[name=f jaxpr={J} out_layouts=('L',)]"),
    (dict(compiler_options_kvs=(("k", 1),)),
     "jit[name=f compiler_options_kvs=(('k', 1),) jaxpr={J}]"),
    (dict(ctx_mesh="Mesh('x': 2)"), "jit[name=f ctx_mesh=Mesh('x': 2) jaxpr={J}]"),
])
def test_jit_params(extra, expected):
  inner = "{ lambda ; a:f32[]. let b:f32[] = neg a in (b,) }"
  params = jit_params("f", chain("neg", 1), **extra)
  assert one_eqn("jit", **params) == expected.replace("{J}", inner)


class _EmptyMesh:
  axis_names = ()

  def __str__(self):
    return "Mesh(axis_sizes=(), axis_names=())"


def test_jit_drops_an_empty_mesh_object():
  b = Builder()
  x = var(f32())
  b("jit", x, out=f32(), **jit_params("f", chain("neg", 1), ctx_mesh=_EmptyMesh()))
  assert "ctx_mesh" not in pp.pp_eqn_standalone(b.eqns[0])


@pytest.mark.parametrize("prim_name,params,expected", [
    ("exp", dict(accuracy=None), "exp"),
    ("tanh", dict(accuracy="HIGH"), "tanh[accuracy=HIGH]"),
    ("neg", dict(accuracy=None), "neg[accuracy=None]"),
    ("mul", dict(out_dtype=None), "mul"),
    ("convert_element_type", dict(new_dtype=F32, weak_type=False, sharding=None),
     "convert_element_type[new_dtype=float32 weak_type=False]"),
    ("broadcast_in_dim", dict(shape=(3,), broadcast_dimensions=(), sharding=None),
     "broadcast_in_dim"),
    ("broadcast_in_dim", dict(shape=(3, 1), broadcast_dimensions=(0, np.int64(2)), sharding=None),
     "broadcast_in_dim[broadcast_dimensions=(0, np.int64(2))]"),
    ("dot_general", dict(dimension_numbers=(((1,), (0,)), ((), ())), precision=None,
                         preferred_element_type=F32, out_sharding=None),
     "dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32]"),
    ("custom_vjp_call", dict(call_jaxpr="J", fwd=fun_at_address, bwd=functools.partial(
        fun_at_address), num_consts=1, symbolic_zeros=False, out_trees=lambda: None, name="g"),
     "custom_vjp_call[name=g bwd=fun_at_address call_jaxpr=J fwd=fun_at_address num_consts=1 "
     "symbolic_zeros=False]"),
    ("custom_jvp_call", dict(call_jaxpr="J", jvp=lambda: 0, num_consts=0, symbolic_zeros=False,
                             name="f"),
     "custom_jvp_call[name=f call_jaxpr=J jvp=<lambda> symbolic_zeros=False]"),
])
def test_per_primitive_param_rules(prim_name, params, expected):
  assert one_eqn(prim_name, **params) == expected


def test_param_rules_are_a_table():
  pp.param_rules[prim("my_prim")] = pp.ParamRule(first=("z",), drop={"hidden": lambda v: True})
  try:
    assert one_eqn("my_prim", a=1, z=2, hidden=3) == "my_prim[z=2 a=1]"
  finally:
    del pp.param_rules[prim("my_prim")]


def test_long_params_break_one_per_line():
  b = Builder()
  b("scatter-add", var(f32()), out=f32(), dimension_numbers="D" * 60, mode="M", update_jaxpr=None)
  assert pp.pp_eqn_standalone(b.eqns[0]) == (
      "a:f32[] = scatter-add[\n  dimension_numbers=" + "D" * 60 +
      "\n  mode=M\n  update_jaxpr=None\n] b")


def test_eqn_without_outputs_has_no_equals_sign():
  b = Builder()
  x = var(f32())
  b("debug_callback", x)
  assert pp.pp_jaxpr(b.jaxpr([x], [])) == "{ lambda ; a:f32[]. let debug_callback a in () }"


def test_eqn_repr():
  b = Builder()
  x = var(f32(3))
  b("add", x, weak(1.0), out=f32(3))
  assert repr(b.eqns[0]) == "a:f32[3] = add b 1.0:f32[]"
  assert pp.pp_eqn_standalone(b.eqns[0]) == "a:f32[3] = add b 1.0:f32[]"


def test_jit_eqn_repr_names_the_shared_argument_first():
  b = Builder()
  b("jit", var(f32()), out=f32(), **jit_params("<lambda>", chain("neg", 1)))
  assert repr(b.eqns[0]) == """\
b:f32[] = jit[
  name=<lambda>
  jaxpr={ lambda ; a:f32[]. let b:f32[] = neg a in (b,) }
] a"""


# --- differential: jaxprs traced by JAX, converted to jaxlite IR, printed by both ---------------


class FromJax:
  """Converts JAX's jaxpr objects to jaxlite IR, keeping object identity (hoisting needs it)."""

  def __init__(self):
    dtypes.load_ml_dtypes()
    self.vars, self.jaxprs = {}, {}

  def aval(self, a):
    return core.ShapedArray(a.shape, np.dtype(a.dtype), a.weak_type)

  def atom(self, v):
    if type(v).__name__ == "Literal":
      return core.Literal(self.literal_value(v.val), self.aval(v.aval))
    if v not in self.vars:
      self.vars[v] = core.Var(self.aval(v.aval))
    return self.vars[v]

  def literal_value(self, val):
    typed = {"TypedInt": dtypes.TypedInt, "TypedFloat": dtypes.TypedFloat,
             "TypedComplex": dtypes.TypedComplex}.get(type(val).__name__)
    return typed(val, np.dtype(val.dtype)) if typed else val

  def jaxpr(self, j):
    if id(j) not in self.jaxprs:
      self.jaxprs[id(j)] = (j, core.Jaxpr([self.atom(v) for v in j.constvars],
                                          [self.atom(v) for v in j.invars],
                                          [self.atom(v) for v in j.outvars],
                                          [self.eqn(e) for e in j.eqns]))
    return self.jaxprs[id(j)][1]

  def closed(self, cj):
    key = ("closed", id(cj))
    if key not in self.jaxprs:
      self.jaxprs[key] = (cj, core.ClosedJaxpr(self.jaxpr(cj.jaxpr), list(cj.consts)))
    return self.jaxprs[key][1]

  def param(self, v):
    kind = type(v).__name__
    if kind == "ClosedJaxpr":
      return self.closed(v)
    if kind == "Jaxpr":
      return self.jaxpr(v)
    if kind == "UnspecifiedValue":
      return pp.UNSPECIFIED
    if type(v) is tuple:
      return tuple(self.param(x) for x in v)
    return v

  def eqn(self, e):
    params = {k: self.param(v) for k, v in e.params.items()}
    custom = _CUSTOM_PARAMS.get(e.primitive.name)
    if custom:
      params = custom(e.params, params)
    return core.JaxprEqn([self.atom(v) for v in e.invars], [self.atom(v) for v in e.outvars],
                         prim(e.primitive.name), params)


def _debug_name(obj):
  return obj.debug_info.func_src_info.split(" ")[0]


def _custom_common(jax_params, params):
  return dict(name=_debug_name(jax_params["call_jaxpr"].jaxpr), call_jaxpr=params["call_jaxpr"],
              num_consts=params["num_consts"], symbolic_zeros=params["symbolic_zeros"])


# JAX keeps thunks in these params; jaxlite keeps the names they print.
_CUSTOM_PARAMS = {
    "custom_jvp_call": lambda jp, p: dict(_custom_common(jp, p),
                                          jvp=_debug_name(jp["jvp_jaxpr_fun"])),
    "custom_vjp_call": lambda jp, p: dict(_custom_common(jp, p),
                                          fwd=_debug_name(jp["fwd_jaxpr_thunk"]),
                                          bwd=_debug_name(jp["bwd"])),
}


def _oracle_cases(jax):
  """name -> (function, example args), traced with jax.make_jaxpr."""
  jnp, lax = jax.numpy, jax.lax

  def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

  def sin11(x):
    for _ in range(11):
      x = jnp.sin(x)
    return x

  def cond11(c):
    for _ in range(11):
      c = jnp.cos(c)
    return c < 3

  def make_f():
    def f(x):
      return sin11(x)
    return jax.jit(f)

  f1, f2 = make_f(), make_f()
  g = jax.jit(lambda x: jnp.sin(x) * 2)
  g.__name__ = "inner"
  inner = jax.jit(jnp.sin)
  h = jax.jit(lambda x: inner(inner(x)) + inner(x))
  k = jax.jit(jnp.cos)
  br = lambda x: x + 1  # noqa: E731 (one object for both branches)
  c3 = np.ones(3, np.float32)

  @jax.custom_jvp
  def cj(x):
    return x * c3
  cj.defjvp(lambda p, t: (cj(p[0]), t[0]))

  @jax.custom_vjp
  def cv(x, y):
    return jnp.sin(x) * y
  cv.defvjp(lambda x, y: (cv(x, y), (x, y)), lambda r, ct: (ct, ct))

  def dead(x):
    jnp.sin(x)
    return x * 2

  x5, x34, x3 = jnp.arange(5.0), jnp.ones((3, 4)), jnp.ones(3)
  m14, m40 = [x34] * 14, [x34] * 40
  return {
      "selu": (selu, (x5,)),
      "jit_selu": (jax.jit(selu), (x5,)),
      "cond": (lambda p, x: lax.cond(p, lambda x: x + 1., lambda x: x * 2., x), (True, 1.0)),
      "cond_shared_branch": (lambda p, x: lax.cond(p, br, br, x), (True, 1.0)),
      "switch": (lambda i, x: lax.switch(i, [lambda x: x, br, lambda x: x * 2], x), (1, 1.0)),
      "cond_dead_branch": (lambda p, x: lax.cond(p, dead, lambda x: x, x), (True, 1.0)),
      "cond_11": (lambda p, x: lax.cond(p, lambda x: x, sin11, x), (True, 1.0)),
      "hoisted_inner": (lambda x: g(g(x)), (1.0,)),
      "hoisted_nested": (lambda x: h(h(x)), (1.0,)),
      "hoisted_mixed": (lambda x: h(k(k(x))), (1.0,)),
      "hoisted_dead": (lambda x: jax.jit(dead)(jax.jit(dead)(x)), (1.0,)),
      "two_f": (lambda x: f2(f1(x)), (1.0,)),
      "while_big": (lambda x: lax.while_loop(cond11, sin11, x), (1.0,)),
      "while_small_cond": (lambda x: lax.while_loop(lambda c: c < 3, sin11, x), (1.0,)),
      "fori_scan": (lambda x: lax.fori_loop(0, 5, lambda i, c: c + i, x), (1,)),
      "fori_while": (lambda x, n: lax.fori_loop(0, n, lambda i, c: c + i, x), (1, 5)),
      "scan": (lambda x: lax.scan(lambda c, y: (c + y, c * y), x, jnp.arange(3.0)), (1.0,)),
      "grad_sin": (jax.grad(jnp.sin), (1.0,)),
      "grad_x_sin": (jax.grad(lambda x: x * jnp.sin(x)), (1.0,)),
      "grad_jit_sin": (jax.grad(jax.jit(jnp.sin)), (1.0,)),
      "grad_sum_sin": (jax.grad(lambda y: jnp.sum(jnp.sin(y))), (x3,)),
      "iota": (lambda: jnp.arange(3.), ()),
      "identity": (lambda x: x, (1.0,)),
      "literal_out": (lambda x: (x, 2), (1.0,)),
      "constvar": (lambda x: x + c3, (c3,)),
      "jit_constvar": (lambda x: jax.jit(lambda y: y + c3[:2])(x), (c3[:2],)),
      "jit_closure": (lambda x: jax.jit(lambda y: x + y)(2.0), (1.0,)),
      "var": (jnp.var, (x3,)),
      "sum14": (lambda *a: sum(a), m14),
      "mul14": (lambda *a: [v * 2 for v in a], m14),
      "jit_mul14": (lambda *a: jax.jit(lambda *b: [v * 2 for v in b])(*a), m14),
      "reverse40": (lambda *a: a[::-1], m40),
      "jit_first40": (lambda *a: jax.jit(lambda *b: b[0])(*a), m40),
      "jit_twice_arg": (lambda x: jax.jit(lambda a, b: a + b)(x, x), (1.0,)),
      "jit_perm": (lambda x: jax.jit(lambda a, b: (b, a, a))(x, 2.0), (1.0,)),
      "jit_ecfd": (lambda x, y: jax.jit(lambda a, b: (a, b * 2, a, b * 3))(x, y), (1.0, 2.0)),
      "jit_dead": (lambda x, y: jax.jit(lambda a, b: (a, b * 2, a, b * 3))(x, y)[1:3],
                   (1.0, 2.0)),
      "jit_nested_identity": (lambda x: jax.jit(lambda a: jax.jit(lambda b: (b, b))(a))(x),
                              (1.0,)),
      "jit_literal_out": (lambda x: jax.jit(lambda a: (a, a * 2, 3.0))(x), (1.0,)),
      "donate": (jax.jit(lambda x: x * 2, donate_argnums=0), (1.0,)),
      "keep_unused": (jax.jit(lambda x, y: x * 2, keep_unused=True), (1.0, 2.0)),
      "relu": (jax.nn.relu, (1.0,)),
      "custom_jvp_consts": (cj, (x3,)),
      "custom_vjp": (cv, (1.0, 2.0)),
      "remat": (jax.checkpoint(lambda x: jnp.sin(jnp.sin(x))), (1.0,)),
      "remat_policy": (jax.checkpoint(jnp.sin, policy=jax.checkpoint_policies.nothing_saveable),
                       (1.0,)),
      "vmap_sum": (jax.vmap(lambda x: jnp.sum(x, keepdims=True)), (x34,)),
      "scatter_add": (lambda x: x.at[1].add(1.), (x3,)),
      "set": (lambda x: x.at[0].set(5.), (x3,)),
      "gather": (lambda x, i: x[i], (x34, jnp.array([0, 1]))),
      "dynamic_index": (lambda x, i: x[i], (x34, 1)),
      "static_index": (lambda x: (x[0], x[1:, ::2], x[None], x.T), (x34,)),
      "matmul": (lambda a, b: a @ b, (x34, jnp.ones((4, 5)))),
      "batched_matmul": (lambda a, b: a @ b, (jnp.ones((2, 3, 4)), jnp.ones((2, 4, 5)))),
      "softmax": (jax.nn.softmax, (x3,)),
      "reductions": (lambda x: (jnp.sum(x), jnp.mean(x, axis=0), jnp.max(x, axis=0)), (x34,)),
      "powers": (lambda x: (x ** 2, x ** 3.0), (x3,)),
      "stack_concat": (lambda a, b: (jnp.stack([a, b]), jnp.concatenate([a, a])), (x3, x3)),
      "reshape_astype": (lambda x: (x.reshape(2, 2), x.astype(jnp.int32)), (jnp.ones(4),)),
      "int_div": (lambda a, b: a / b, (1, 2)),
      "clip": (lambda x: jnp.clip(x, 0., 1.), (x3,)),
      "misc": (lambda x: (jnp.cumsum(x), jnp.sort(x), jnp.argmax(x)), (x3,)),
      "linspace": (lambda x: jnp.linspace(0., x, 5), (1.0,)),
      "weak_literals": (lambda x: (x * 0.1, x * np.float32(0.1), x + np.array(2.0, np.float32)),
                        (1.0,)),
      "special_literals": (lambda x: (x + jnp.nan, x + (1 + 2j), x * 1e20, x - jnp.inf), (1.0,)),
      "bool_literals": (lambda x: (x == 1, x + True), (True,)),
      "uint_literal": (lambda x: x + np.uint32(4294967295), (np.uint32(3),)),
      "f16": (lambda x: jnp.ones(3, dtype=jnp.int8).astype(jnp.float16) * x, (jnp.float16(1),)),
      "bf16": (lambda x: x * 0.1, (jnp.ones(2, jnp.bfloat16),)),
      "vjp_jit": (lambda x: jax.vjp(jax.jit(lambda y: jnp.sin(y) * y), x)[1](x), (x3,)),
      "linearize": (lambda x: jax.linearize(jnp.tanh, x)[1](x), (x3,)),
      "log_softmax": (jax.nn.log_softmax, (x34,)),
      "norm": (jnp.linalg.norm, (x34,)),
  }


@pytest.fixture(scope="module")
def oracle():
  jax = pytest.importorskip("jax")
  return jax, _oracle_cases(jax)


ORACLE_NAMES = [
    "selu", "jit_selu", "cond", "cond_shared_branch", "switch", "cond_dead_branch", "cond_11",
    "hoisted_inner", "hoisted_nested", "hoisted_mixed", "hoisted_dead", "two_f", "while_big",
    "while_small_cond", "fori_scan", "fori_while", "scan", "grad_sin", "grad_x_sin",
    "grad_jit_sin", "grad_sum_sin", "iota", "identity", "literal_out", "constvar", "jit_constvar",
    "jit_closure", "var", "sum14", "mul14", "jit_mul14", "reverse40", "jit_first40",
    "jit_twice_arg", "jit_perm", "jit_ecfd", "jit_dead", "jit_nested_identity",
    "jit_literal_out", "donate", "keep_unused", "relu", "custom_jvp_consts", "custom_vjp",
    "remat", "remat_policy", "vmap_sum", "scatter_add", "set", "gather", "dynamic_index",
    "static_index", "matmul", "batched_matmul", "softmax", "reductions", "powers",
    "stack_concat", "reshape_astype", "int_div", "clip", "misc", "linspace", "weak_literals",
    "special_literals", "bool_literals", "uint_literal", "f16", "bf16", "vjp_jit", "linearize",
    "log_softmax", "norm",
]


@pytest.mark.parametrize("name", ORACLE_NAMES)
def test_prints_like_jax(oracle, name):
  jax, cases = oracle
  fun, args = cases[name]
  traced = jax.make_jaxpr(fun)(*args)
  assert pp.pp_jaxpr(FromJax().closed(traced)) == str(traced)


def test_oracle_names_cover_every_case(oracle):
  assert sorted(oracle[1]) == sorted(ORACLE_NAMES)


# --- end to end: jaxlite's own make_jaxpr against JAX's ----------------------------------------


def _end_to_end_cases(lib):
  jnp = lib.numpy

  def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

  inner = lib.jit(lambda x: jnp.sin(x) * 2)
  x5 = np.arange(5.0, dtype=np.float32)
  return {
      "selu": (selu, (x5,)),
      "jit_selu": (lib.jit(selu), (x5,)),
      "hoisted": (lambda x: inner(inner(x)), (1.0,)),
      "sharing": (lambda x: lib.jit(lambda a, b: (a, b * 2, a, b * 3))(x, x), (1.0,)),
  }


@pytest.mark.parametrize("name", ["selu", "jit_selu", "hoisted", "sharing"])
def test_jaxlite_make_jaxpr_prints_like_jax(name):
  jax = pytest.importorskip("jax")
  import jaxlite
  fun, args = _end_to_end_cases(jaxlite)[name]
  jax_fun, jax_args = _end_to_end_cases(jax)[name]
  assert str(jaxlite.make_jaxpr(fun)(*args)) == str(jax.make_jaxpr(jax_fun)(*jax_args))
