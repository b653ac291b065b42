"""The compatibility contract (shared/reference/JAX-COMPAT.md), claim by claim, as one table.

Each row runs one snippet on jaxlite and asserts the contract's exact text; where real JAX is
installed the same snippet also runs on JAX (contract check) and both outputs are compared whole.
"""
# Table rows are single expressions: they bind an intermediate with an immediately called lambda.
# ruff: noqa: PLC3002
import collections
import contextlib
import functools
import logging
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
from conftest import xla_is_default

import jaxlite

# --- the two implementations behind one namespace ----------------------------------------------


class Impl:
  """One implementation's modules under the names the snippets use (`m.jnp.sin`, ...)."""

  def __init__(self, jax, prng_block):
    import importlib
    self.name = jax.__name__
    self.jax = jax
    for sub in ("numpy", "lax", "random", "nn", "tree_util", "tree", "errors", "dtypes",
                "scipy", "custom_derivatives"):
      setattr(self, "jnp" if sub == "numpy" else sub,
              importlib.import_module(f"{jax.__name__}.{sub}"))
    self.linalg = importlib.import_module(f"{jax.__name__}.numpy.linalg")
    self.threefry2x32_p = prng_block


def _lite():
  from jaxlite._src.rng import prng
  return Impl(jaxlite, prng.threefry2x32_p)


@functools.cache
def _jax():
  jax = pytest.importorskip("jax")
  import jax.extend.random as jer
  return Impl(jax, jer.threefry2x32_p)


LITE = _lite()


@contextlib.contextmanager
def config(m, **opts):
  """Sets config options for the block on `m` and restores them."""
  old = {k: getattr(m.jax.config, k) for k in opts}
  try:
    for k, v in opts.items():
      m.jax.config.update(k, v)
    yield
  finally:
    for k, v in old.items():
      m.jax.config.update(k, v)


def x64(fn):
  """A snippet run with jax_enable_x64 on."""
  def run(m):
    with config(m, jax_enable_x64=True):
      return fn(m)
  return run


def mask(text):
  """Masks addresses and ids, the machine-dependent parts of printouts."""
  return re.sub(r"0x[0-9a-f]+", "0x…", str(text))


def err(fn, *args, lines=1, **kwargs):
  """`Class: first line(s)` of the exception `fn(*args)` raises (or the value, if none)."""
  try:
    out = fn(*args, **kwargs)
  except Exception as e:  # noqa: BLE001 - the class is part of the result
    return f"{type(e).__name__}: " + "\n".join(str(e).splitlines()[:lines])
  return f"no error: {out!r}"


def warns(fn):
  """The UserWarning texts `fn()` emits, joined by newlines."""
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    fn()
  return "\n".join(str(w.message) for w in caught if issubclass(w.category, UserWarning))


def words(text):
  """The names in a space-separated string (tables of names read better as one string)."""
  return text.split()


def jaxpr(m, fn, *args, **kwargs):
  return str(m.jax.make_jaxpr(fn, **kwargs)(*args))


def seen(transform, fn=None):
  """repr of what the traced function sees: `seen(lambda f: jit(f)(2.0))`."""
  out = []

  def probe(x):
    out.append(repr(x))
    assert str(x) == out[-1]
    return x if fn is None else fn(x)
  transform(probe)
  return out[0]


class Frags(tuple):
  """Expected fragments: each must occur in the output, in this order."""

  def matches(self, text):
    pos = 0
    for frag in self:
      pos = text.find(frag, pos)
      if pos < 0:
        return False
      pos += len(frag)
    return True


Case = collections.namedtuple("Case", "id expected fn marks oracle skip whole")
CASES = []


def case(id, expected, fn, *, xfail=None, skip=None, oracle=True, whole=True):
  """One contract row; `oracle`: True (JAX must print `expected`), a string (JAX's own text where
  jaxlite cannot match by design), a predicate on JAX's text, or False (not run on JAX);
  `whole=False` keeps a fragment row out of the whole-output comparison (ids, paths)."""
  marks = []
  if xfail:
    marks.append(pytest.mark.xfail(strict=True, reason=xfail))
  if skip:
    marks.append(pytest.mark.skip(reason=skip))
  CASES.append(Case(id, expected, fn, marks, oracle, skip, whole))


def check(expected, got):
  if isinstance(expected, Frags):
    assert expected.matches(got), f"fragments {list(expected)} not in order in:\n{got}"
  else:
    assert got == expected


# ================================================================================================
# §1 Printed forms
# ================================================================================================
_KEY2 = ("Array((2,), dtype=key<fry>) overlaying:\n[[1797259609 2579123966]\n"
         " [ 928981903 3453687069]]")

case("1.1/int", "Array([0, 1, 2, 3, 4], dtype=int32)", lambda m: repr(m.jnp.arange(5)))
case("1.1/weak", "Array(1., dtype=float32, weak_type=True)", lambda m: repr(m.jnp.array(1.0)))
case("1.1/sep-six-spaces",
     "Array([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15],      dtype=int32)",
     lambda m: repr(m.jnp.arange(16)))
case("1.1/sep-one-space-at-limit",  # 64 + 11 + 4 = 79 > 75 is the rule's boundary neighbour
     "Array([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13], dtype=int32)",
     lambda m: repr(m.jnp.arange(14)))
case("1.1/wrapped",
     "Array([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12.,\n"
     "       13., 14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25.,\n"
     "       26., 27., 28., 29.], dtype=float32)", lambda m: repr(m.jnp.arange(30.)))
case("1.1/2d-weak", "Array([[1., 1., 1.],\n       [1., 1., 1.]], dtype=float32, weak_type=True)",
     lambda m: repr(m.jnp.full((2, 3), 1.0)))
case("1.1/summarized", "Array([   0,    1,    2, ..., 1997, 1998, 1999], dtype=int32)",
     lambda m: repr(m.jnp.arange(2000)))
case("1.1/size0", "Array([], shape=(0,), dtype=float32) Array([], shape=(2, 0), dtype=float32)",
     lambda m: f"{m.jnp.zeros(0)!r} {m.jnp.zeros((2, 0))!r}")
case("1.1/bool", "Array([ True, False], dtype=bool)", lambda m: repr(m.jnp.array([True, False])))
case("1.1/complex", "Array([1.+2.j, 0.+3.j], dtype=complex64)",
     lambda m: repr(m.jnp.array([1 + 2j, 3j])))
case("1.1/nonfinite", "Array([ nan,  inf, -inf], dtype=float32)",
     lambda m: repr(m.jnp.array([np.nan, np.inf, -np.inf])))
case("1.1/bfloat16", "Array([0, 1, 2], dtype=bfloat16)",
     lambda m: repr(m.jnp.array([0, 1, 2], m.jnp.bfloat16)))
case("1.1/print-options", "Array([0.333, 0.667], dtype=float32)",
     lambda m: _with_printoptions(lambda: repr(m.jnp.array([1 / 3, 2 / 3])), precision=3))
case("1.1/linewidth-sep",  # SEP and wrapping follow NumPy's linewidth, not a fixed 75
     "Array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9],      dtype=int32)\n"
     "Array([ 0,  1,  2,  3,  4,  5,  6,  7,\n        8,  9, 10, 11, 12, 13, 14, 15,\n"
     "       16, 17, 18, 19], dtype=int32)",
     lambda m: _with_printoptions(lambda: f"{m.jnp.arange(10)!r}\n{m.jnp.arange(20)!r}",
                                  linewidth=40))
case("1.1/key", "Array((), dtype=key<fry>) overlaying:\n[ 0 43]", lambda m: repr(m.random.key(43)))
case("1.1/key-split", _KEY2, lambda m: repr(m.random.split(m.random.key(0))))
case("1.1/str", "[0. 1. 2.] 2.5", lambda m: f"{m.jnp.arange(3.)} {m.jnp.array(2.5)}")
case("1.1/format-0d", "0.07520543038845062 0.07520543 0.0752",
     lambda m: (lambda x: f"{x} {x!s} {x:.3}")(m.random.normal(m.random.key(43))))
case("1.1/format-spec", "1.50 [0 1 2]", lambda m: f"{m.jnp.array(1.5):.2f} {m.jnp.arange(3)}")
case("1.1/type", "ArrayImpl", lambda m: type(m.jnp.ones(2)).__name__)
case("1.1/isinstance-array", "True", lambda m: str(all(
    isinstance(v, m.jax.Array) for v in [m.jnp.ones(2), m.random.key(0)])))
case("1.1/isinstance-tracers", "[True, True, True, True]", lambda m: str(
    [_is_array_inside(m, t) for t in ("jit", "vmap", "jvp", "grad")]))


def _with_printoptions(fn, **opts):
  with np.printoptions(**opts):
    return fn()


def _is_array_inside(m, transform):
  out = []

  def f(x):
    out.append(isinstance(x, m.jax.Array))
    return x
  {"jit": lambda: m.jax.jit(f)(1.0), "vmap": lambda: m.jax.vmap(f)(m.jnp.ones(2)),
   "jvp": lambda: m.jax.jvp(f, (1.0,), (1.0,)), "grad": lambda: m.jax.grad(f)(1.0)}[transform]()
  return out[0]


case("1.2/typeof", "float32[3] ~float32[] ShapedArray(float32[3]) "
     "ShapedArray(float32[], weak_type=True)",
     lambda m: "{} {} {!r} {!r}".format(*[m.jax.typeof(v) for v in (m.jnp.ones(3), 1.0)] * 2))
case("1.2/typeof-key", "key<fry>[2] ShapedArray(key<fry>[2])",
     lambda m: (lambda a: f"{a} {a!r}")(m.jax.typeof(m.random.split(m.random.key(0)))))
case("1.2/typeof-sharded", "float32[8@x,2@y]", lambda m: "", skip="sharding not implemented")
case("1.2/eval-shape", "ShapeDtypeStruct(shape=(), dtype=float32, weak_type=True)",
     lambda m: repr(m.jax.eval_shape(lambda x: x * 2, 1.0)))
case("1.2/shape-dtype-struct", "ShapeDtypeStruct(shape=(2,), dtype=float32)",
     lambda m: repr(m.jax.ShapeDtypeStruct((2,), m.jnp.float32)))
case("1.2/pjit", "<PjitFunction of <function f at 0x…>>", lambda m: mask(m.jax.jit(_f)))
case("1.2/key-str-is-repr", "True",
     lambda m: str(str(m.random.split(m.random.key(0))) == repr(m.random.split(m.random.key(0)))))
case("1.2/prngkey", "Array([ 0, 43], dtype=uint32)", lambda m: repr(m.random.PRNGKey(43)))
case("1.2/key-class", "PRNGKeyArray threefry2x32",
     lambda m: f"{type(m.random.key(0)).__name__} {m.random.key_impl(m.random.key(0))}")


def _f(x):
  return x


_f.__name__ = _f.__qualname__ = "f"


# §1.3: what a traced function sees, per transformation and composition.
def _vec(m):
  return m.jnp.ones((4, 3))


TRACERS = [
    ("jit", "JitTracer(int32[5])", lambda m: seen(lambda f: m.jax.jit(f)(m.jnp.arange(5)))),
    ("make_jaxpr", "JitTracer(~float32[])", lambda m: seen(lambda f: m.jax.make_jaxpr(f)(1.0))),
    ("eval_shape", "JitTracer(float32[2,3])",
     lambda m: seen(lambda f: m.jax.eval_shape(f, m.jnp.ones((2, 3))))),
    ("vmap", "VmapTracer(aval=float32[3], batched=float32[4,3])",
     lambda m: seen(lambda f: m.jax.vmap(f)(_vec(m)))),
    ("vmap-in_axes1", "VmapTracer(aval=float32[4], batched=float32[4,3])",
     lambda m: seen(lambda f: m.jax.vmap(f, in_axes=1, out_axes=1)(_vec(m)))),
    ("jvp", "JVPTracer(primal=2.0, tangent=1.0)",
     lambda m: seen(lambda f: m.jax.jvp(f, (2.0,), (1.0,)))),
    ("jvp-vector", "JVPTracer(primal=[1. 1. 1.], tangent=[1. 1. 1.])",
     lambda m: seen(lambda f: m.jax.jvp(f, (m.jnp.ones(3),), (m.jnp.ones(3),)))),
    ("grad", "GradTracer(primal=2.0, typeof(tangent)=f32[])",
     lambda m: seen(lambda f: m.jax.grad(f)(2.0))),
    ("vjp", "GradTracer(primal=[1. 1. 1.], typeof(tangent)=f32[3])",
     lambda m: seen(lambda f: m.jax.vjp(f, m.jnp.ones(3)))),
    ("linearize", "GradTracer(primal=[1. 1. 1.], typeof(tangent)=f32[3])",
     lambda m: seen(lambda f: m.jax.linearize(f, m.jnp.ones(3)))),
    ("jit-vmap", "VmapTracer(aval=float32[3], batched=float32[4,3])",
     lambda m: seen(lambda f: m.jax.jit(m.jax.vmap(f))(_vec(m)))),
    ("vmap-jit", "JitTracer(float32[3])",
     lambda m: seen(lambda f: m.jax.vmap(m.jax.jit(f))(_vec(m)))),
    ("jit-jvp", "JVPTracer(primal=JitTracer(~float32[]), tangent=JitTracer(~float32[]))",
     lambda m: seen(lambda f: m.jax.jit(lambda x: m.jax.jvp(f, (x,), (x,)))(2.0))),
    ("jit-grad", "GradTracer(primal=JitTracer(~float32[]), typeof(tangent)=f32[])",
     lambda m: seen(lambda f: m.jax.jit(m.jax.grad(f))(2.0))),
    ("vmap-grad", ("GradTracer(primal=VmapTracer(aval=float32[], batched=float32[3]), "
     "typeof(tangent)=f32[])"), lambda m: seen(lambda f: m.jax.vmap(m.jax.grad(f))(m.jnp.ones(3)))),
    ("grad-grad", ("GradTracer(primal=GradTracer(primal=2.0, typeof(tangent)=f32[]), "
     "typeof(tangent)=f32[])"), lambda m: seen(lambda f: m.jax.grad(m.jax.grad(f))(2.0))),
]
for _name, _text, _fn in TRACERS:
  case(f"1.3/{_name}", _text, _fn)


def _tracer_classes(m):
  classes = []

  def f(x):
    classes.append(type(x).__name__)
    return x
  m.jax.jit(f)(1.0)
  m.jax.vmap(f)(m.jnp.ones(2))
  m.jax.jvp(f, (1.0,), (1.0,))
  m.jax.grad(f)(1.0)
  return " ".join(classes)


case("1.3/classes", "DynamicJaxprTracer BatchTracer JVPTracer LinearizeTracer", _tracer_classes)
case("1.3/unhashable", "TypeError: unhashable type: 'DynamicJaxprTracer'", lambda m: _unhashable(m))


def _unhashable(m):
  out = []
  m.jax.jit(lambda x: out.append(err(hash, x)) or x)(1.0)
  return out[0]


# ================================================================================================
# §2 Jaxpr text
# ================================================================================================
case("2.1/no-eqns-no-outs", "{ lambda ; . let  in () }", lambda m: jaxpr(m, lambda: ()))
case("2.1/const-only", "{ lambda a:f32[2]; . let  in (a,) }",
     lambda m: jaxpr(m, lambda: np.ones(2, np.float32)))
case("2.1/flat-identity", "{ lambda ; a:f32[]. let  in (a,) }", lambda m: jaxpr(m, _f, 1.0))
case("2.1/two-outs", "{ lambda ; a:f32[]. let b:f32[] = add a 1.0:f32[] in (a, b) }",
     lambda m: jaxpr(m, lambda x: (x, x + 1), 1.0))
case("2.1/no-args-trailing-space",
     "{ lambda ; . let\n    a:f32[3] = iota[dimension=0 dtype=float32 shape=(3,) sharding=None] \n"
     "  in (a,) }", lambda m: jaxpr(m, lambda: m.jnp.arange(3.)))
case("2.1/no-outputs", Frags(["    cond[\n      branches=(\n", "      )\n    ] c b\n  in () }"]),
     lambda m: jaxpr(m, lambda p, x: m.lax.cond(p, lambda x: None, lambda x: None, x), True, 1.0))
# §2.1 says ` }` is outside the group, so the flat width checked against 80 would exclude it; JAX
# counts the closing brace: a jaxpr whose one-line form is exactly 80 columns stays flat, 81 breaks.
# (Contract disagreement; the printer engineer found it, these rows pin JAX's rule.)
_SIN_A = lambda m, *shapes: jaxpr(m, lambda *a: m.jnp.sin(a[0]), *map(m.jnp.ones, shapes))
case("2.1/width-80-flat",
     "{ lambda ; a:f32[100] b:f32[100] c:f32[100,11]. let d:f32[100] = sin a in (d,) }",
     lambda m: _SIN_A(m, 100, 100, (100, 11)))
case("2.1/width-81-broken",
     "{ lambda ; a:f32[100] b:f32[100] c:f32[100,1,1]. let\n    d:f32[100] = sin a\n  in (d,) }",
     lambda m: _SIN_A(m, 100, 100, (100, 1, 1)))
case("2.1/binder-list-wraps-at-80", Frags([
    ("{ lambda ; z:f32[] ba:f32[] bb:f32[] bc:f32[] bd:f32[] be:f32[] bf:f32[] bg:f32[]\n"
    "    bh:f32[]")]), lambda m: jaxpr(m, lambda *a: _two_fs(m)(a[0]), *[1.0] * 26))


def _selu(m):
  def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * m.jnp.where(x > 0, x, alpha * m.jnp.exp(x) - alpha)
  return selu


def _two_fs(m):
  """f1(f0(x)) for two distinct jitted functions named f, 11 eqns each."""
  def make():
    def f(x):
      for _ in range(11):
        x = m.jnp.sin(x)
      return x
    return m.jax.jit(f)
  f0, f1 = make(), make()
  return lambda x: f1(f0(x))


def _inner_twice(m):
  @m.jax.jit
  def inner(x):
    return m.jnp.sin(x) * 2
  return lambda x: inner(inner(x))


def _cond_11(m):
  def eleven(x):
    for _ in range(11):
      x = m.jnp.sin(x)
    return x
  return lambda p, x: m.lax.cond(p, eleven, lambda x: x, x)


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
INNER = """\
let inner = { lambda ; a:f32[]. let
    b:f32[] = sin a
    c:f32[] = mul b 2.0:f32[]
  in (c,) } in
{ lambda ; d:f32[]. let
    e:f32[] = jit[name=inner jaxpr=inner] d
    f:f32[] = jit[name=inner jaxpr=inner] e
  in (f,) }"""

case("2.6/selu", SELU, lambda m: jaxpr(m, _selu(m), m.jnp.arange(5.0)))
case("2.6/jit-selu", JIT_SELU, lambda m: jaxpr(m, m.jax.jit(_selu(m)), m.jnp.arange(5.0)))
case("2.6/cond", COND, lambda m: jaxpr(
    m, lambda p, x: m.lax.cond(p, lambda x: x + 1., lambda x: x * 2., x), True, 1.0))
case("2.6/hoisted-inner", INNER, lambda m: jaxpr(m, _inner_twice(m), 1.0))
case("2.6/grad-sin", Frags(["_:f32[] = sin a", "b:f32[] = cos a", "c:f32[] = mul 1.0:f32[] b",
                            "in (c,)"]), lambda m: jaxpr(m, m.jax.grad(m.jnp.sin), 1.0))
case("2.6/grad-x-sin-x", Frags([
    "b:f32[] = sin a", "c:f32[] = cos a", "_:f32[] = mul a b", "d:f32[] = mul a 1.0:f32[]",
    "e:f32[] = mul 1.0:f32[] b", "f:f32[] = mul d c", "g:f32[] = add_any e f", "in (g,)"]),
    lambda m: jaxpr(m, m.jax.grad(lambda x: x * m.jnp.sin(x)), 1.0))
# The real output breaks both jit eqns' params one per line; the fragments are the contract's.
case("2.6/grad-jit-sin", Frags([
    "_:f32[] b:f32[] = jit[", "name=sin",
    "jaxpr={ lambda ; a:f32[]. let _:f32[] = sin a; b:f32[] = cos a in (_, b) }", "] a",
    "c:f32[] = jit[", "name=sin", ("jaxpr={ lambda ; b:f32[] d:f32[]. let c:f32[] = mul d b in "
    "(c,) }"), "] b 1.0:f32[]"]), lambda m: jaxpr(m, m.jax.grad(m.jax.jit(m.jnp.sin)), 1.0))
case("2.6/fori-static-scan", Frags([
    "_:i32[] b:i32[] = scan[", "jaxpr={ lambda ; c:i32[] d:i32[]. let",
    "e:i32[] = add c 1:i32[]", "f:i32[] = add d c", "in (e, f) }", "length=5", "num_carry=2",
    "num_consts=0", "reverse=False", "unroll=1", "] 0:i32[] a"]),
    lambda m: jaxpr(m, lambda x: m.lax.fori_loop(0, 5, lambda i, c: c + i, x), 1))
case("2.6/fori-traced-while", Frags([
    "_:i32[] _:i32[] c:i32[] = while[", "body_jaxpr=", "body_nconsts=0", "cond_jaxpr=",
    "cond_nconsts=0", "] 0:i32[] a b"]),
    lambda m: jaxpr(m, lambda n, x: m.lax.fori_loop(0, n, lambda i, c: c + i, x), 5, 1))
case("2.6/two-distinct-f", Frags([
    ("let f = { lambda ; a:f32[]. let\n    b:f32[] = sin a\n    c:f32[] = sin b\n"
    "    d:f32[] = sin c\n    e:f32[] = sin d\n    g:f32[] = sin e\n    h:f32[] = sin g\n"),
    "let f1 = { lambda ; n:f32[]. let", "{ lambda ; z:f32[]. let",
    "ba:f32[] = jit[name=f jaxpr=f] z", "bb:f32[] = jit[name=f jaxpr=f1] ba"]),
    lambda m: jaxpr(m, _two_fs(m), 1.0))
case("2.6/cond-branch-11-eqns", Frags([
    "let jaxpr = { lambda ; a:f32[]. let", "{ lambda ; m:bool[] n:f32[]. let",
    "cond[branches=({ lambda ; q:f32[]. let  in (q,) } jaxpr)] o n"]),
    lambda m: jaxpr(m, _cond_11(m), True, 1.0))
case("2.6/var-hoisted", Frags([
    "let _var = { lambda ; a:f32[3] b:i32[]. let",
    "{ lambda ; p:f32[3]. let q:f32[] = jit[name=_var jaxpr=_var] p 0:i32[] in (q,) }"]),
    lambda m: jaxpr(m, m.jnp.var, m.jnp.ones(3)))
case("2.6/donate-argnums",
     Frags(["name=<lambda>\n      donated_invars=(True, False)\n      jaxpr="]),
     lambda m: jaxpr(m, m.jax.jit(lambda x, y: x + y, donate_argnums=0), 1.0, 2.0))
case("2.6/keep-unused",
     Frags(["name=<lambda>\n      jaxpr=", "\n      keep_unused=True\n    ] a b"]),
     lambda m: jaxpr(m, m.jax.jit(lambda x, y: x, keep_unused=True), 1.0, 2.0))

# §1.2 jaxpr short dtypes
case("1.2/short-dtypes", "{ lambda ; a:bool[] b:i8[] c:i16[] d:i32[] e:u8[] f:u16[] g:u32[] "
     "h:bf16[] i:f16[]\n    j:f32[] k:c64[] l:f8_e4m3fn[] m:f8_e5m2[] n:i4[]. let\n    \n"
     "  in (a, b, c, d, e, f, g, h, i, j, k, l, m, n) }", lambda m: jaxpr(m, lambda *a: a, *[
         m.jnp.zeros((), bool if n == "bool" else getattr(m.jnp, n)) for n in words(
             "bool int8 int16 int32 uint8 uint16 uint32 bfloat16 float16 float32 complex64 "
             "float8_e4m3fn float8_e5m2 int4")]))
case("1.2/short-dtypes-x64", "{ lambda ; a:i64[] b:u64[] c:f64[] d:c128[]. let  in (a, b, c, d) }",
     x64(lambda m: jaxpr(m, lambda *a: a, *[m.jnp.zeros((), n) for n in words(
         "int64 uint64 float64 complex128")])))
case("1.2/short-dtypes-key-float0", "{ lambda ; a:key<fry>[]. let  in (a,) } "
     "{ lambda ; a:i32[]. let _:i32[] = mul a 2:i32[] in ((b'',):float0[],) }",
     lambda m: jaxpr(m, lambda k: k, _K(m)) + " " + jaxpr(
         m, lambda x: m.jax.vjp(lambda y: y * 2, x)[1](m.jnp.int32(1)), 1))

# §2.2 names
case("2.2/base26-skips-hoisted-name", Frags(["    e:f32[] = sin d\n    g:f32[] = sin e"]),
     lambda m: jaxpr(m, _two_fs(m), 1.0))
case("2.2/base-26-names", "a z ba zz baa bax", lambda m: " ".join(
    re.findall(r"(\w+):f32\[\]", jaxpr(m, lambda *a: a[-1], *[1.0] * 700))[i]
    for i in (0, 25, 26, 675, 676, 699)))
case("2.2/underscore-top-level-only", "{ lambda ; a:f32[]. let _:f32[] = sin a in (a,) }",
     lambda m: jaxpr(m, lambda x: (m.jnp.sin(x), x)[1], 1.0))
case("2.2/jit-outer-underscore-names-inner", Frags([
    "_:f32[] b:f32[] = jit[", "_:f32[] = mul a 2.0:f32[]", "b:f32[] = add a 1.0:f32[]",
    "in (_, b) }"]), lambda m: jaxpr(m, lambda x: m.jax.jit(lambda y: (y * 2, y + 1))(x)[1], 1.0))
case("2.2/jit-inner-identity",
     "{ lambda ; a:f32[]. let\n    b:f32[] = jit[name=<lambda> jaxpr={ lambda ; a:f32[]. let  in "
     "(a,) }] a\n  in (b,) }", lambda m: jaxpr(m, m.jax.jit(lambda y: y), 1.0))
case("2.2/jit-var-passed-twice",
     Frags(["jaxpr={ lambda ; a:f32[] c:f32[]. let b:f32[] = mul a c in (b,) }", "] a a"]),
     lambda m: jaxpr(m, lambda x: m.jax.jit(lambda y, z: y * z)(x, x), 1.0))
case("2.2/cond-branches-fresh-names", Frags(["{ lambda ; e:f32[]. let f:f32[] ="]),
     lambda m: jaxpr(m, lambda p, x: m.lax.cond(p, lambda x: x + 1., lambda x: x * 2., x),
                     True, 1.0))

# §2.3 literals and constants
_X3 = lambda m, dt="float32": m.jnp.ones(3, dt)
LITERALS = [
    ("weak-partner", "mul a 0.1:f32[]", lambda m: jaxpr(m, lambda x: x * 0.1, 1.0)),
    ("lax-direct", "mul a 1.67:f32[]", lambda m: jaxpr(m, lambda x: m.lax.mul(x, 1.67), _X3(m))),
    ("jnp-cast", "mul a 0.10000000149011612:f32[]",
     lambda m: jaxpr(m, lambda x: x * 0.1, _X3(m))),
    ("jnp-cast-left", "mul 1.6699999570846558:f32[] b",
     lambda m: jaxpr(m, lambda x: 1.67 * m.jnp.exp(x), _X3(m))),
    ("f16", "mul a 0.0999755859375:f16[]",
     lambda m: jaxpr(m, lambda x: x * 0.1, _X3(m, "float16"))),
    ("bf16", "mul a 0.10009765625:bf16[]",
     lambda m: jaxpr(m, lambda x: x * 0.1, _X3(m, m.jnp.bfloat16))),
    ("numpy-scalar", "add a 2.0:f32[]", lambda m: jaxpr(m, lambda x: x + np.float32(2), _X3(m))),
    ("numpy-0d", "add a 2.0:f32[]",
     lambda m: jaxpr(m, lambda x: x + np.array(2, np.float32), _X3(m))),
    ("int", "add a 1:i32[]", lambda m: jaxpr(m, lambda i: i + 1, _X3(m, "int32"))),
    ("negative-int", "mul a -3:i32[]", lambda m: jaxpr(m, lambda i: i * -3, _X3(m, "int32"))),
    ("bool", "and a True:bool[]",
     lambda m: jaxpr(m, lambda b: m.jnp.logical_and(b, True), _X3(m, "bool"))),
    ("u8", "add a 3:u8[]", lambda m: jaxpr(m, lambda u: u + 3, _X3(m, "uint8"))),
    ("u32", "add a 4294967295:u32[]",
     lambda m: jaxpr(m, lambda u: u + np.uint32(4294967295), _X3(m, "uint32"))),
    ("nan", "add a nan:f32[]", lambda m: jaxpr(m, lambda x: x + np.nan, _X3(m))),
    ("-inf", "add a -inf:f32[]", lambda m: jaxpr(m, lambda x: x + -np.inf, _X3(m))),
    ("1e+20", "add a 1e+20:f32[]", lambda m: jaxpr(m, lambda x: m.lax.add(x, 1e20), _X3(m))),
    ("complex", "add a (1+2j):c64[]",
     lambda m: jaxpr(m, lambda x: x + (1 + 2j), _X3(m, "complex64"))),
    ("output-literal", "{ lambda ; a:f32[]. let  in (a, 2:i32[]) }",
     lambda m: jaxpr(m, lambda x: (x, 2), 1.0)),
]
for _name, _frag, _fn in LITERALS:
  case(f"2.3/{_name}", Frags([_frag]), _fn)
case("2.3/numpy-const", "{ lambda a:f32[3]; b:f32[3]. let c:f32[3] = add b a in (c,) }",
     lambda m: (lambda c: jaxpr(m, lambda x: x + c, _X3(m)))(np.ones(3, np.float32)))
case("2.3/jax-array-const", "{ lambda a:f32[3]; b:f32[3]. let c:f32[3] = add b a in (c,) }",
     lambda m: (lambda c: jaxpr(m, lambda x: x + c, _X3(m)))(m.jnp.ones(3)))
case("2.3/one-constvar-per-object", Frags(["{ lambda a:f32[3]; b:f32[3]. let", "add b a",
                                            "add c a"]),
     lambda m: (lambda c: jaxpr(m, lambda x: x + c + c, _X3(m)))(np.ones(3, np.float32)))
case("2.3/const-in-nested-jit",
     Frags(["jaxpr={ lambda c:f32[2]; a:f32[2]. let b:f32[2] = add a c in (b,) }"]),
     lambda m: (lambda c: jaxpr(m, lambda x: m.jax.jit(lambda y: y + c)(x), m.jnp.ones(2)))(
         np.ones(2, np.float32)))
case("2.3/captured-tracer-leading-arg",
     Frags(["jaxpr={ lambda ; a:f32[] c:f32[]. let b:f32[] = add a c in (b,) }", "] a 2.0:f32[]"]),
     lambda m: jaxpr(m, lambda x: m.jax.jit(lambda y: x + y)(2.0), 1.0))
# A 0-d jax Array is a literal only when made during the trace (a tracer of it in JAX); one made
# before it, eagerly or under an enclosing trace, is a const (tests/test_literal_or_const.py).
case("2.3/jax-array-0d-closed-over-is-const",
     "{ lambda a:f32[]; b:f32[]. let c:f32[] = mul b a in (c,) }",
     lambda m: (lambda c: jaxpr(m, lambda x: x * c, 1.0))(m.jnp.array(2.0)))
case("2.3/jax-array-0d-made-inside-is-literal", "{ lambda ; a:f32[]. let b:f32[] = mul a 0.5:f32[] in (b,) }",
     lambda m: jaxpr(m, lambda x: x * m.jnp.array(0.5), 1.0))
case("2.3/jax-array-0d-of-outer-trace-leading-arg",
     Frags(["jaxpr={ lambda ; c:f32[] a:f32[]. let b:f32[] = add a c in (b,) }", "] 0.0:f32[] a"]),
     lambda m: jaxpr(m, lambda x: (lambda w: m.jax.jit(lambda y: y + w)(x))(m.jnp.array(0.0)),
                     1.0))
case("2.3/no-dce", "{ lambda ; a:f32[]. let _:f32[] = sin a in (a,) }",
     lambda m: jaxpr(m, lambda x: (m.jnp.sin(x), x)[1], 1.0))

# §2.4 params
_A34 = lambda m: m.jnp.ones((3, 4))
PARAMS = [
    ("batched-broadcast-np-int", "broadcast_in_dim[broadcast_dimensions=(0, np.int64(2))]",
     lambda m: jaxpr(m, m.jax.vmap(lambda x: m.jnp.broadcast_to(x, (2, 3)), in_axes=1), _A34(m))),
    ("batched-reduce-sum-np-int", "reduce_sum[axes=(np.int64(0),) out_sharding=None]",
     lambda m: jaxpr(m, m.jax.vmap(m.jnp.sum, in_axes=1), _A34(m))),
    ("batched-split-np-int", ("split[\n      axis=0\n      sizes=(np.int64(1), np.int64(1), "
     "np.int64(1))\n    ]"), lambda m: jaxpr(m, m.jax.vmap(lambda x: m.jnp.split(x, 3), in_axes=1),
                                           _A34(m))),
    ("slice-transpose-pad", "pad[padding_config=((1, np.int64(0), 0),)]",
     lambda m: jaxpr(m, m.jax.grad(lambda x: x[1:].sum()), m.jnp.ones(3))),
    ("sorted-keys", "sort[dimension=0 is_stable=True num_keys=1]",
     lambda m: jaxpr(m, m.jnp.argsort, m.jnp.ones(3))),
    ("accuracy-dropped", "b:f32[] = exp a", lambda m: jaxpr(m, m.jnp.exp, 1.0)),
    ("mul-out-dtype-dropped", "b:f32[] = mul a a", lambda m: jaxpr(m, lambda x: x * x, 1.0)),
    ("convert-sharding-dropped", "convert_element_type[new_dtype=float32 weak_type=False] a",
     lambda m: jaxpr(m, lambda x: x.astype("float32"), m.jnp.ones(3, "int32"))),
    ("broadcast-in-dim-scalar", "b:f32[3] = broadcast_in_dim 0.0:f32[]",
     lambda m: jaxpr(m, lambda x: m.jnp.zeros(3) + x, 1.0)),
    ("dot-general-lists", ("dot_general[\n      dimension_numbers=(([1], [0]), ([], []))\n"
     "      preferred_element_type=float32\n    ] a b"),
     lambda m: jaxpr(m, lambda a, b: a @ b, m.jnp.ones((3, 4)), m.jnp.ones((4, 5)))),
    ("jit-name-first-defaults-dropped", ("b:f32[] = jit[\n      name=<lambda>\n      jaxpr={ "
     "lambda ; a:f32[]. let b:f32[] = add a 1.0:f32[] in (b,) }\n    ] a"),
     lambda m: jaxpr(m, m.jax.jit(lambda x: x + 1), 1.0)),
    ("custom-jvp-call", "custom_jvp_call[\n      name=relu\n      call_jaxpr={",
     lambda m: jaxpr(m, m.nn.relu, 1.0)),
    ("custom-jvp-call-rest", "  jvp=jvp\n      symbolic_zeros=False\n    ] a",
     lambda m: jaxpr(m, m.nn.relu, 1.0)),
    ("custom-vjp-call", "custom_vjp_call[\n      name=f\n      bwd=f_bwd\n      call_jaxpr={",
     lambda m: jaxpr(m, _custom_vjp(m), 1.0)),
    ("custom-vjp-call-rest", "  fwd=f_fwd\n      symbolic_zeros=False\n    ] a",
     lambda m: jaxpr(m, _custom_vjp(m), 1.0)),
    ("custom-jvp-num-consts",
     "  jvp=jvp\n      num_consts=1\n      symbolic_zeros=False\n    ] b a",
     lambda m: jaxpr(m, lambda x, y: _custom_jvp_closing_over(m, y)(x), 1.0, 2.0)),
    ("functions-by-name", "bwd=<lambda>",
     lambda m: jaxpr(m, _custom_vjp(m, bwd=lambda r, g: (g,)), 1.0)),
]
for _name, _frag, _fn in PARAMS:
  case(f"2.4/{_name}", Frags([_frag]), _fn)


def _custom_vjp(m, bwd=None):
  @m.jax.custom_vjp
  def f(x):
    return m.jnp.sin(x)

  def f_fwd(x):
    return f(x), x

  def f_bwd(x, g):
    return (g * m.jnp.cos(x),)
  f.defvjp(f_fwd, bwd or f_bwd)
  return f


def _custom_jvp_closing_over(m, c):

  @m.jax.custom_jvp
  def f(x):
    return m.jnp.sin(x) * c

  @f.defjvp
  def jvp(primals, tangents):
    return f(*primals), tangents[0] * c
  return f


case("2.4/custom-jvp-array-const-as-num-consts", Frags([
    "{ lambda a:f32[3]; b:f32[]. let", "call_jaxpr={ lambda ; d:f32[3] e:f32[]. let",
    "num_consts=1", "] a b"]),
    lambda m: jaxpr(m, _custom_jvp_closing_over(m, np.ones(3, np.float32)), 1.0))


# §2.5 hoisting
case("2.5/lambda-name-stripped", Frags(["let lambda = { lambda ; a:f32[]. let",
                                        "jit[name=<lambda> jaxpr=lambda] d"]),
     lambda m: (lambda g: jaxpr(m, lambda x: g(g(x)), 1.0))(m.jax.jit(lambda x: x * 2.0 + 1.0)))
case("2.5/same-object-per-trace", Frags(["let f = {", "jit[name=f jaxpr=f] by",
                                         "jit[name=f jaxpr=f1] bz", "jit[name=f jaxpr=f1] ca",
                                         "jit[name=f jaxpr=f] cb"]),
     lambda m: jaxpr(m, lambda *a: (lambda g0, g1: g0(g1(g1(g0(a[-1])))))(*_two_jits(m)),
                     *[1.0] * 26))


case("2.5/nested-counts-again", "let f = { lambda ; a:f32[]. let\n    b:f32[] = jit[name=g "
     "jaxpr=g] a\n    c:f32[] = mul b 2.0:f32[]\n  in (c,) } in\nlet g = { lambda ; d:f32[]. let "
     "e:f32[] = sin d in (e,) } in\n{ lambda ; h:f32[]. let\n    i:f32[] = jit[name=f jaxpr=f] "
     "h\n    j:f32[] = jit[name=f jaxpr=f] i\n  in (j,) }", lambda m: _nested_jits(m))


def _nested_jits(m):
  """g used once inside f, f twice: g's one occurrence counts once per occurrence of f."""
  @m.jax.jit
  def g(x):
    return m.jnp.sin(x)

  @m.jax.jit
  def f(x):
    return g(x) * 2
  return jaxpr(m, lambda x: f(f(x)), 1.0)


def _two_jits(m):
  g = _two_fs(m)
  return g.__closure__[0].cell_contents, g.__closure__[1].cell_contents


# ================================================================================================
# §3 dtypes
# ================================================================================================
_GOTCHAS = ("To enable more dtypes, set the jax_enable_x64 configuration option or the "
            "JAX_ENABLE_X64 shell environment variable. See "
            "https://github.com/jax-ml/jax#current-gotchas for more.")
_F64 = lambda m: m.jnp.float64


def _truncation(where, name="float64", to="float32"):
  return f"Explicitly requested dtype {name}{where} is not available, and will be truncated to " \
         f"dtype {to}. {_GOTCHAS}"


def _quiet(fn):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    return fn()


case("3.1/canonicalize-at-creation", "int32 uint32 float32 complex64", lambda m: " ".join(
    str(_quiet(lambda d=d: m.jnp.zeros(1, d)).dtype) for d in ("int64", "uint64", "float64",
                                                            "complex128")))
case("3.1/numpy-inputs-canonicalized", "float32 int32",
     lambda m: f"{m.jnp.asarray(np.ones(2)).dtype} {m.jnp.asarray(np.arange(2)).dtype}")
case("3.1/python-scalars", "~int32[] ~float32[] ~complex64[]",
     lambda m: " ".join(str(m.jax.typeof(v)) for v in (1, 1.0, 1j)))
for _fn, _call in [("array", lambda m: m.jnp.array(1., _F64(m))),
                   ("asarray", lambda m: m.jnp.asarray(1., _F64(m))),
                   ("zeros", lambda m: m.jnp.zeros(2, _F64(m))),
                   ("ones", lambda m: m.jnp.ones(2, _F64(m))),
                   ("arange", lambda m: m.jnp.arange(2, dtype=_F64(m))),
                   ("astype", lambda m: m.jnp.ones(2).astype(_F64(m)))]:
  case(f"3.1/explicit-x64-warning-{_fn}", _truncation(f" requested in {_fn}"),
       lambda m, _call=_call: warns(lambda: _call(m)))
case("3.1/explicit-x64-warning-int64", _truncation(" requested in ones", "int64", "int32"),
     lambda m: warns(lambda: m.jnp.ones(2, m.jnp.int64)))
for _fn, _call in [("uniform", lambda m: m.random.uniform(m.random.key(0), (2,), _F64(m))),
                   ("normal", lambda m: m.random.normal(m.random.key(0), (2,), _F64(m))),
                   ("randint", lambda m: m.random.randint(m.random.key(0), (2,), 0, 3,
                                                          m.jnp.int64))]:
  case(f"3.1/explicit-x64-warning-absent-{_fn}",
       _truncation("", *(("int64", "int32") if _fn == "randint" else ())),
       lambda m, _call=_call: warns(lambda: _call(m)))
case("3.1/explicit-x64-error-mode",
     "ValueError: Explicitly requested dtype float64 requested in zeros is not available. To "
     "enable more dtypes, set the jax_enable_x64 or allow_explicit_x64_dtypes configuration "
     "options.See https://github.com/jax-ml/jax#current-gotchas for more.",
     lambda m: _in_mode(m, "error", lambda: err(m.jnp.zeros, 2, _F64(m))))
case("3.1/explicit-x64-allow-mode", "0 Array([0., 0.], dtype=float64)",
     lambda m: _in_mode(m, "allow", lambda: (lambda w: f"{len(w)} {m.jnp.zeros(2, _F64(m))!r}")(
         warns(lambda: m.jnp.zeros(2, _F64(m))).splitlines()[:0])),
     xfail="jax_explicit_x64_dtypes=allow silences the warning but still truncates to float32: "
           "JAX then makes real float64 arrays with x64 off, which dtypes.canonicalize_dtype "
           "(always 32-bit when x64 is off) cannot express without a redesign",
     # the oracle's side: real JAX shares this process's jaxlib with the xla backend
     skip="on the xla backend: real JAX imported after jaxlib's batched_device_put ran (jaxlite's "
          "transfers) dispatches a float64 scalar as float32 under jax_explicit_x64_dtypes="
          "'allow' (XLA's RuntimeProgramInputMismatch); in a fresh process JAX prints the row"
     if xla_is_default() else None)


def _in_mode(m, mode, fn):
  with config(m, jax_explicit_x64_dtypes=mode):
    return fn()


case("3.1/x64-arange", "Array([0, 1, 2], dtype=int64)", x64(lambda m: repr(m.jnp.arange(3))))
case("3.1/x64-python-scalars", "~int64[] ~float64[] ~complex128[]",
     x64(lambda m: " ".join(str(m.jax.typeof(v)) for v in (1, 1.0, 1j))))
case("3.1/x64-big-int", "Array(1099511627776, dtype=int64, weak_type=True)",
     x64(lambda m: repr(m.jnp.array(2**40))))
case("3.1/x64-overflow", "OverflowError: Python int 9223372036854775808 too large to convert to "
     "int64", x64(lambda m: err(m.jnp.array, 2**63)))

# §3.2 weak types and constructor results (x32)
_W = lambda m: m.jnp.array(1.0)
WEAK_TABLE = [
    ("typeof-scalars", "~int32[] ~float32[] ~complex64[] bool[] float32[]",
     lambda m: " ".join(str(m.jax.typeof(v)) for v in (1, 1.0, 1j, True, m.jnp.float32(1)))),
    ("arange-int", "Array([0, 1, 2, 3, 4], dtype=int32)", lambda m: m.jnp.arange(5)),
    ("arange-float", "Array([0., 1., 2., 3., 4.], dtype=float32)", lambda m: m.jnp.arange(5.0)),
    ("arange-step", "Array([0.  , 0.25, 0.5 , 0.75], dtype=float32)",
     lambda m: m.jnp.arange(0, 1, 0.25)),
    ("array-int-list", "Array([1, 2], dtype=int32)", lambda m: m.jnp.array([1, 2])),
    ("array-mixed-list", "Array([1. , 2.5], dtype=float32)", lambda m: m.jnp.array([1, 2.5])),
    ("array-true", "Array(True, dtype=bool)", lambda m: m.jnp.array(True)),
    ("array-np-float32", "Array(3., dtype=float32)", lambda m: m.jnp.array(np.float32(3))),
    ("array-1", "Array(1, dtype=int32, weak_type=True)", lambda m: m.jnp.array(1)),
    ("array-1.0", "Array(1., dtype=float32, weak_type=True)", lambda m: m.jnp.array(1.0)),
    ("array-1j", "Array(0.+1.j, dtype=complex64, weak_type=True)", lambda m: m.jnp.array(1j)),
    ("float32-ctor", "Array(1., dtype=float32) ArrayImpl",
     lambda m: f"{m.jnp.float32(1)!r} {type(m.jnp.float32(1)).__name__}"),
    ("zeros", "Array([0., 0., 0.], dtype=float32)", lambda m: m.jnp.zeros(3)),
    ("ones-int", "Array([1, 1], dtype=int32)", lambda m: m.jnp.ones((2,), int)),
    ("full-weak", "Array([3, 3], dtype=int32, weak_type=True)", lambda m: m.jnp.full((2,), 3)),
    ("int-plus-weak-float", "Array([1., 2., 3.], dtype=float32, weak_type=True)",
     lambda m: m.jnp.arange(3) + 1.0),
    ("plus-numpy-float64", "Array([2., 2.], dtype=float32)",
     lambda m: m.jnp.ones(2) + np.float64(1)),
    ("asarray-numpy", "Array([1., 1.], dtype=float32)", lambda m: m.jnp.asarray(np.ones(2))),
    ("int8-plus-1", "Array(2, dtype=int8)", lambda m: m.jnp.int8(1) + 1),
    ("int8-wraps", "Array(-23, dtype=int8)", lambda m: m.jnp.int8(1) + 1000),
    ("float16-plus-1.0", "Array(2., dtype=float16)", lambda m: m.jnp.float16(1) + 1.0),
    ("jnp-add-int-float", "Array(2., dtype=float32, weak_type=True)", lambda m: m.jnp.add(1, 1.0)),
    ("jnp-add-ints", "Array(3, dtype=int32, weak_type=True)", lambda m: m.jnp.add(1, 2)),
    ("lax-add-floats", "Array(3., dtype=float32, weak_type=True)", lambda m: m.lax.add(1., 2.)),
    ("bool-plus-true", "Array(True, dtype=bool)", lambda m: m.jnp.array(True) + True),
    ("bool-times-1", "Array(1, dtype=int32, weak_type=True)", lambda m: m.jnp.array(True) * 1),
    ("int-true-divide", "Array([0. , 0.5, 1. ], dtype=float32)", lambda m: m.jnp.arange(3) / 2),
    ("int-floor-divide", "Array([0, 0, 1], dtype=int32)", lambda m: m.jnp.arange(3) // 2),
    ("weak-comparison", "Array(True, dtype=bool, weak_type=True)",
     lambda m: m.jnp.array(1.0) > 0),
    ("strong-sum-astype-list", "float32[] float32[] float32[2]", lambda m: " ".join(
        str(m.jax.typeof(v)) for v in (m.jnp.sum(_W(m)), _W(m).astype("float32"),
                                       m.jnp.array([_W(m), _W(m)])))),
    ("mean-of-ints", "Array(1.5, dtype=float32)", lambda m: m.jnp.mean(m.jnp.arange(4))),
    ("weak-stays-weak", "~float32[2] ~float32[] ~float32[] ~float32[]", lambda m: " ".join(
        str(m.jax.typeof(v)) for v in (m.jnp.stack([_W(m), _W(m)]), m.jnp.sin(_W(m)), -_W(m),
                                       _W(m) * _W(m)))),
    ("jit-identity", "Array(1., dtype=float32, weak_type=True)",
     lambda m: m.jax.jit(lambda x: x)(1.0)),
    ("grad", "Array(2., dtype=float32, weak_type=True)",
     lambda m: m.jax.grad(lambda x: x * x)(1.0)),
    ("int32-overflow", "OverflowError: Python int 2147483648 too large to convert to int32",
     lambda m: err(m.jnp.array, 2**31)),
    ("uint32-fits", "Array(2147483648, dtype=uint32)",
     lambda m: m.jnp.array(2**31, dtype=m.jnp.uint32)),
    ("lax-add-mixed", ("TypeError: lax.add requires arguments to have the same dtypes, got int32, "
     "float32. (Tip: jnp.add is a similar function that does automatic type promotion on "
     "inputs)."), lambda m: err(m.lax.add, 1, 1.0)),
]
for _name, _text, _fn in WEAK_TABLE:
  case(f"3.2/{_name}", _text, lambda m, _fn=_fn: (lambda v: v if isinstance(v, str) else repr(v))(
      _fn(m)))
case("3.2/weak-in-cache-key", "2", lambda m: str(_trace_count(m, [1.0, m.jnp.float32(1.0)])))


def _trace_count(m, args, **jit_kwargs):
  """How many times one jitted function traces when called on each of `args` in turn."""
  count = [0]

  def f(x):
    count[0] += 1
    return x
  g = m.jax.jit(f, **jit_kwargs)
  for a in args:
    g(*a) if isinstance(a, tuple) else g(a)
  return count[0]


# §3.3 lattice, strict mode, TypePromotionError
case("3.3/promote-types-no-canonicalize", "float64",
     lambda m: str(m.jnp.promote_types(np.uint64, np.int64)))
case("3.3/x32-uint32-int32", "int32", lambda m: str(m.jnp.result_type(np.uint32, np.int32)))
case("3.3/x32-uint64-acts-as-uint32", "int32",
     lambda m: str(_quiet(lambda: m.jnp.result_type(np.uint64, np.int32))))
case("3.3/float8-no-path",
     "TypePromotionError: Input dtypes ('float8_e4m3fn', 'float16') have no available implicit "
     "dtype promotion path. To avoid unintended promotion, 8-bit floats do not support implicit "
     "promotion. If you'd like your inputs to be promoted to another type, you can do so "
     "explicitly using e.g. x.astype('float32')",
     lambda m: err(lambda: m.jnp.zeros(2, m.jnp.float8_e4m3fn) + m.jnp.zeros(2, "float16")),
     oracle=lambda got: got.startswith("TypePromotionError: Input dtypes (") and "have no "
     "available implicit dtype promotion path. To avoid" in got)  # JAX: set order, varies
case("3.3/strict-error",
     "TypePromotionError: Input dtypes ('float32', 'int32') have no available implicit dtype "
     "promotion path when jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the "
     "desired output type, or set jax_numpy_dtype_promotion=standard.",
     lambda m: _strict(m, lambda: err(lambda: m.jnp.ones(2) + m.jnp.ones(2, "int32"))),
     # JAX lists the dtypes in set order, which varies between processes
     oracle=lambda got: got.replace("('int32', 'float32')", "('float32', 'int32')") == (
         "TypePromotionError: Input dtypes ('float32', 'int32') have no available implicit dtype "
         "promotion path when jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to "
         "the desired output type, or set jax_numpy_dtype_promotion=standard."))
case("3.3/strict-allows-weak", "Array([2., 2.], dtype=float32)",
     lambda m: _strict(m, lambda: repr(m.jnp.ones(2) + 1)))
case("3.3/strict-same-kind-widening", "TypePromotionError",
     lambda m: _strict(m, lambda: err(lambda: m.jnp.ones(2) + m.jnp.ones(2, "float16")))
     .split(":")[0])
case("3.3/type-promotion-error-class", "True",
     lambda m: str(issubclass(m.dtypes.TypePromotionError, ValueError)))


def _strict(m, fn):
  with config(m, jax_numpy_dtype_promotion="strict"):
    return fn()


# §3.4 the x32 result table, rebuilt from `jnp.add` on a value of each type (weak: Python scalars)
RESULT_TABLE = """\
        b1   u8  u16  u32   i8  i16  i32 bf16  f16  f32  c64   i*   f*   c*
   b1   b1   u8  u16  u32   i8  i16  i32 bf16  f16  f32  c64 i32* f32* c64*
   u8   u8   u8  u16  u32  i16  i16  i32 bf16  f16  f32  c64   u8 f32* c64*
  u16  u16  u16  u16  u32  i32  i32  i32 bf16  f16  f32  c64  u16 f32* c64*
  u32  u32  u32  u32  u32  i32  i32  i32 bf16  f16  f32  c64  u32 f32* c64*
   i8   i8  i16  i32  i32   i8  i16  i32 bf16  f16  f32  c64   i8 f32* c64*
  i16  i16  i16  i32  i32  i16  i16  i32 bf16  f16  f32  c64  i16 f32* c64*
  i32  i32  i32  i32  i32  i32  i32  i32 bf16  f16  f32  c64  i32 f32* c64*
 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16  f32  f32  c64 bf16 bf16  c64
  f16  f16  f16  f16  f16  f16  f16  f16  f32  f16  f32  c64  f16  f16  c64
  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  c64  f32  f32  c64
  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64
   i* i32*   u8  u16  u32   i8  i16  i32 bf16  f16  f32  c64 i32* f32* c64*
   f* f32* f32* f32* f32* f32* f32* f32* bf16  f16  f32  c64 f32* f32* c64*
   c* c64* c64* c64* c64* c64* c64* c64*  c64  c64  c64  c64 c64* c64* c64*"""
_SHORT = {"bool": "b1", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
          "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "bfloat16": "bf16",
          "float16": "f16", "float32": "f32", "float64": "f64", "complex64": "c64",
          "complex128": "c128"}
_LONG = {v: k for k, v in _SHORT.items()}


def _value_of(m, t):
  if t.endswith("*"):
    return {"i": 1, "f": 1.0, "c": 1j}[t[0]]
  return m.jnp.zeros((), m.jnp.bfloat16 if t == "bf16" else _LONG[t])


def _result(m, a, b):
  # JAX compiles each eager add (10 s for the table); its eval_shape gives the same types.
  add = m.jnp.add if m is LITE else functools.partial(m.jax.eval_shape, m.jnp.add)
  out = add(_value_of(m, a), _value_of(m, b))
  return _SHORT[str(out.dtype)] + ("*" if out.weak_type else "")


def _result_table(m, types):
  lines = ["     " + "".join(f"{t:>5}" for t in types)]
  for a in types:
    lines.append(f"{a:>5}" + "".join(f"{_result(m, a, b):>5}" for b in types))
  return "\n".join(lines)


case("3.4/x32-table", RESULT_TABLE,
     lambda m: _result_table(m, RESULT_TABLE.splitlines()[0].split()))
X64_DIFFERENCES = [("u32", "i8", "i64"), ("u32", "i16", "i64"), ("u32", "i32", "i64"),
                   ("i64", "u8", "i64"), ("i64", "u32", "i64"), ("u64", "i8", "f64*"),
                   ("u64", "i64", "f64*"), ("f64", "i64", "f64"), ("f64", "bf16", "f64"),
                   ("f64", "f16", "f64"), ("f64", "f32", "f64"), ("f64", "c64", "c128"),
                   ("c128", "c64", "c128"), ("i*", "i*", "i64*"), ("f*", "i*", "f64*"),
                   ("c*", "f*", "c128*"), ("f*", "b1", "f64*")]
case("3.4/x64-differences", " ".join(r for _, _, r in X64_DIFFERENCES),
     x64(lambda m: " ".join(_result(m, a, b) for a, b, _ in X64_DIFFERENCES)))


# ================================================================================================
# §4 PRNG
# ================================================================================================
_SEEDS = [0, 43, -1, -2, 2**31, -2**31, -2**31 - 1, 2**32, 2**32 + 7, 2**40 + 5, 2**63 - 1, -2**63]
_SEED_X32 = ("[0, 0] [0, 43] [0, 4294967295] [0, 4294967294] [0, 2147483648] [0, 2147483648] "
             "[0, 2147483647] [0, 0] [0, 7] [0, 5] [0, 4294967295] [0, 0]")
_SEED_X64 = ("[0, 0] [0, 43] [4294967295, 4294967295] [4294967295, 4294967294] [0, 2147483648] "
             "[4294967295, 2147483648] [4294967295, 2147483647] [1, 0] [1, 7] [256, 5] "
             "[2147483647, 4294967295] [2147483648, 0]")
_SCALAR_SEEDS = lambda m: [np.uint32(4294967295), m.jnp.int32(-1)]


def _key_data(m, seed):
  return str(m.random.key_data(m.random.key(seed)).tolist())


def _keys(m, keys):
  return str(m.random.key_data(keys).tolist())


_K = lambda m, seed=0: m.random.key(seed)

case("4.1/seeds-x32", _SEED_X32, lambda m: " ".join(_key_data(m, s) for s in _SEEDS))
case("4.1/seeds-x64", _SEED_X64, x64(lambda m: " ".join(_key_data(m, s) for s in _SEEDS)))
case("4.1/scalar-seeds-x32", "[0, 4294967295] [0, 4294967295]",
     lambda m: " ".join(_key_data(m, s) for s in _SCALAR_SEEDS(m)))
case("4.1/scalar-seeds-x64", "[0, 4294967295] [0, 4294967295]",
     x64(lambda m: " ".join(_key_data(m, s) for s in _SCALAR_SEEDS(m))))
case("4.1/prngkey-raw", "[0, 0] [0, 43] [0, 4294967295] [0, 4294967294]",
     lambda m: " ".join(str(m.random.PRNGKey(s).tolist()) for s in _SEEDS[:4]))
case("4.1/seed-outside-int64", "OverflowError: Python int too large to convert to C long",
     lambda m: err(m.random.key, 2**64))
case("4.1/float-seed", "TypeError: PRNG key seed must be an integer; got JitTracer(~float32[])",
     lambda m: err(m.random.key, 1.0))
case("4.1/key-shape", "() (2, 3) (2, 3, 2)", lambda m: (lambda k: f"{_K(m).shape} {k.shape} "
     f"{m.random.key_data(k).shape}")(m.random.split(_K(m), (2, 3))))
case("4.1/raw-key-wrapped", Frags(["q:key<fry>[] = random_wrap[impl=fry] p",
                                   "jit[name=_uniform jaxpr=_uniform] q 0.0:f32[] 1.0:f32[]"]),
     lambda m: jaxpr(m, lambda k: m.random.uniform(k), m.random.PRNGKey(0)))
case("4.1/config-defaults", "threefry2x32 True False", lambda m: " ".join(str(getattr(
    m.jax.config, k)) for k in ("jax_default_prng_impl", "jax_threefry_partitionable",
                                "jax_enable_custom_prng")))


def _block(m, *words):
  return str([hex(int(v)) for v in m.threefry2x32_p.bind(
      *(m.jnp.array(w, m.jnp.uint32) for w in words))])


case("4.2/threefry-known-answer", "['0xc4923a9c', '0x483df7a0']",
     lambda m: _block(m, 0x13198a2e, 0x03707344, 0x243f6a88, 0x85a308d3))
case("4.2/threefry-zeros", "['0x6b200159', '0x99ba4efe']", lambda m: _block(m, 0, 0, 0, 0))
case("4.3/split-is-counter-i", "True", lambda m: str(all(
    _keys(m, m.random.split(_K(m, 7), n)[i]) == _block_key(m, 7, i)
    for n, i in [(2, 1), (5, 3), (3, 0)])))
case("4.3/fold-in-is-split", "True", lambda m: str(all(
    _keys(m, m.random.fold_in(_K(m), d)) == _keys(m, m.random.split(_K(m), 4)[d])
    for d in range(4))))
case("4.3/fold-in-negative", "OverflowError: Python integer -1 out of bounds for uint32",
     lambda m: err(m.random.fold_in, _K(m), -1))
case("4.3/bits-are-y0-xor-y1", "True", lambda m: str(
    int(m.random.bits(_K(m))) == (lambda y: int(y[0]) ^ int(y[1]))(m.threefry2x32_p.bind(
        *(m.jnp.array(w, m.jnp.uint32) for w in (0, 0, 0, 0))))))


def _block_key(m, seed, i):
  y0, y1 = m.threefry2x32_p.bind(*(m.jnp.array(w, m.jnp.uint32) for w in (0, seed, 0, i)))
  return str([int(y0), int(y1)])


KNOWN_ANSWERS = [
    ("normal-43", "Array(0.07520543, dtype=float32)", lambda m: m.random.normal(_K(m, 43))),
    ("normal-0", "Array(1.6226422, dtype=float32)", lambda m: m.random.normal(_K(m))),
    ("normal-43-3", "Array([0.07520543, 0.1719244 , 0.8410886 ], dtype=float32)",
     lambda m: m.random.normal(_K(m, 43), (3,))),
    ("normal-prngkey-2x2", ("Array([[ 1.6226422 ,  2.0252647 ],\n       [-0.43359444, -0.07861735]]"
     ", dtype=float32)"), lambda m: m.random.normal(m.random.PRNGKey(0), (2, 2))),
    ("split-prngkey-3", ("[[1797259609, 2579123966], [928981903, 3453687069], [4146024105, "
     "2718843009]]"), lambda m: str(m.random.split(m.random.PRNGKey(0), 3).tolist())),
    ("split-1", "[[507451445, 1853169794], [1948878966, 4237131848]]",
     lambda m: _keys(m, m.random.split(_K(m, 1)))),
    ("split-42-4", ("[[1832780943, 270669613], [64467757, 2916123636], [2465931498, 255383827], "
     "[3134548294, 894150801]]"), lambda m: _keys(m, m.random.split(_K(m, 42), 4))),
    ("fold-in-1", "[928981903, 3453687069]", lambda m: _keys(m, m.random.fold_in(_K(m), 1))),
    ("fold-in-max", "[743310391, 3789761811]",
     lambda m: _keys(m, m.random.fold_in(_K(m), 2**32 - 1))),
    ("fold-in-prngkey", "Array([2547012911, 1371500959], dtype=uint32)",
     lambda m: m.random.fold_in(m.random.PRNGKey(42), 7)),
    ("bits", "Array(4070199207, dtype=uint32)", lambda m: m.random.bits(_K(m))),
    ("bits-2x3", "[[4070199207, 4202968722, 1427181096], [2012915765, 2447653815, 710830403]]",
     lambda m: str(m.random.bits(_K(m), (2, 3)).tolist())),
    ("bits-uint16", "[20391, 13970, 3624]",
     lambda m: str(m.random.bits(_K(m), (3,), m.jnp.uint16).tolist())),
    ("bits-uint8", "[167, 146, 40]",
     lambda m: str(m.random.bits(_K(m), (3,), m.jnp.uint8).tolist())),
    ("uniform", "Array([0.947667  , 0.9785799 , 0.33229148], dtype=float32)",
     lambda m: m.random.uniform(_K(m), (3,))),
    ("uniform-2-5", "[4.843001  4.9357395 2.9968743]",
     lambda m: str(m.random.uniform(_K(m), (3,), minval=2., maxval=5.))),
    ("uniform-f16", "[0.3105 0.2129 0.0547]",
     lambda m: str(m.random.uniform(_K(m), (3,), m.jnp.float16))),
    ("uniform-bf16", "[0.648438 0.570312 0.15625]",
     lambda m: str(m.random.uniform(_K(m), (3,), m.jnp.bfloat16))),
    ("uniform-general-range-fused", "[6.5557365  6.8772306  0.15583135]",
     lambda m: str(m.random.uniform(_K(m), (3,), minval=-3.3, maxval=7.1))),
    ("randint", "Array([9, 0, 2, 3, 1], dtype=int32)",
     lambda m: m.random.randint(_K(m), (5,), 0, 10)),
    ("bernoulli", "[False False  True  True False  True  True False]",
     lambda m: str(m.random.bernoulli(_K(m), 0.5, (8,)))),
    ("permutation", "Array([0, 1, 4, 3, 2], dtype=int32)",
     lambda m: m.random.permutation(_K(m), 5)),
    ("choice", "Array([4, 0, 2], dtype=int32)", lambda m: m.random.choice(_K(m), 5, (3,))),
    ("key-concepts-loop", ("draw 0: -1.9133632183074951\ndraw 1: -1.4749839305877686\n"
     "draw 2: -0.36703771352767944"), lambda m: _key_concepts_loop(m)),
    ("x64-uniform", "[0.41845711 0.21629545 0.96532146] float64",
     x64(lambda m: (lambda u: f"{u} {u.dtype}")(m.random.uniform(_K(m), (3,))))),
    ("x64-normal", "-0.20584214", x64(lambda m: f"{float(m.random.normal(_K(m))):.8f}")),
    ("x64-bits-uint64", "[7719171245655871230, 3989946895414531357]",
     x64(lambda m: str(m.random.bits(_K(m), (2,), m.jnp.uint64).tolist()))),
    ("x64-randint", "Array([5, 1, 5, 7, 3], dtype=int64)",
     x64(lambda m: m.random.randint(_K(m), (5,), 0, 10))),
    ("unpartitionable-split", "[[4146024105, 967050713], [2718843009, 1272950319]]",
     lambda m: _unpartitioned(m, lambda: str(m.random.split(m.random.PRNGKey(0)).tolist()))),
    ("unpartitionable-uniform", "[0.9653214  0.31468165 0.63302994]",
     lambda m: _unpartitioned(m, lambda: str(m.random.uniform(_K(m), (3,))))),
    ("unpartitionable-normal", "0.81039715",
     lambda m: _unpartitioned(m, lambda: str(m.random.normal(_K(m, 43))))),
]
for _name, _text, _fn in KNOWN_ANSWERS:
  case(f"4.5/{_name}", _text, lambda m, _fn=_fn: (lambda v: v if isinstance(v, str) else repr(v))(
      _fn(m)))


def _key_concepts_loop(m):
  key, lines = m.random.key(43), []
  for i in range(3):
    key, subkey = m.random.split(key)
    lines.append(f"draw {i}: {m.random.normal(subkey)}")
  return "\n".join(lines)


def _unpartitioned(m, fn):
  with config(m, jax_threefry_partitionable=False):
    return fn()


# ================================================================================================
# §5 Pytrees
# ================================================================================================
def _st(m, tree, **kwargs):
  return str(m.tree_util.tree_structure(tree, **kwargs))


_NESTED = {"a": 1, "b": [2, (3, None)], "c": {"z": 4, "y": None}}
_Params = collections.namedtuple("Params", "w b")
_P = collections.namedtuple("P", "x")
_LAMBDA = lambda x, y: x  # its repr is part of a row


def _custom_nodes(m):
  """Fresh classes each call (a registry refuses a class twice), registered every way."""
  import dataclasses
  tu = m.tree_util

  @dataclasses.dataclass
  class D:
    x: object
    s: str
  tu.register_dataclass(D, data_fields=["x"], meta_fields=["s"])

  @dataclasses.dataclass
  class D2:
    a: object
    b: object
    q: str
  tu.register_dataclass(D2, data_fields=["a", "b"], meta_fields=["q"])

  class Custom:
    def __init__(self, a, b):
      self.a, self.b = a, b
  tu.register_pytree_node(Custom, lambda c: ((c.a, c.b), "aux"), lambda aux, ch: Custom(*ch))

  class CK:
    def __init__(self, v):
      self.v = v
  tu.register_pytree_with_keys(CK, lambda c: (((tu.GetAttrKey("v"), c.v),), None),
                               lambda aux, ch: CK(*ch))

  class S:
    def __repr__(self):
      return "S()"

    def __eq__(self, other):
      return isinstance(other, S)

    def __hash__(self):
      return 0
  tu.register_static(S)

  class C:
    def __init__(self, v):
      self.v = v
  tu.register_pytree_node(C, lambda c: ((c.v,), None), lambda aux, ch: C(*ch))

  @tu.register_pytree_node_class
  class Pt:
    def __init__(self, x, y):
      self.x, self.y = x, y

    def tree_flatten(self):
      return (self.x, self.y), "meta"

    @classmethod
    def tree_unflatten(cls, aux, children):
      return cls(*children)

  @tu.register_pytree_with_keys_class
  class Kc:
    def __init__(self, x):
      self.x = x

    def tree_flatten_with_keys(self):
      return ((tu.GetAttrKey("x"), self.x),), None

    @classmethod
    def tree_unflatten(cls, aux, children):
      return cls(*children)

  @dataclasses.dataclass
  class Dc:
    a: object
    s: str = dataclasses.field(metadata={"static": True})
  tu.register_dataclass(Dc)
  nodes = {"Pt": Pt(1, [2]), "Kc": Kc(3), "Dc": Dc(1, "q")}
  return {**nodes, "D": D(1, "s"), "D2": D2(1, 2, "q"), "Custom": Custom(1, [2, 3]), "CK": CK(1),
          "S": [S(), 1], "C": {"c": C(1)}}


PYTREES = [
    ("nested", "PyTreeDef({'a': *, 'b': [*, (*, None)], 'c': {'y': None, 'z': *}})",
     lambda m: _st(m, _NESTED)),
    ("nested-counts", "4 10",
     lambda m: (lambda t: f"{t.num_leaves} {t.num_nodes}")(m.tree_util.tree_structure(_NESTED))),
    ("list", "PyTreeDef([*, *, (*, *)])", lambda m: _st(m, [1, 2, (3, 4)])),
    ("dict-sorted", "PyTreeDef({'W': *, 'b': *, 'n': *})",
     lambda m: _st(m, {"W": 1, "n": 2, "b": 3})),
    ("int-keys", "PyTreeDef({1: *, 2: *})", lambda m: _st(m, {2: 1, 1: 2})),
    ("leaf", "PyTreeDef(*)", lambda m: _st(m, 1)),
    ("none", "PyTreeDef(None)", lambda m: _st(m, None)),
    ("empties", "PyTreeDef([None, (), [], {}])", lambda m: _st(m, [None, (), [], {}])),
    ("namedtuple", "PyTreeDef(CustomNode(namedtuple[Params], [*, *]))",
     lambda m: _st(m, _Params(1, 2))),
    ("ordereddict", "PyTreeDef(CustomNode(OrderedDict[('b', 'a')], [*, *]))",
     lambda m: _st(m, collections.OrderedDict([("b", 1), ("a", 2)]))),
    ("defaultdict", "PyTreeDef(CustomNode(defaultdict[(<class 'int'>, ('a', 'b'))], [*, *]))",
     lambda m: _st(m, collections.defaultdict(int, {"b": 2, "a": 1}))),
    ("dataclass", "PyTreeDef(CustomNode(D[('s',)], [*]))",
     lambda m: _st(m, _custom_nodes(m)["D"])),
    ("dataclass-2", "PyTreeDef(CustomNode(D2[('q',)], [*, *]))",
     lambda m: _st(m, _custom_nodes(m)["D2"])),
    ("custom", "PyTreeDef(CustomNode(Custom[aux], [*, [*, *]]))",
     lambda m: _st(m, _custom_nodes(m)["Custom"])),
    ("with-keys", "PyTreeDef(CustomNode(CK[None], [*]))", lambda m: _st(m, _custom_nodes(m)["CK"])),
    ("static", "PyTreeDef([CustomNode(S[S()], []), *])", lambda m: _st(m, _custom_nodes(m)["S"])),
    ("partial", "PyTreeDef(CustomNode(Partial[<function <lambda> at 0x…>], [(*,), {}]))",
     lambda m: mask(_st(m, m.tree_util.Partial(_LAMBDA, 1)))),
    ("node-class", "PyTreeDef(CustomNode(Pt[meta], [*, [*]]))",
     lambda m: _st(m, _custom_nodes(m)["Pt"])),
    ("with-keys-class", "[((GetAttrKey(name='x'),), 3)]",
     lambda m: str(m.tree_util.tree_flatten_with_path(_custom_nodes(m)["Kc"])[0])),
    ("dataclass-static-field", ("PyTreeDef(CustomNode(Dc[('q',)], [*])) "
     "[((GetAttrKey(name='a'),), 1)]"), lambda m: (lambda d: f"{_st(m, d)} "
     f"{m.tree_util.tree_flatten_with_path(d)[0]}")(_custom_nodes(m)["Dc"])),
    ("node-data", "(<class 'dict'>, ['a', 'b']) (<class 'list'>, None)", lambda m: " ".join(
        str(m.tree_util.tree_structure(t).node_data()) for t in ({"a": 1, "b": 2}, [1]))),
    ("children", "[PyTreeDef(*), PyTreeDef({'a': [*]})]",
     lambda m: str(m.tree_util.tree_structure([1, {"a": [2]}]).children())),
    ("is-leaf", "[None, 1]",
     lambda m: str(m.tree_util.tree_leaves([None, 1], is_leaf=lambda x: x is None))),
    ("empty-leaves", "[]", lambda m: str(m.tree_util.tree_leaves([None, (), [], {}]))),
    ("unregistered-leaves", "3", lambda m: str(len(m.tree_util.tree_leaves(
        ["s", object(), np.ones(2)])))),
    ("treedef-eq-hash", "False True True", lambda m: (lambda s: " ".join(map(str, [
        s([1]) == s((1,)), s([1]) == s([2]), hash(s([1])) == hash(s([2]))])))(
            m.tree_util.tree_structure)),
    ("unflatten-sorts", "[('a', 10), ('b', 20)]", lambda m: str(list(m.tree_util.tree_unflatten(
        m.tree_util.tree_structure({"b": 1, "a": 2}), [10, 20]).items()))),
    ("key-reprs", ("SequenceKey(idx=0) DictKey(key='a') GetAttrKey(name='x') "
     "FlattenedIndexKey(key=1)"), lambda m: " ".join(repr(k) for k in [
         m.tree_util.SequenceKey(0), m.tree_util.DictKey("a"), m.tree_util.GetAttrKey("x"),
         m.tree_util.FlattenedIndexKey(1)])),
    ("keystr", "['a'].x ['b'][0] ['b'][1][0] ''", lambda m: " ".join(
        m.tree_util.keystr(p) for p, _ in m.tree_util.tree_flatten_with_path(
            {"b": [0, (1,)], "a": _P(1)})[0]) + f" {m.tree_util.keystr(())!r}"),
    ("keystr-flat-index", "['c'][<flat index 0>]", lambda m: m.tree_util.keystr(
        m.tree_util.tree_flatten_with_path(_custom_nodes(m)["C"])[0][0][0])),
    ("keystr-simple", "a/0/x", lambda m: m.tree_util.keystr(
        (m.tree_util.DictKey("a"), m.tree_util.SequenceKey(0), m.tree_util.GetAttrKey("x")),
        simple=True, separator="/")),
    ("flatten-with-path", "[((DictKey(key='a'), GetAttrKey(name='x')), 4)]", lambda m: str(
        m.tree_util.tree_flatten_with_path({"a": _P(4), "b": None})[0])),
    ("map-prefix", "[(1, (3, 4)), (2, 5)]",
     lambda m: str(m.tree.map(lambda a, b: (a, b), [1, 2], [(3, 4), 5]))),
    ("map-none", "[10, None]", lambda m: str(m.tree.map(lambda a: a * 10, [1, None]))),
    ("transpose", "([1, 3], [2, 4])", lambda m: str(m.tree.transpose(
        m.tree.structure([0, 0]), m.tree.structure((0, 0)), [(1, 2), (3, 4)]))),
]
for _name, _text, _fn in PYTREES:
  case(f"5/{_name}", _text, _fn)

_MAP2 = lambda m, a, b, lines: err(m.tree.map, lambda x, y: x, a, b, lines=lines)
TREE_ERRORS = [
    ("lengths", ("ValueError: pytree structure error: different lengths of list at key path\n"
     "    tree_map tree\nAt that key path, the prefix pytree tree_map tree has a subtree of type "
     "list of length 2, but the full pytree has a subtree of the same type but of length 3."),
     lambda m: _MAP2(m, [1, 2], [1, 2, 3], 3)),
    ("types", ("ValueError: pytree structure error: different types at key path\n"
     "    tree_map tree[1]\nAt that key path, the prefix pytree tree_map tree has a subtree of "
     "type\n    <class 'NoneType'>\nbut at the same key path the full pytree has a subtree of "
     "different type\n    <class 'int'>."), lambda m: _MAP2(m, [1, None], [1, 2], 6)),
    ("metadata", ("ValueError: pytree structure error: different pytree metadata at key path\n"
     "    tree_map tree\nAt that key path, the prefix pytree tree_map tree has a subtree of type\n"
     "    <class 'dict'>\nwith metadata\n    ('x', 'y')\nbut at the same key path the full "
     "pytree has a subtree of the same type but with metadata\n    ('x', 'z')\nso the diff in "
     "the metadata at these pytree nodes is\n    - ('x', 'y')\n    ?        ^\n\n"
     "    + ('x', 'z')\n    ?        ^"),
     lambda m: _MAP2(m, {"x": 1, "y": 2}, {"x": 1, "z": 2}, 20)),
    ("key-sets", ("ValueError: pytree structure error: different numbers of pytree children at "
     "key path\n    tree_map tree\nAt that key path, the prefix pytree tree_map tree has a "
     "subtree of type\n    <class 'dict'>\nwith 1 child keys\n    a\nbut at the same key path "
     "the full pytree has a subtree of the same type but with 2 child keys\n    a b\nso the "
     "symmetric difference on key sets is\n    b"),
     lambda m: _MAP2(m, {"a": 1}, {"a": 1, "b": 2}, 20)),
    ("list-vs-tuple", Frags(["different types at key path", "    <class 'list'>\n",
                             "    <class 'tuple'>."]), lambda m: _MAP2(m, [1], (1,), 6)),
    ("list-vs-leaf", Frags(["different types at key path", "    <class 'list'>\n",
                            "    <class 'int'>."]), lambda m: _MAP2(m, [1], 1, 6)),
    ("tuple-vs-namedtuple", Frags(["different types at key path", "    <class 'tuple'>\n",
                                   ".P'>."]), lambda m: _MAP2(m, (1,), _P(1), 6)),
    ("too-few-leaves", "ValueError: Too few leaves for PyTreeDef; expected 2, got 1",
     lambda m: err(m.tree_util.tree_unflatten, m.tree_util.tree_structure([1, 2]), [1])),
    ("too-many-leaves", "ValueError: Too many leaves for PyTreeDef; expected 2.",
     lambda m: err(m.tree_util.tree_unflatten, m.tree_util.tree_structure([1, 2]), [1, 2, 3])),
    ("comparator", "ValueError: Comparator raised exception while sorting pytree dictionary keys.",
     lambda m: err(m.tree_util.tree_leaves, {1: 1, "a": 2})),
    ("jit-non-array-leaf", ("TypeError: Error interpreting argument to <function <lambda> at "
     "0x…> as an abstract array. The problematic value is of type <class 'str'> and was passed "
     "to the function at path x['a'].\nThis typically means that a jit-wrapped function was "
     "called with a non-array argument, and this argument was not marked as static using the "
     "static_argnums or static_argnames parameters of jax.jit."),
     lambda m: mask(err(m.jax.jit(_IDENTITY), {"a": "hello"}, lines=2))),
]
_IDENTITY = lambda x: x  # its repr is part of a row
for _name, _text, _fn in TREE_ERRORS:
  case(f"5.3/{_name}", _text, _fn)


# ================================================================================================
# §6 jax.numpy on lax
# ================================================================================================
def jit_names(m, fn, *args):
  """Names of the top-level `jit` eqns `fn` stages, in order ('' when none)."""
  eqns = m.jax.make_jaxpr(fn)(*args).jaxpr.eqns
  return " ".join(str(e.params["name"]) for e in eqns if e.primitive.name == "jit")


_V = lambda m: m.jnp.arange(1., 5.)
_IV = lambda m: m.jnp.arange(1, 5)
_M = lambda m: m.jnp.arange(9.).reshape(3, 3) + 5 * m.jnp.eye(3)
_unary = lambda name: lambda m: jit_names(m, getattr(m.jnp, name), _V(m))
_binary = lambda name: lambda m: jit_names(m, getattr(m.jnp, name), _V(m), _V(m))
_matrix = lambda name: lambda m: jit_names(m, getattr(m.jnp, name), _M(m))
_jnp_missing = "jnp.{} is not implemented in jaxlite"

JIT_WRAPPED = [
    ("where", "_where", lambda m: jit_names(m, lambda x: m.jnp.where(x > 1, x, 0.), _V(m))),
    ("var", "_var", _unary("var")), ("std", "_std", _unary("std")),
    ("take", "_take", lambda m: jit_names(m, lambda x: m.jnp.take(x, m.jnp.array([0, 1])), _V(m))),
    ("diag", "_diag", _matrix("diag")),
    ("pad", "_pad", lambda m: jit_names(m, lambda x: m.jnp.pad(x, 1), _V(m))),
    ("ptp", "_ptp", _unary("ptp")),
    ("interp", "_interp", lambda m: jit_names(m, lambda x: m.jnp.interp(x, x, x), _V(m))),
    ("flip", "_flip", _unary("flip")), ("fliplr", "_flip", _matrix("fliplr")),
    ("flipud", "_flip", _matrix("flipud")),
    # §6.1 names `_roll_dynamic` for roll; JAX 0.10.2 stages a static (Python int) shift as
    # `_roll_static` and only a traced shift as `_roll_dynamic` (contract disagreement).
    ("roll-static-shift", "_roll_static",
     lambda m: jit_names(m, lambda x: m.jnp.roll(x, 1), _V(m))),
    ("roll-traced-shift", "_roll_dynamic",
     lambda m: jit_names(m, lambda x, s: m.jnp.roll(x, s), _V(m), 1)),
    ("isin", "_in1d", lambda m: jit_names(m, lambda x: m.jnp.isin(x, x), _V(m))),
    ("linspace", "_linspace", lambda m: jit_names(m, lambda x: m.jnp.linspace(x, 2., 5), 0.)),
    ("logspace", "_logspace", lambda m: jit_names(m, lambda x: m.jnp.logspace(x, 2., 5), 0.)),
    ("geomspace", "_geomspace", lambda m: jit_names(m, lambda x: m.jnp.geomspace(x, 2., 5), 1.)),
    ("nanargmax", "_nanargmax", _unary("nanargmax")),
    ("nanargmin", "_nanargmin", _unary("nanargmin")),
    ("cumulative_sum", "_cumsum_with_promotion", _unary("cumulative_sum")),
    ("mod", "remainder", _binary("mod")),
    ("%", "remainder", lambda m: jit_names(m, lambda a, b: a % b, _V(m), _V(m))),
    ("//", "floor_divide", lambda m: jit_names(m, lambda a, b: a // b, _V(m), _V(m))),
    ("acosh", "arccosh", _unary("acosh")), ("polymul", "convolve", _binary("polymul")),
    ("hstack", "atleast_1d atleast_1d", lambda m: jit_names(m, lambda a: m.jnp.hstack([a, a]),
                                                            _V(m))),
    ("vstack", "atleast_2d atleast_2d", lambda m: jit_names(m, lambda a: m.jnp.vstack([a, a]),
                                                            _V(m))),
    ("column_stack", "atleast_2d atleast_2d",
     lambda m: jit_names(m, lambda a: m.jnp.column_stack([a, a]), _V(m))),
    ("dstack", "atleast_3d atleast_3d", lambda m: jit_names(m, lambda a: m.jnp.dstack([a, a]),
                                                            _V(m))),
]
for _n in words("cumsum cumprod sort argsort round around rint trunc isinf iscomplex isreal "
                "signbit sinc i0 nan_to_num diff ediff1d unwrap gradient count_nonzero median "
                "trapezoid atleast_1d atleast_2d atleast_3d vander poly polyder polyint angle "
                "frexp modf nansum nanprod nanmax nanmin nanmean nanvar nanstd nanmedian "
                "nancumsum nancumprod"):
  JIT_WRAPPED.append((_n, _n, _unary(_n)))
for _n in words("diagonal tril triu trace rot90 cov corrcoef"):
  JIT_WRAPPED.append((_n, _n, _matrix(_n)))
for _n in words("isclose allclose remainder floor_divide divmod fmod fmax fmin copysign hypot "
                "heaviside append kron convolve correlate polyadd polysub polyval"):
  JIT_WRAPPED.append((_n, _n, _binary(_n)))
JIT_WRAPPED += [
    ("clip", "clip", lambda m: jit_names(m, lambda x: m.jnp.clip(x, 0., 1.), _V(m))),
    ("ldexp", "ldexp", lambda m: jit_names(m, m.jnp.ldexp, _V(m), _IV(m))),
    ("gcd", "gcd", lambda m: jit_names(m, m.jnp.gcd, _IV(m), _IV(m))),
    ("lcm", "lcm", lambda m: jit_names(m, m.jnp.lcm, _IV(m), _IV(m))),
    ("block", "block", lambda m: jit_names(m, lambda a: m.jnp.block([a, a]), _V(m))),
    ("cross", "cross", lambda m: jit_names(m, m.jnp.cross, _V(m)[:3], _V(m)[:3])),
    ("lexsort", "lexsort", lambda m: jit_names(m, lambda a: m.jnp.lexsort([a, a]), _V(m))),
    ("packbits", "packbits", lambda m: jit_names(m, m.jnp.packbits, _V(m) > 2)),
    ("bitwise_count", "bitwise_count", lambda m: jit_names(m, m.jnp.bitwise_count, _IV(m))),
    ("searchsorted", "searchsorted", _binary("searchsorted")),
    ("digitize", "digitize", _binary("digitize")),
    ("take_along_axis", "take_along_axis", lambda m: jit_names(
        m, lambda a: m.jnp.take_along_axis(a, m.jnp.array([0, 1]), 0), _V(m))),
    ("quantile", "quantile", lambda m: jit_names(m, lambda a: m.jnp.quantile(a, 0.5), _V(m))),
    ("percentile", "percentile",
     lambda m: jit_names(m, lambda a: m.jnp.percentile(a, 50.), _V(m))),
    ("nanquantile", "nanquantile",
     lambda m: jit_names(m, lambda a: m.jnp.nanquantile(a, 0.5), _V(m))),
    ("nanpercentile", "nanpercentile",
     lambda m: jit_names(m, lambda a: m.jnp.nanpercentile(a, 50.), _V(m))),
    ("matvec", "matvec", lambda m: jit_names(m, m.jnp.matvec, _M(m), _V(m)[:3])),
    ("vecmat", "vecmat", lambda m: jit_names(m, m.jnp.vecmat, _V(m)[:3], _M(m))),
    ("method-var", "_var", lambda m: jit_names(m, lambda a: a.var(), _V(m))),
    ("method-std", "_std", lambda m: jit_names(m, lambda a: a.std(), _V(m))),
    ("method-clip", "clip", lambda m: jit_names(m, lambda a: a.clip(0., 1.), _V(m))),
    ("method-round", "round", lambda m: jit_names(m, lambda a: a.round(), _V(m))),
    ("method-take", "_take", lambda m: jit_names(m, lambda a: a.take(m.jnp.array([0])), _V(m))),
    ("linalg-norm", "norm", lambda m: jit_names(m, m.linalg.norm, _V(m))),
    ("linalg-inv", "inv", lambda m: jit_names(m, m.linalg.inv, _M(m))),
    ("linalg-det", "det", lambda m: jit_names(m, m.linalg.det, _M(m))),
    ("linalg-solve", "solve", lambda m: jit_names(m, m.linalg.solve, _M(m), _V(m)[:3])),
    ("nn-one_hot", "_one_hot", lambda m: jit_names(m, lambda a: m.nn.one_hot(a, 4), _IV(m))),
    ("random-uniform", "_uniform",
     lambda m: jit_names(m, lambda k: m.random.uniform(k, (3,)), _K(m))),
    ("random-normal", "_normal", lambda m: jit_names(m, lambda k: m.random.normal(k, (3,)), _K(m))),
    ("random-randint", "_randint",
     lambda m: jit_names(m, lambda k: m.random.randint(k, (3,), 0, 5), _K(m))),
    ("random-bernoulli", "_bernoulli",
     lambda m: jit_names(m, lambda k: m.random.bernoulli(k, 0.5, (3,)), _K(m))),
    ("random-truncated_normal", "_truncated_normal",
     lambda m: jit_names(m, lambda k: m.random.truncated_normal(k, -1., 1., (3,)), _K(m))),
    ("random-categorical", "_gumbel",
     lambda m: jit_names(m, lambda k: m.random.categorical(k, m.jnp.zeros(3)), _K(m))),
    ("random-permutation", "_shuffle",
     lambda m: jit_names(m, lambda k: m.random.permutation(k, 5), _K(m))),
    ("random-choice", "_randint",
     lambda m: jit_names(m, lambda k: m.random.choice(k, 5, (3,)), _K(m))),
    ("nonzero", "cumsum clip cumsum floor_divide remainder",
     lambda m: jit_names(m, lambda a: m.jnp.nonzero(a, size=2), _V(m))),
    ("argwhere", "atleast_1d cumsum clip cumsum floor_divide remainder atleast_2d",
     lambda m: jit_names(m, lambda a: m.jnp.argwhere(a, size=2), _V(m))),
    ("where-1-arg", "cumsum clip cumsum floor_divide remainder",
     lambda m: jit_names(m, lambda a: m.jnp.where(a, size=2), _V(m))),
    ("unique-size", "_unique_sorted_mask cumsum clip cumsum floor_divide remainder",
     lambda m: jit_names(m, lambda a: m.jnp.unique(a, size=2), _V(m))),
]
for _n in words("log_softmax silu softplus elu leaky_relu standardize"):
  JIT_WRAPPED.append((f"nn-{_n}", _n, lambda m, _n=_n: jit_names(m, getattr(m.nn, _n), _V(m))))
_NOT_WRAPPED = {
    "unary": "sin exp abs isnan isfinite sum prod max min mean all any argmax argmin ravel "
             "transpose squeeze",
    "binary": "add maximum logical_and matmul dot inner outer vdot",
}
for _n in _NOT_WRAPPED["unary"].split():
  JIT_WRAPPED.append((f"not-wrapped-{_n}", "", _unary(_n)))
for _n in _NOT_WRAPPED["binary"].split():
  JIT_WRAPPED.append((f"not-wrapped-{_n}", "", _binary(_n)))
JIT_WRAPPED += [
    ("not-wrapped-shapes", "", lambda m: jit_names(m, lambda a, b: (
        m.jnp.einsum("ij,jk->ik", a, a), m.jnp.tensordot(a, a), m.jnp.reshape(b, (2, 2)),
        m.jnp.expand_dims(b, 0), m.jnp.moveaxis(a, 0, 1), m.jnp.swapaxes(a, 0, 1),
        m.jnp.broadcast_to(b, (2, 4)), m.jnp.stack([b, b]), m.jnp.concatenate([b, b]),
        m.jnp.split(b, 2), m.jnp.tile(b, 2), m.jnp.repeat(b, 2)), _M(m), _V(m))),
    ("not-wrapped-creation", "", lambda m: jit_names(m, lambda a: (
        m.jnp.zeros(3), m.jnp.ones(3), m.jnp.full(3, a), m.jnp.eye(2), m.jnp.identity(2),
        m.jnp.tri(2), m.jnp.arange(3)), 1.)),
    ("not-wrapped-nn", "", lambda m: jit_names(m, lambda a: (
        m.nn.gelu(a), m.nn.softmax(a), m.nn.sigmoid(a), m.nn.logsumexp(a)), _V(m))),
    ("not-wrapped-random", ("random_split random_fold_in random_bits random_seed random_seed "
     "random_unwrap"), lambda m: " ".join(e.primitive.name for e in m.jax.make_jaxpr(
         lambda k, s: (m.random.split(k), m.random.fold_in(k, 1), m.random.bits(k),
                       m.random.key(s), m.random.PRNGKey(s)))(_K(m), 0).jaxpr.eqns)),
]
JIT_NAME_XFAILS = {
    # cumulative_sum (`_cumsum_with_promotion`) and not-wrapped-nn (logsumexp's flat chain) are
    # fixed by issue 33 (tests/test_fuzz_regressions_issue33.py)
    "unique-size": "jnp.unique(size=) sorts by argsort+gather and pads with `_where`; JAX stages a "
                   "`_unique_sorted_mask` jit and pads otherwise (setops.py: a different "
                   "algorithm, not a minimal edit)",
}
for _name, _text, _fn in JIT_WRAPPED:
  case(f"6.1/{_name}", _text, _fn, xfail=JIT_NAME_XFAILS.get(_name))
case("6.1/literal-args-converted-inside", Frags([
    "jit[\n      name=clip\n      jaxpr={ lambda ; a:f32[3] c:f32[] d:f32[]. let",
    "convert_element_type[new_dtype=float32 weak_type=False] c", "] a 0.0:f32[] 1.0:f32[]"]),
     lambda m: jaxpr(m, lambda x: m.jnp.clip(x, 0., 1.), m.jnp.ones(3)))
case("6.1/relu-custom-jvp-holds-jit", Frags([
    "custom_jvp_call[\n      name=relu\n      call_jaxpr={ lambda ; c:f32[]. let\n",
    "jit[\n            name=relu\n", "max c 0.0:f32[]", "jvp=jvp"]),
    lambda m: jaxpr(m, m.nn.relu, 1.0))
case("6.1/normal-nesting", Frags(["let _uniform = {", "name=_normal\n", "name=_normal_real\n",
                                  "jit[name=_uniform jaxpr=_uniform]"]),
     lambda m: jaxpr(m, lambda k: m.random.normal(k, (3,)), _K(m)))


# §6.2 lowerings, as printed
_O = lambda m, *shape, dtype="float32": m.jnp.ones(shape, dtype)
_DOT = "dot_general[\n      dimension_numbers={}\n      preferred_element_type=float32\n    ]"
LOWERINGS = [
    ("matmul", [_DOT.format("(([1], [0]), ([], []))")],
     lambda m: jaxpr(m, lambda a, b: a @ b, _O(m, 3, 4), _O(m, 4, 5))),
    ("einsum", [_DOT.format("(([1], [0]), ([], []))")],
     lambda m: jaxpr(m, lambda a, b: m.jnp.einsum("ij,jk->ik", a, b), _O(m, 3, 4), _O(m, 4, 5))),
    ("batched-matmul", [_DOT.format("(([2], [1]), ([0], [0]))")],
     lambda m: jaxpr(m, lambda a, b: a @ b, _O(m, 2, 3, 4), _O(m, 2, 4, 5))),
    ("dot-vectors", [_DOT.format("(([0], [0]), ([], []))")],
     lambda m: jaxpr(m, m.jnp.dot, _O(m, 3), _O(m, 3))),
    ("vmap-dot", [_DOT.format("(([1], [1]), ([0], [0]))")],
     lambda m: jaxpr(m, m.jax.vmap(m.jnp.dot), _O(m, 2, 3), _O(m, 2, 3))),
    ("sum", ["reduce_sum[axes=(0, 1) out_sharding=None]"],
     lambda m: jaxpr(m, m.jnp.sum, _O(m, 3, 4))),
    ("sum-keepdims", ["reduce_sum[axes=(1,) out_sharding=None]",
                      "broadcast_in_dim[broadcast_dimensions=(0,)]"],
     lambda m: jaxpr(m, lambda x: x.sum(axis=1, keepdims=True), _O(m, 3, 4))),
    ("mean", ["reduce_sum[axes=(0,) out_sharding=None]", "div b 3.0:f32[]"],
     lambda m: jaxpr(m, lambda x: m.jnp.mean(x, axis=0), _O(m, 3, 4))),
    ("max", ["reduce_max[axes=(0,)]"], lambda m: jaxpr(m, lambda x: m.jnp.max(x, axis=0),
                                                       _O(m, 3, 4))),
    ("square-f32-i32", ["integer_pow[y=2] a", "integer_pow[y=2] b"],
     lambda m: jaxpr(m, lambda x, i: (x ** 2, i ** 2), _O(m, 3), _O(m, 3, dtype="int32"))),
    ("float-power", ["pow a 3.0:f32[]"], lambda m: jaxpr(m, lambda x: x ** 3.0, _O(m, 3))),
    ("stack", ["stack[axis=0] a b"], lambda m: jaxpr(m, lambda a, b: m.jnp.stack([a, b]),
                                                     _O(m, 3), _O(m, 3))),
    ("concatenate", ["concatenate[dimension=0] a a"],
     lambda m: jaxpr(m, lambda x: m.jnp.concatenate([x, x]), _O(m, 3))),
    ("arange-traced", ["iota[dimension=0 dtype=float32 shape=(3,) sharding=None] \n"],
     lambda m: jaxpr(m, lambda x: m.jnp.arange(3.) + x, 1.0)),
    ("arange-under-jit", ["iota[dimension=0 dtype=float32 shape=(3,) sharding=None] \n"],
     lambda m: jaxpr(m, m.jax.jit(lambda x: m.jnp.arange(3.) + x), 1.0)),
    ("zeros-ones-like", ["broadcast_in_dim 0.0:f32[]", "broadcast_in_dim 1.0:f32[]"],
     lambda m: jaxpr(m, lambda x: (m.jnp.zeros(3), m.jnp.ones_like(x)), _O(m, 3))),
    ("static-int-index", ["slice[limit_indices=(1, 4) start_indices=(0, 0) strides=None] a",
                          "squeeze[dimensions=(0,)] b"],
     lambda m: jaxpr(m, lambda x: x[0], _O(m, 3, 4))),
    ("static-index-variants", ["limit_indices=(3, 4) start_indices=(2, 0)", "squeeze",
                               "limit_indices=(3, 2) start_indices=(0, 1)", "squeeze",
                               "limit_indices=(2, 4) start_indices=(1, 0)", "squeeze"],
     lambda m: jaxpr(m, lambda x: (x[-1], x[:, 1], x.at[1].get()), _O(m, 3, 4))),
    ("strided-slice", ["slice[limit_indices=(3, 4) start_indices=(1, 0) strides=(1, 2)]"],
     lambda m: jaxpr(m, lambda x: x[1:, ::2], _O(m, 3, 4))),
    ("newaxis", ["broadcast_in_dim[broadcast_dimensions=(1,)]"],
     lambda m: jaxpr(m, lambda x: x[None], _O(m, 3))),
    ("transpose-reshape-astype", ["transpose[permutation=(1, 0)]",
                                  "reshape[dimensions=None new_sizes=(2, 2) sharding=None]",
                                  "convert_element_type[new_dtype=int32 weak_type=False]"],
     lambda m: jaxpr(m, lambda x, y: (x.T, y.reshape(2, 2), x.astype(m.jnp.int32)),
                     _O(m, 3, 4), _O(m, 4))),
    ("traced-int-index", [
        "c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] b",
        "d:bool[] = lt c 0:i32[]", "e:i32[] = add c 3:i32[]", "f:i32[] = select_n d c e",
        "g:bool[] = lt 0:i32[] 0:i32[]", "h:i32[] = add 0:i32[] 4:i32[]",
        "i:i32[] = select_n g 0:i32[] h", "j:f32[1,4] = dynamic_slice[slice_sizes=(1, 4)] a f i",
        "k:f32[4] = squeeze[dimensions=(0,)] j"],
     lambda m: jaxpr(m, lambda a, i: a[i], _O(m, 3, 4), 1)),
    ("gather", ["lt", "add", "select_n", "f:i32[2,1] = broadcast_in_dim", ("gather[\n"
                "      dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), "
                "collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), "
                "start_indices_batching_dims=())\n      fill_value=None\n      indices_are_sorted="
                "False\n      mode=GatherScatterMode.PROMISE_IN_BOUNDS\n      slice_sizes=(1, 4)\n"
                "      unique_indices=False\n    ]")],
     lambda m: jaxpr(m, lambda x, idx: x[idx], _O(m, 3, 4), m.jnp.array([0, 2]))),
    ("scatter-set", ["b:i32[1] = broadcast_in_dim 0:i32[]", ("scatter[\n      dimension_numbers="
                     "ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), "
                     "scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), "
                     "scatter_indices_batching_dims=())\n      indices_are_sorted=True\n      "
                     "mode=GatherScatterMode.FILL_OR_DROP\n      unique_indices=True\n      "
                     "update_consts=()\n      update_jaxpr=None\n    ] a b 5.0:f32[]")],
     lambda m: jaxpr(m, lambda x: x.at[0].set(5.), _O(m, 3))),
    ("scatter-add", ["scatter-add[", ("update_jaxpr={ lambda ; i:f32[] j:f32[]. let k:f32[] = "
                     "add i j in (k,) }")],
     lambda m: jaxpr(m, lambda x, i: x.at[i].add(1.), _O(m, 3), 1)),
    ("softmax", ["reduce_max", "max -inf:f32[] b", "broadcast_in_dim", "stop_gradient", "sub",
                 "exp", "reduce_sum", "broadcast_in_dim", "div"],
     lambda m: jaxpr(m, m.nn.softmax, _O(m, 3))),
    ("where-false-first", ["select_n a c b"],
     lambda m: jaxpr(m, m.jnp.where, _O(m, 3, dtype=bool), _O(m, 3), _O(m, 3))),
    ("int-true-divide", ["convert_element_type[new_dtype=float32 weak_type=False] a",
                         "convert_element_type[new_dtype=float32 weak_type=False] b", "div c d"],
     lambda m: jaxpr(m, lambda a, b: a / b, _O(m, 3, dtype="int32"), _O(m, 3, dtype="int32"))),
    ("argmax", ["argmax[axes=(0,) index_dtype=int32]"], lambda m: jaxpr(m, m.jnp.argmax, _O(m, 3))),
    ("cumsum", ["cumsum[axis=0 reverse=False]"], lambda m: jaxpr(m, m.lax.cumsum, _O(m, 3))),
    ("sort", ["sort[dimension=0 is_stable=True num_keys=1]"],
     lambda m: jaxpr(m, m.lax.sort, _O(m, 3))),
    ("random-bits", ["random_bits[bit_width=32 shape=(3,)]"],
     lambda m: jaxpr(m, lambda k: m.random.bits(k, (3,)), _K(m))),
    ("random-split", ["random_split[shape=(2,)]"], lambda m: jaxpr(m, m.random.split, _K(m))),
    ("remat", ["remat2[\n      differentiated=False\n      jaxpr=", ("policy=None\n      "
               "prevent_cse=True\n    ]")],
     lambda m: jaxpr(m, m.jax.checkpoint(m.jnp.sin), 1.0)),
    ("remat-policy-address-masked", ["policy=<function nothing_saveable at 0xXXXXXXXX>"],
     lambda m: _masked_digits(m, m.jax.checkpoint_policies.nothing_saveable, jaxpr(
         m, m.jax.checkpoint(m.jnp.sin, policy=m.jax.checkpoint_policies.nothing_saveable), 1.0))),
]


def _masked_digits(m, fun, text):
  """`text` with the run of X's that masks `fun`'s address cut to 8 when it has the address's
  digit count (§2.4: the mask keeps the number of digits)."""
  digits = len(f"{id(fun):x}")
  return text.replace(f"0x{'X' * digits}>", "0xXXXXXXXX>")


for _name, _frags, _fn in LOWERINGS:
  case(f"6.2/{_name}", Frags(_frags), _fn)


# §6.3 JVP rule forms (x = a, t = b; binary: a, b with tangents c, d) and reverse-mode structure
def _jvp_jaxpr(m, f, n=1):
  return jaxpr(m, lambda *a: m.jax.jvp(f, a[:n], a[n:]), *([m.jnp.ones(3)] * (2 * n)))


_JVP_UNARY = {
    "sin": ["c:f32[3] = sin a", "cos a", "mul b d"],
    "cos": ["c:f32[3] = cos a", "sin a", "mul b d", "neg e"],
    "exp": ["c:f32[3] = exp a", "mul b c"],
    "expm1": ["expm1 a", "add c 1.0:f32[]", "mul b d"],
    "log": ["log a", "div b a"],
    "log1p": ["log1p a", "add a 1.0:f32[]", "div b d"],
    "tan": ["tan a", "square c", "add 1.0:f32[] d", "mul b e"],
    "tanh": ["tanh a", "mul b c", "add b d", "sub 1.0:f32[] c", "mul e f"],
    "sqrt": ["sqrt a", "div 0.5:f32[] c", "mul b d"],
    "square": ["square a", "mul 2.0:f32[] a", "mul b d"],
    "abs": ["abs a", "ge a 0.0:f32[]", "neg b", "select_n d e b"],
}
JVP_FORMS = [(n, f, lambda m, n=n: _jvp_jaxpr(m, getattr(m.jnp, n))) for n, f in _JVP_UNARY.items()]
JVP_FORMS += [
    ("logistic", ["logistic a", "sub 1.0:f32[] c", "mul c d", "mul b e"],
     lambda m: _jvp_jaxpr(m, m.lax.logistic)),
    ("rsqrt", ["rsqrt a", "div c a", "mul -0.5:f32[] d", "mul b e"],
     lambda m: _jvp_jaxpr(m, m.lax.rsqrt)),
    ("integer_pow-3", ["integer_pow[y=3] a", "integer_pow[y=2] a", "mul 3.0:f32[] d", "mul b e"],
     lambda m: _jvp_jaxpr(m, lambda x: m.lax.integer_pow(x, 3))),
    ("integer_pow-2", ["c:f32[3] = integer_pow[y=2] a\n    d:f32[3] = mul 2.0:f32[] a",
                       "mul b d"], lambda m: _jvp_jaxpr(m, lambda x: m.lax.integer_pow(x, 2))),
    # §6.3 writes erf's constant as 1.1283791670955126 (2/sqrt(pi) in float64); JAX prints the
    # float32 literal it multiplies by, 1.128379225730896 (contract disagreement).
    ("erf", ["erf a", "square a", "neg d", "exp e", "mul b f", "mul 1.128379225730896:f32[] g"],
     lambda m: _jvp_jaxpr(m, m.lax.erf)),
    ("neg-linear", ["c:f32[3] = neg a; d:f32[3] = neg b"], lambda m: _jvp_jaxpr(m, m.lax.neg)),
    ("add-linear", ["e:f32[3] = add a b", "f:f32[3] = add c d\n  in (e, f)"],
     lambda m: _jvp_jaxpr(m, m.lax.add, 2)),
    ("sub-linear", ["e:f32[3] = sub a b", "f:f32[3] = sub c d\n  in (e, f)"],
     lambda m: _jvp_jaxpr(m, m.lax.sub, 2)),
    ("mul", ["mul a b", "f:f32[3] = mul c b", "g:f32[3] = mul a d", "add_any f g"],
     lambda m: _jvp_jaxpr(m, m.lax.mul, 2)),
    ("div", ["div a b", "f:f32[3] = div c b", "g:f32[3] = neg d", "h:f32[3] = mul g a",
             "i:f32[3] = integer_pow[y=-2] b", "j:f32[3] = mul h i", "add_any f j"],
     lambda m: _jvp_jaxpr(m, m.lax.div, 2)),
    ("reverse-mul", ["_:f32[] = mul a b", "c:f32[] = mul 1.0:f32[] b"],
     lambda m: jaxpr(m, m.jax.grad(lambda a, b: a * b), 2.0, 3.0)),
    ("reverse-vjp-mul", ["_:f32[] = mul a b", "c:f32[] = mul 1.0:f32[] b"],
     lambda m: jaxpr(m, lambda a, b: m.jax.vjp(lambda a: a * b, a)[1](1.0), 2.0, 3.0)),
    ("reverse-reduce-sum", ["_:f32[] = reduce_sum", "c:f32[3] = broadcast_in_dim 1.0:f32[]"],
     lambda m: jaxpr(m, m.jax.grad(lambda x: m.jnp.sum(x * x)), m.jnp.ones(3))),
    ("reverse-slice", ["slice[", "pad[padding_config=((1, np.int64(0), 0),)] c 0.0:f32[]"],
     lambda m: jaxpr(m, m.jax.grad(lambda x: x[1:].sum()), m.jnp.ones(3))),
    ("reverse-matmul", ["dimension_numbers=(([1], [0]), ([], []))",
                        "e:f32[2,3] = dot_general[\n      dimension_numbers=(([1], [1]), ([], []))",
                        "] d b"],
     lambda m: jaxpr(m, m.jax.grad(lambda a, b: (a @ b).sum()), m.jnp.ones((2, 3)),
                     m.jnp.ones((3, 4)))),
    ("reverse-sub", ["_:f32[] = sub a b", "c:f32[] = neg 1.0:f32[]"],
     lambda m: jaxpr(m, m.jax.grad(lambda a, b: a - b, argnums=1), 2.0, 3.0)),
    ("reverse-div", ["_:f32[] = div a b", "c:f32[] = div 1.0:f32[] b"],
     lambda m: jaxpr(m, m.jax.grad(lambda a, b: a / b), 2.0, 3.0)),
]
for _name, _frags, _fn in JVP_FORMS:
  case(f"6.3/{_name}", Frags(_frags), _fn)


# ================================================================================================
# §7 Primitive inventory and MVP
# ================================================================================================
_PRIMITIVE_NAMES = {}
NEEDS_NUMBA = ("cache", "support")  # compiler/native modules loaded only with numba installed


def primitive_names(m):
  """Names of every Primitive object alive once all of the implementation's modules are loaded."""
  import gc
  import importlib
  import importlib.util
  import pathlib
  if m.name not in _PRIMITIVE_NAMES:
    if m is LITE:
      from jaxlite._src.base.core import Primitive
      root = pathlib.Path(importlib.import_module("jaxlite._src").__path__[0])
      native_extra = importlib.util.find_spec("numba") is not None
      for path in sorted(root.rglob("*.py")):  # lax/ is a namespace package: walk files
        parts = path.relative_to(root).with_suffix("").parts
        if parts[:2] == ("compiler", "native") and parts[2] in NEEDS_NUMBA and not native_extra:
          continue  # the native tier's modules that import numba (extra jaxlite[native])
        importlib.import_module(".".join(("jaxlite._src",) + parts).removesuffix(".__init__"))
    else:
      from jax.extend.core import Primitive
      for mod in ("jax.scipy.special", "jax.numpy.fft", "jax.lax.linalg"):
        importlib.import_module(mod)
    _PRIMITIVE_NAMES[m.name] = {o.name for o in gc.get_objects() if _is_a(o, Primitive)}
  return _PRIMITIVE_NAMES[m.name]


def _is_a(o, cls) -> bool:
  try:
    return isinstance(o, cls)
  except ReferenceError:  # a weakref.proxy whose object is gone (numba's compiler keeps some)
    return False


def _missing(m, names):
  have = primitive_names(m)
  return "missing: " + " ".join(n for n in names.split() if n not in have)


MVP = {
    "elementwise-unary": "neg sign floor ceil round is_finite exp exp2 log log1p expm1 tanh "
                         "logistic sin cos tan asin acos atan sinh cosh asinh acosh atanh sqrt "
                         "rsqrt cbrt abs not population_count clz real imag conj square "
                         "integer_pow",
    "elementwise-binary": "add sub mul div rem pow max min atan2 nextafter and or xor shift_left "
                          "shift_right_arithmetic shift_right_logical eq ne lt le gt ge complex "
                          "mulhi select_n clamp",
    "types-shape": "convert_element_type bitcast_convert_type reduce_precision broadcast_in_dim "
                   "reshape squeeze transpose rev pad concatenate split stack unstack tile iota",
    "reductions": "reduce reduce_sum reduce_prod reduce_max reduce_min reduce_and reduce_or "
                  "reduce_xor argmax argmin",
    "dot-slicing-sort": "dot_general slice dynamic_slice dynamic_update_slice gather scatter "
                        "scatter-add select_n clamp iota sort cumsum",
    "control-flow-ad": "cond while scan jit custom_jvp_call custom_vjp_call stop_gradient add_any",
    "random": "random_seed random_bits random_split random_fold_in random_wrap random_unwrap "
              "threefry2x32 iota_2x32_shape rng_bit_generator rng_uniform",
    "special-parallel": "erf erf_inv psum axis_index",
}
_RNG_LOWLEVEL = ("iota_2x32_shape and rng_uniform (low-level primitives of the random group) "
                 "are not defined in jaxlite")
for _group, _names in MVP.items():
  case(f"7/mvp-{_group}", "missing: ", lambda m, _names=_names: _missing(m, _names),
       xfail=_RNG_LOWLEVEL if _group == "random" else None)
INVENTORY_BEYOND_MVP = (
    "erfc lgamma digamma igamma igammac igamma_grad_a polygamma zeta bessel_i0e bessel_i1e "
    "regularized_incomplete_beta scatter-mul scatter-min scatter-max scatter-sub "
    "ragged_dot_general top_k approx_top_k reduce_window reduce_window_sum reduce_window_max "
    "reduce_window_min select_and_scatter select_and_scatter_add select_and_gather_add "
    "conv_general_dilated fft cholesky cholesky_update eig eigh lu lu_pivots_to_permutation qr "
    "geqrf geqp3 householder_product ormqr svd triangular_solve schur hessenberg tridiagonal "
    "tridiagonal_solve symmetric_product custom_linear_solve cumprod cummax cummin cumlogsumexp "
    "platform_index closed_call call shard_map zeros_like custom_lin remat2 name linear_call "
    "copy optimization_barrier sharding_constraint reshard device_put pvary pure_callback "
    "io_callback debug_callback debug_print pmax pmin all_gather all_to_all ppermute "
    "reduce_scatter pbroadcast psum_invariant ragged_all_to_all")
case("7/inventory-beyond-mvp", "missing: ", lambda m: _missing(m, INVENTORY_BEYOND_MVP),
     xfail="the full 0.10.2 inventory is not a jaxlite goal (§7 MVP is); the row lists what is "
           "absent: windowed reductions, convolutions, several linalg/parallel/callback "
           "primitives")


# ================================================================================================
# §8 jit cache key and errors
# ================================================================================================
def _fresh_lambdas(m):
  count = [0]
  for _ in range(2):
    m.jax.jit(lambda x: count.__setitem__(0, count[0] + 1) or x)(1.0)
  return str(count[0])


def _jit_wrappers_of_one_function(m, **second_options):
  count = [0]

  def f(x, y=0.):
    count[0] += 1
    return x
  m.jax.jit(f)(1.0, 2.0)
  m.jax.jit(f, **second_options)(1.0, 2.0)
  return str(count[0])


_on = lambda *calls: [c if isinstance(c, tuple) else (c,) for c in calls]
CACHE_KEY = [
    ("fresh-lambda-misses", "2", _fresh_lambdas),
    ("same-function-same-options", "1", lambda m: _jit_wrappers_of_one_function(m)),
    ("static-argnums-retrace", "2",
     lambda m: _jit_wrappers_of_one_function(m, static_argnums=1)),
    # §8.1 lists "jit options" in the key; JAX 0.10.2 reuses the trace across donate_argnums,
    # keep_unused and inline (they only change the jit eqn's params), so these stay at 1.
    ("donate-keep-unused-inline-no-retrace", "1 1 1", lambda m: " ".join(
        _jit_wrappers_of_one_function(m, **{k: v}) for k, v in
        [("donate_argnums", 0), ("keep_unused", True), ("inline", True)])),
    ("static-by-hash-eq", "2", lambda m: _static_retrace(m)),
    ("pytree-structure", "2", lambda m: str(_trace_count(m, [[1.0], (1.0,), [1.0]]))),
    ("weak-type", "2", lambda m: str(_trace_count(m, [1.0, m.jnp.float32(1), 2.0]))),
    ("shape", "2", lambda m: str(_trace_count(m, [m.jnp.ones(2), m.jnp.ones(3), m.jnp.zeros(2)]))),
    ("dtype", "2", lambda m: str(_trace_count(m, [m.jnp.ones(2), m.jnp.ones(2, "int32")]))),
    ("committed-no-retrace", "1", lambda m: str(_trace_count(m, [
        m.jnp.ones(2), m.jax.device_put(m.jnp.ones(2), m.jax.devices()[0])]))),
    ("x64-context", "2", lambda m: _context_retrace(m, jax_enable_x64=True)),
    ("promotion-context", "2", lambda m: _context_retrace(m, jax_numpy_dtype_promotion="strict")),
    ("unhashable-static", ("ValueError: Non-hashable static arguments are not supported. An error "
     "occurred while trying to hash an object of type <class 'list'>, [1]. The error was:\n"
     "TypeError: unhashable type: 'list'"),
     lambda m: err(m.jax.jit(lambda x, y: x, static_argnums=1), 1.0, [1], lines=2)),
]
for _name, _text, _fn in CACHE_KEY:
  case(f"8.1/{_name}", _text, _fn)


def _static_retrace(m):
  count = [0]
  g = m.jax.jit(lambda x, n: count.__setitem__(0, count[0] + 1) or x * n, static_argnums=1)
  g(1.0, 2)
  g(1.0, 2)
  g(1.0, 3)
  return str(count[0])


def _context_retrace(m, **opts):
  count = [0]
  g = m.jax.jit(lambda x: count.__setitem__(0, count[0] + 1) or x)
  g(m.jnp.ones(2))
  with config(m, **opts):
    g(m.jnp.ones(2))
  g(m.jnp.ones(2))
  return str(count[0])


def _explain(m, calls, **jit_kwargs):
  """The cache-miss WARNINGs of calls to one jitted `f(x, y=0)` (`calls(m)`: argument tuples,
  or callables `g -> None` that make the call themselves), call sites and ids masked."""
  records = []
  handler = logging.Handler()
  handler.emit = records.append
  logger = logging.getLogger(m.name)
  logger.addHandler(handler)
  try:
    with config(m, jax_explain_cache_misses=True):
      def f(x, y=0):
        return x
      g = m.jax.jit(f, **jit_kwargs)
      for args in calls(m):
        args(g) if callable(args) else g(*args)
  finally:
    logger.removeHandler(handler)
  text = "\n".join(r.getMessage() for r in records if r.levelno == logging.WARNING)
  text = re.sub(r"at \S+?:\d+(:\d+)? \(\S+\):", lambda mt: "at <file>:<line>" + (
      ":<col>" if mt.group(1) else "") + " (<module>):", text)
  return re.sub(r"defined at \S+:\d+", "defined at <file>:<line>", re.sub(r"id=\d+", "id=<id>",
                                                                          text))


_MISS = "TRACING CACHE MISS at <file>:<line>:<col> (<module>):\n"
_CLOSEST = ("  for f defined at <file>:<line>\n  all previously seen cache keys differ. For the "
            "closest previous key:\n")
EXPLAIN = [
    ("never-seen", _MISS + "  never seen function:\n    f id=<id> defined at <file>:<line>",
     lambda m: [(1,)]),
    ("weak-type", _CLOSEST + "  different input types:\n  * at x, now i32[]{weak_type=False} and "
     "before i32[]{weak_type=True}https://docs.jax.dev/en/latest/type_promotion.html#weak-types",
     lambda m: [(1,), (m.jnp.int32(1),)]),
    ("dtype", _CLOSEST + "  different input types:\n  * at x, now f32[] and before i32[]",
     lambda m: [(1,), (1.0,)]),
    ("shape", _CLOSEST + "  different input types:\n  * at x, now f32[3]({}) and before i32[]({})",
     lambda m: [(m.jnp.int32(1),), (m.jnp.ones(3),)]),
    ("pytree", _CLOSEST + "  different input pytree:\n  * at input path [0][0], now <class "
     "'list'> and before pytree leaf, so their Python types differ",
     lambda m: [(1,), ([1],)]),
    ("x64-context", _CLOSEST + "  Tracing context doesn't match, e.g. due to config or context "
     "manager.\n  * jax_enable_x64 differs: now True and before False",
     lambda m: [(1,), lambda g: x64(lambda m: g(1))(m)]),
]
_EXPLAIN_RUNS = [(n, lambda m, c=c: _explain(m, c)) for n, _, c in EXPLAIN] + [
    ("redefined-function", lambda m: [_explain(m, lambda m: [(1,)]) for _ in range(2)][1]),
    ("call-site-has-column", lambda m: _explain(m, lambda m: [(1,)]))]
_EXPLAINED = {}  # library name -> {case name: warnings}


def _explained(m, name):
  """Every explain case's warnings, the cases run once per library in one order: what they say
  depends on what was traced before (both libraries remember where functions were defined and
  called), so each library must have the same history whichever cases pytest selects."""
  runs = _EXPLAINED.get(m.name)
  if runs is None:
    runs = _EXPLAINED[m.name] = {n: fn(m) for n, fn in _EXPLAIN_RUNS}
  return runs[name]


for _name, _text, _calls in EXPLAIN:  # whole text too, except where earlier runs show (below)
  case(f"8.1/explain-{_name}", Frags([_text]), lambda m, _name=_name: _explained(m, _name),
       whole=_name != "never-seen")
case("8.1/explain-redefined-function", Frags([
    ("never seen function:\n    f id=<id> defined at <file>:<line>\n  but seen another function "
    "defined on the same line; maybe the function is\n  being re-defined repeatedly, preventing "
    "caching?")]), lambda m: _explained(m, "redefined-function"))
case("8.1/explain-call-site-has-column", Frags([_MISS]),
     lambda m: _explained(m, "call-site-has-column"))


# §8.2 tracer errors
def _first_lines(fn, *args, n=1):
  return err(fn, *args, lines=n)


def _last_line(fn, *args):
  return err(fn, *args, lines=100).splitlines()[-1]


_DOCS = "See https://docs.jax.dev/en/latest/errors.html#jax.errors."
_CONCRETE = ("ConcretizationTypeError: Abstract tracer value encountered where concrete value is "
             "expected: traced array with shape ")
TRACER_ERRORS = [
    ("bool-jit", ("TracerBoolConversionError: Attempted boolean conversion of traced array with "
     "shape bool[]."), lambda m: _first_lines(m.jax.jit(lambda x: 1 if x > 0 else 0), 1.0)),
    ("bool-vmap", ("TracerBoolConversionError: Attempted boolean conversion of traced array with "
     "shape bool[]."), lambda m: _first_lines(m.jax.vmap(lambda x: 1 if x > 0 else 0),
                                            m.jnp.ones(2))),
    ("bool-last-line", _DOCS + "TracerBoolConversionError",
     lambda m: _last_line(m.jax.jit(lambda x: 1 if x > 0 else 0), 1.0)),
    ("int", _CONCRETE + "int32[]\nThe problem arose with the `int` function. If trying to "
     "convert the data type of a value, try using `x.astype(int)` or `jnp.array(x, int)` "
     "instead.", lambda m: _first_lines(m.jax.jit(lambda x: int(x)), 1, n=2)),
    ("float", _CONCRETE + "float32[]", lambda m: _first_lines(m.jax.jit(lambda x: float(x)), 1.0)),
    ("item", _CONCRETE + "float32[]", lambda m: _first_lines(m.jax.jit(lambda x: x.item()), 1.0)),
    ("tolist", _CONCRETE + "float32[2]",
     lambda m: _first_lines(m.jax.jit(lambda x: x.tolist()), m.jnp.ones(2))),
    ("arange-bound", _CONCRETE + "int32[]",
     lambda m: _first_lines(m.jax.jit(lambda n: m.jnp.arange(n)), 3)),
    ("jit-continuation", Frags([
        "\nThe error occurred while tracing the function <lambda> at ", (" for jit. This concrete "
        "value was not available in Python because it depends on the value of the argument x.\n"),
        _DOCS + "ConcretizationTypeError"]),
     lambda m: err(m.jax.jit(lambda x: int(x)), 1, lines=10), False),
    ("vmap-continuation", Frags(["\nThis BatchTracer with object id ", " was created on line:\n"]),
     lambda m: err(m.jax.vmap(lambda x: int(x)), m.jnp.ones(2, "int32"), lines=10), False),
    ("index", ("TracerIntegerConversionError: The __index__() method was called on traced array "
     "with shape int32[]"), lambda m: _first_lines(m.jax.jit(lambda i: [1, 2, 3][i]), 1)),
    ("range", ("TracerIntegerConversionError: The __index__() method was called on traced array "
     "with shape int32[]"), lambda m: _first_lines(m.jax.jit(lambda i: range(i)), 1)),
    ("np-asarray", ("TracerArrayConversionError: The numpy.ndarray conversion method __array__() "
     "was called on traced array with shape float32[2]"),
     lambda m: _first_lines(m.jax.jit(np.asarray), m.jnp.ones(2))),
    ("numpy-function", ("TracerArrayConversionError: The numpy.ndarray conversion method "
     "__array__() was called on traced array with shape float32[2]"),
     lambda m: _first_lines(m.jax.jit(lambda x: np.sin(x)), m.jnp.ones(2))),
    ("leaked-input", ("UnexpectedTracerError: Encountered an unexpected tracer. A function "
     "transformed by JAX had a side effect, allowing for a reference to an intermediate value "
     "with type float32[] wrapped in a DynamicJaxprTracer to escape the scope of the "
     "transformation."), lambda m: _leak(m, lambda x: x)[0]),
    # The "(0.10.2 bug)" empty line of §8.2 is what JAX prints for a leaked *input* tracer;
    # see `leaked-intermediate` below for one created by user code.
    ("leaked-input-empty-line", Frags(["The leaked intermediate value was created on line . \n"]),
     lambda m: _leak(m, lambda x: x)[1], False),
    ("boolean-mask", ("NonConcreteBooleanIndexError: Array boolean indices must be concrete; got "
     "bool[3]"), lambda m: _first_lines(m.jax.jit(lambda x: x[x > 0]), m.jnp.ones(3))),
    ("tracer-as-shape", ("TypeError: Shapes must be 1D sequences of concrete values of integer "
     "type, got (JitTracer(~int32[]),)."),
     lambda m: _first_lines(m.jax.jit(lambda n: m.jnp.zeros(n)), 3)),
    ("grad-of-python-if", "2.0", lambda m: str(m.jax.grad(lambda x: x * 2 if x > 0 else -x)(1.0))),
    ("jvp-of-python-if", "2.0",
     lambda m: str(m.jax.jvp(lambda x: x * 2 if x > 0 else -x, (1.0,), (1.0,))[1])),
    ("classes", ("ConcretizationTypeError JAXTypeError JAXTypeError JAXTypeError JAXTypeError "
     "JAXIndexError"), lambda m: " ".join(c.__mro__[1].__name__ for c in [
         m.errors.TracerBoolConversionError, m.errors.ConcretizationTypeError,
         m.errors.TracerIntegerConversionError, m.errors.TracerArrayConversionError,
         m.errors.UnexpectedTracerError, m.errors.NonConcreteBooleanIndexError])),
]
for _name, _text, _fn, *_whole in TRACER_ERRORS:
  case(f"8.2/{_name}", _text, _fn, whole=not _whole)  # a trailing False: ids, paths
case("8.2/leaked-intermediate", Frags([
    "The function being traced when the value leaked was <lambda> at ", " traced for jit.\n",
    "The leaked intermediate value was created on line ", ("When the value was created, the final "
    "5 stack frames (most recent last) excluding JAX-internal frames were:")]),
    lambda m: _leak(m, lambda x: x * 2)[1],
    xfail="jaxlite's UnexpectedTracerError always prints the empty 'created on line . ' form: "
          "tracers keep no creation site (source info) nor the function being traced")
case("8.2/bool-error-text", "", lambda m: err(
    m.jax.jit(lambda x: 1 if x > 0 else 0), 1.0, lines=10).split("argument x.\n")[1].split(
        "See https")[0],
    xfail="deliberate: jaxlite's TracerBoolConversionError adds a 'Python control flow ... use "
          "jax.lax.cond ...' paragraph JAX 0.10.2 does not print (tests/test_control_flow.py "
          "asserts it)")


def _leak(m, make):
  box = []
  m.jax.jit(lambda x: box.append(make(x)) or x)(1.0)
  text = err(lambda: box[0] + 1, lines=30)
  return text.splitlines()[0], text


# §8.3 other transformation errors
TRANSFORM_ERRORS = [
    ("grad-int-input", ("TypeError: grad requires real- or complex-valued inputs (input dtype that "
     "is a sub-dtype of np.inexact), but got int32. If you want to use Boolean- or integer-valued "
     "inputs, use vjp or set allow_int to True."), lambda m: err(m.jax.grad(lambda x: x), 1)),
    ("grad-nonscalar", ("TypeError: Gradient only defined for scalar-output functions. Output had "
     "shape: (2,)."), lambda m: err(m.jax.grad(lambda x: x), m.jnp.ones(2))),
    ("grad-int-output", ("TypeError: grad requires real-valued outputs (output dtype that is a "
     "sub-dtype of np.floating), but got int32. For differentiation of functions with integer "
     "outputs, use jax.vjp directly."),
     lambda m: err(m.jax.grad(lambda x: x.astype("int32")), 1.0)),
    ("add-shapes", "TypeError: add got incompatible shapes for broadcasting: (2,), (3,).",
     lambda m: err(m.lax.add, m.jnp.ones(2), m.jnp.ones(3))),
    ("dot-general-contracting", ("TypeError: dot_general requires contracting dimensions to have "
     "the same shape, got (3,) and (2,)."), lambda m: err(
         m.lax.dot_general, m.jnp.ones(3), m.jnp.ones(2), (([0], [0]), ([], [])))),
    ("vmap-sizes", ("ValueError: vmap got inconsistent sizes for array axes to be mapped:\n"
     "  * one axis had size 2: axis 0 of argument x of type float32[2];\n"
     "  * one axis had size 3: axis 0 of argument y of type float32[3]"),
     lambda m: err(m.jax.vmap(lambda x, y: x), m.jnp.ones(2), m.jnp.ones(3), lines=3)),
    ("vmap-rank", ("ValueError: vmap was requested to map its argument along axis 2, which "
     "implies that its rank should be at least 3, but is only 1 (its shape is (2,))"),
     lambda m: err(m.jax.vmap(lambda x: x, in_axes=2), m.jnp.ones(2))),
    ("truth-value", ("ValueError: The truth value of an array with more than one element is "
     "ambiguous. Use a.any() or a.all()"), lambda m: err(bool, m.jnp.ones(2))),
    ("cond-branch-types", ("TypeError: cond branches must have equal output types but they differ."
     "\n"), lambda m: err(lambda: m.lax.cond(True, lambda: 1.0, lambda: 1), lines=2)),
    ("cond-branch-types-detail", Frags([
        ("The output of true_fun has type float32[] but the corresponding output of false_fun has "
        "type int32[], so the dtypes do not match.")]),
     lambda m: err(lambda: m.lax.cond(True, lambda: m.jnp.float32(1), lambda: m.jnp.int32(1)),
                   lines=20)),
]
for _name, _text, _fn in TRANSFORM_ERRORS:
  case(f"8.3/{_name}", _text, _fn)


# ================================================================================================
# §9 Devices and sharding (single-device parts; Mesh/NamedSharding/shard_map/pmap are not built)
# ================================================================================================
_SHARDING = "sharding not implemented"
DEVICES = [
    ("devices", "[CpuDevice(id=0)] cpu:0 0 cpu cpu 0", lambda m: (lambda d: (
        f"{m.jax.devices()} {d} {d.id} {d.platform} {d.device_kind} {d.process_index}"))(
            m.jax.devices()[0])),
    ("counts-backend", "1 1 cpu 1", lambda m: f"{m.jax.device_count()} "
     f"{m.jax.local_device_count()} {m.jax.default_backend()} {m.jax.process_count()}"),
    ("num-cpu-devices-default", "-1", lambda m: str(m.jax.config.jax_num_cpu_devices)),
    ("uncommitted-array", ("SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device) "
     "{CpuDevice(id=0)} False True True"), lambda m: (lambda x: (
         f"{x.sharding} {x.devices()} {x.committed} {x.is_fully_addressable} "
         f"{x.is_fully_replicated}"))(m.jnp.ones(3))),
    ("shard-repr", ("Shard(device=CpuDevice(id=0), index=(slice(None, None, None),), replica_id=0, "
     "data=[1. 1. 1.])"), lambda m: repr(m.jnp.ones(3).addressable_shards[0])),
    ("device-put-commits", "SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device) True",
     lambda m: (lambda x: f"{x.sharding} {x.committed}")(
         m.jax.device_put(m.jnp.ones(3), m.jax.devices()[0]))),
    ("vmap-psum", ("b:f32[] = psum[axes=(0,) axis_index_groups=None] a\n    c:f32[3] = "
     "broadcast_in_dim b"), lambda m: jaxpr(m, m.jax.vmap(lambda x: m.lax.psum(x, "i"),
                                                       axis_name="i"), m.jnp.ones(3))),
    ("vmap-pmean", ("b:f32[] = psum[axes=(0,) axis_index_groups=None] a\n    c:f32[] = div b "
     "3.0:f32[]"), lambda m: jaxpr(m, m.jax.vmap(lambda x: m.lax.pmean(x, "i"), axis_name="i"),
                                  m.jnp.ones(3))),
    ("vmap-axis-index", "b:i32[3] = iota[dimension=0 dtype=int32 shape=(3,) sharding=None] ",
     lambda m: jaxpr(m, m.jax.vmap(lambda x: m.lax.axis_index("i"), axis_name="i"),
                     m.jnp.ones(3))),
]
for _name, _text, _fn in DEVICES:
  case(f"9/{_name}", Frags([_text]) if "\n" in _text or "iota" in _text else _text, _fn)

_MULTI_DEVICE_SCRIPT = """
import importlib, sys
jax = importlib.import_module(sys.argv[1])
jnp = importlib.import_module(sys.argv[1] + ".numpy")
def err(f):
  try:
    f()
    return "no error"
  except Exception as e:
    return f"{type(e).__name__}: {e}"
jax.config.update("jax_num_cpu_devices", 4)
print(jax.devices(), jax.device_count(), jax.local_device_count())
x = jax.device_put(jnp.ones(2), jax.devices()[3])
print(x.sharding, x.committed)
y = jnp.ones(2) + x
print(y.sharding, y.committed)
a, b = (jax.device_put(jnp.ones(2), d) for d in jax.devices()[:2])
print(err(lambda: a + b))
f = lambda x, y: x + y
print(err(lambda: jax.jit(f)(a, b)))
print(err(lambda: jax.config.update("jax_num_cpu_devices", 2)))
"""
_MULTI = {}


def _multi_device(m, line):
  """Line `line` of the multi-device script's output (a fresh process: the count is frozen once
  the backend starts)."""
  if m.name not in _MULTI:
    _MULTI[m.name] = subprocess.run(
        [sys.executable, "-c", _MULTI_DEVICE_SCRIPT, m.name], capture_output=True, text=True,
        check=True, timeout=120).stdout.splitlines()
  return _MULTI[m.name][line]


_INCOMPATIBLE = ("ValueError: Received incompatible devices for jitted computation. Got argument "
                 "x of {f} with shape float32[2] and with device ids [0] on platform CPU and "
                 "argument y of {f} with shape float32[2] and with device ids [1] on platform CPU")
MULTI_DEVICE = [
    ("num-cpu-devices", "[CpuDevice(id=0), CpuDevice(id=1), CpuDevice(id=2), CpuDevice(id=3)] 4 4",
     0, None),
    ("device-put-device-3", "SingleDeviceSharding(device=CpuDevice(id=3), memory_kind=device) True",
     1, None),
    ("uncommitted-follows-committed",
     "SingleDeviceSharding(device=CpuDevice(id=3), memory_kind=device) True", 2, None),
    ("incompatible-devices-eager", _INCOMPATIBLE.format(f="add"), 3, None),
    ("incompatible-devices-jit", _INCOMPATIBLE.format(f="<lambda>"), 4, None),
    ("num-cpu-devices-too-late", ("RuntimeError: jax_num_cpu_devices config should be updated "
     "before backends are initialized i.e. before any JAX operation is executed. You should "
     "initialize this config immediately after `import jax`."), 5, None),
]
for _name, _text, _line, _xfail in MULTI_DEVICE:
  case(f"9/{_name}", _text, lambda m, _line=_line: _multi_device(m, _line), xfail=_xfail)
case("9/xla-flags-device-count", "[CpuDevice(id=0), CpuDevice(id=1), CpuDevice(id=2)]",
     lambda m: subprocess.run(
         [sys.executable, "-c", f"import {m.name}; print({m.name}.devices())"],
         capture_output=True, text=True, check=True, timeout=120,
         env={**__import__("os").environ,
              "XLA_FLAGS": "--xla_force_host_platform_device_count=3"}).stdout.strip())
for _name in ("typeof-explicitly-sharded", "make-mesh-explicit-axes", "mesh-auto-axes",
              "mesh-shape", "set-mesh", "with-mesh-deprecated", "mesh-reprs", "named-sharding-repr",
              "partition-spec-reprs", "sharded-shard-repr", "device-put-named-sharding",
              "jit-in-out-shardings-params", "shard-map-in-specs", "shard-map-out-specs-error",
              "shard-map-psum-invariant", "shard-map-auto-mesh-values", "shard-map-jaxpr",
              "pmap-as-shard-map", "pmap-result-sharding"):
  case(f"9/{_name}", "", lambda m: "", skip=_SHARDING)


# ================================================================================================
# §10 Numerics
# ================================================================================================
def _bits_equal(a, b):
  a, b = np.asarray(a), np.asarray(b)
  return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _ulps(a, b):
  """Largest distance in float32 units in the last place between two arrays."""
  def ordered(x):
    i = np.asarray(x, np.float32).view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)
  return int(np.max(np.abs(ordered(a) - ordered(b))))


_RNG = np.random.default_rng(0)
_XS = _RNG.standard_normal(4096).astype(np.float32) * 3
_YS = _RNG.standard_normal(4096).astype(np.float32) + 4
_ZS = _RNG.standard_normal(4096).astype(np.float32)
_TRANSCENDENTAL = {"exp": (np.exp, _XS), "log": (np.log, _YS), "log1p": (np.log1p, _YS),
                   "sin": (np.sin, _XS), "cos": (np.cos, _XS), "tanh": (np.tanh, _XS),
                   "expm1": (np.expm1, _XS), "sqrt": (np.sqrt, _YS), "tan": (np.tan, _ZS),
                   "arctan": (np.arctan, _XS)}
NUMERICS = [
    ("int-overflow-wraps", "-2147483648 0 -128", lambda m: " ".join(str(v) for v in [
        m.jnp.int32(2**31 - 1) + 1, m.jnp.uint8(255) + 1, m.jnp.int8(-128) * -1])),
    ("shifts-past-width", "0 0 -1 0", lambda m: " ".join(str(v) for v in [
        m.lax.shift_left(m.jnp.int32(1), m.jnp.int32(32)),
        m.lax.shift_right_logical(m.jnp.int32(-1), m.jnp.int32(32)),
        m.lax.shift_right_arithmetic(m.jnp.int32(-8), m.jnp.int32(40)),
        m.lax.shift_right_arithmetic(m.jnp.int32(8), m.jnp.int32(40))])),
    ("argmax-argmin-first-nan", "1 1", lambda m: (lambda x: (
        f"{m.jnp.argmax(x)} {m.jnp.argmin(x)}"))(m.jnp.array([1., np.nan, 0., np.nan]))),
    ("sort-nan-last-stable", "[ 0. -0.  1.  3. nan] [-0.  0.  1.  3. nan]", lambda m: " ".join(
        str(m.jnp.sort(m.jnp.array([3., np.nan, 1., z, -z]))) for z in (0., -0.))),
    ("eager-arithmetic-bit-identical", "True", lambda m: str(all(
        _bits_equal(f(m.jnp.asarray(_XS), m.jnp.asarray(_YS)), g(_XS, _YS)) for f, g in [
            (lambda a, b: a + b, np.add), (lambda a, b: a - b, np.subtract),
            (lambda a, b: a * b, np.multiply), (lambda a, b: a / b, np.divide),
            (lambda a, b: m.jnp.sqrt(b), lambda a, b: np.sqrt(b)),
            (lambda a, b: m.jnp.abs(a), lambda a, b: np.abs(a)),
            (lambda a, b: -a, lambda a, b: -a), (lambda a, b: m.jnp.floor(a), lambda a, b:
                                                 np.floor(a)),
            (lambda a, b: m.jnp.ceil(a), lambda a, b: np.ceil(a)),
            (lambda a, b: m.jnp.round(a), lambda a, b: np.round(a)),
            (lambda a, b: m.jnp.minimum(a, b), np.minimum),
            (lambda a, b: m.jnp.maximum(a, b), np.maximum),
            (lambda a, b: a.astype("float16"), lambda a, b: a.astype(np.float16))]))),
    ("eager-no-fma", "True", lambda m: str(_bits_equal(
        m.jnp.asarray(_XS) * m.jnp.asarray(_YS) + m.jnp.asarray(_ZS), _XS * _YS + _ZS))),
    # Same-signed terms (no cancellation): fused (XLA) and unfused (NumPy) a*b+c agree to 1 ulp.
    ("jit-fma-within-1-ulp", "True", lambda m: str(_ulps(m.jax.jit(lambda a, b, c: a * b + c)(
        _YS, _YS[::-1], np.append(_YS[1:], np.float32(1))), _FMA) <= 1)),
    ("float-to-int-saturates", "[ 2147483647 -2147483648           0           2          -2]",
     lambda m: str(m.jnp.array([1e10, -1e10, np.nan, 2.7, -2.7]).astype(m.jnp.int32))),
    ("jnp-round-half-even", "[ 0.  2.  2. -0.]",
     lambda m: str(m.jnp.round(m.jnp.array([0.5, 1.5, 2.5, -0.5])))),
    ("lax-round-away-from-zero", "[ 1.  2.  3. -1.]",
     lambda m: str(m.lax.round(m.jnp.array([0.5, 1.5, 2.5, -0.5])))),
    ("lax-div-rem-truncate", "-3 -1", lambda m: f"{m.lax.div(-7, 2)} {m.lax.rem(-7, 2)}"),
    ("floor-div-mod", "-4 1 -4.0 1.0", lambda m: " ".join(str(v) for v in [
        m.jnp.array(-7) // 2, m.jnp.array(-7) % 2, m.jnp.array(-7.) // 2, m.jnp.array(-7.) % 2])),
    ("int-division-by-zero", "[-1 -1] [-2 -2 -1] [0 0 0]", lambda m: " ".join(str(v) for v in [
        m.lax.div(m.jnp.array([7, -7]), m.jnp.array([0, 0])), m.jnp.array([5, -5, 0]) // 0,
        m.jnp.array([5, -5, 0]) % 0])),
    ("nan-through-max", "nan nan nan", lambda m: " ".join(str(v) for v in [
        m.jnp.maximum(np.nan, 1.), m.jnp.max(m.jnp.array([1., np.nan])),
        m.jnp.minimum(1., np.nan)])),
    ("transcendentals-within-8-ulp", "True", lambda m: str(all(
        _ulps(getattr(m.jnp, name)(x), f(x)) <= 8 for name, (f, x) in _TRANSCENDENTAL.items()))),
    ("logistic-erf-within-8-ulp", "True", lambda m: str(
        _ulps(m.jax.nn.sigmoid(_XS), (1 / (1 + np.exp(-_XS.astype(np.float64)))).astype(
            np.float32)) <= 8 and _ulps(m.lax.erf(_ZS), np.array(
                [__import__("math").erf(v) for v in _ZS.astype(np.float64)], np.float32)) <= 8)),
    ("sum-rtol-1e-5", "True", lambda m: str(abs(float(m.jnp.sum(_BIG_NORMALS)) - float(
        np.sum(_BIG_NORMALS.astype(np.float64)))) <= 1e-5 * float(np.abs(_BIG_NORMALS).sum()))),
    ("matmul-rtol-1e-5", "True", lambda m: str(bool(np.all(np.abs(np.asarray(
        m.jnp.asarray(_MAT) @ m.jnp.asarray(_MAT)) - _MAT.astype(np.float64) @ _MAT) <= 1e-5 *
        (np.abs(_MAT) @ np.abs(_MAT)))))),
]
_BIG_NORMALS = _RNG.standard_normal(1_000_003).astype(np.float32)
_FMA = (_YS.astype(np.float64) * _YS[::-1] + np.append(_YS[1:], 1.)).astype(np.float32)
_MAT = _RNG.standard_normal((256, 256)).astype(np.float32)
for _name, _text, _fn in NUMERICS:
  case(f"10/{_name}", _text, _fn)


def test_random_normal_within_4_ulp_of_jax():
  """§10.4: random.normal is within 4 ulp of JAX (measured 3)."""
  jax = _jax()
  ours = LITE.random.normal(LITE.random.key(0), (10_000,))
  theirs = jax.random.normal(jax.random.key(0), (10_000,))
  assert _ulps(ours, theirs) <= 4


SAMPLERS_NEAR_JAX = [  # §4.4 formulas, checked against JAX draw for draw (absolute tolerance)
    ("exponential", 1e-6, lambda m: m.random.exponential(m.random.key(1), (2000,))),
    ("truncated_normal", 1e-6,
     lambda m: m.random.truncated_normal(m.random.key(1), -1.5, 2., (2000,))),
    ("gumbel", 1e-6, lambda m: m.random.gumbel(m.random.key(1), (2000,))),
    ("complex-normal", 1e-6, lambda m: m.random.normal(m.random.key(1), (2000,), "complex64")),
    ("categorical", 0, lambda m: m.random.categorical(
        m.random.key(1), m.jnp.log(m.jnp.arange(1., 6.)), shape=(2000,))),
    ("normal-x64", 1e-13, x64(lambda m: m.random.normal(m.random.key(1), (2000,)))),
    ("uniform-x64", 0, x64(lambda m: m.random.uniform(m.random.key(1), (2000,)))),
    ("normal-unpartitionable", 1e-6, lambda m: _unpartitioned(
        m, lambda: m.random.normal(m.random.key(1), (2000,)))),
]


@pytest.mark.parametrize("draw,atol", [pytest.param(f, t, id=n) for n, t, f in SAMPLERS_NEAR_JAX])
def test_samplers_near_jax(draw, atol):
  ours, theirs = np.asarray(draw(LITE)), np.asarray(draw(_jax()))
  assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
  np.testing.assert_allclose(ours, theirs, rtol=0, atol=atol)


def test_uniform_bits_equal_jax():
  """§10.1: uniform, randint, bernoulli, permutation, choice are bit-identical to JAX."""
  jax = _jax()
  for draw in (lambda m: m.random.uniform(m.random.key(3), (1000,), minval=-3.3, maxval=7.1),
               lambda m: m.random.randint(m.random.key(3), (1000,), -5, 1000),
               lambda m: m.random.bernoulli(m.random.key(3), 0.3, (1000,)),
               lambda m: m.random.permutation(m.random.key(3), 100),
               lambda m: m.random.choice(m.random.key(3), 50, (20,))):
    assert _bits_equal(draw(LITE), draw(jax))


# ================================================================================================
# The tests
# ================================================================================================
def _params(cases):
  return [pytest.param(c, id=c.id, marks=c.marks) for c in cases]


@pytest.mark.parametrize("c", _params(CASES))
def test_jaxlite(c):
  check(c.expected, c.fn(LITE))


_JAX_OUT = {}


def _on_jax(c):
  if c.id not in _JAX_OUT:
    _JAX_OUT[c.id] = c.fn(_jax())
  return _JAX_OUT[c.id]


@pytest.mark.parametrize(
    "c", [pytest.param(c, id=c.id, marks=[pytest.mark.skip(reason=c.skip)] if c.skip else [])
          for c in CASES if c.oracle is not False])
def test_jax_says_so(c):
  """The contract (or the JAX text a row records instead) is what real JAX prints."""
  if callable(c.oracle):
    assert c.oracle(_on_jax(c)), _on_jax(c)
  else:
    check(c.expected if c.oracle is True else c.oracle, _on_jax(c))


@pytest.mark.parametrize(
    "c", _params([c for c in CASES
                  if c.oracle is True and c.whole and isinstance(c.expected, Frags)]))
def test_same_as_jax(c):
  """Rows checked by fragments: the whole printout also equals JAX's."""
  assert c.fn(LITE) == _on_jax(c)
