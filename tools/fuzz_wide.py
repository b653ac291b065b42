"""The fuzzer's wide vocabulary (issue 33): what the lax-centred families of tools/fuzz_ops.py
did not reach. Python scalars, typed scalars and arrays of every kind in every argument position
of jnp wrappers (clip, where, maximum, power ...); None and other non-arrays where an array
belongs; integer and bool inputs to float-only functions; empty arrays into every reduction and
norm; the jnp/nn wrappers whose staged form JAX fixes (norm, logsumexp, gelu, cumulative_sum,
argsort(stable=False), matmul with size-1 batch dimensions).

Each family takes the generator (tools/fuzz_gen.py `Gen`) and emits IR ops as fuzz_ops' do.
`Gen.program` draws them from a random stream of their own, so the programs the older families
make from a seed are unchanged (the campaigns and tests that name seeds stay valid).
"""
from __future__ import annotations

import math

from fuzz_gen import FLOATS, INTS, Gen, default, kind, promote

_PY = [0, 1, -1, 2, 0.5, -0.0, 2.5, -1.5, True, False, 300, 2**31 - 1, float("inf"),
       float("nan"), 1e10]
_TYPED = ["np.float32({})", "np.int32({})", "np.bool_({})", "np.float16({})", "np.uint8({})",
          "jnp.bfloat16({})"]


def _fmt(v):
  if isinstance(v, float) and not math.isfinite(v):
    return "float('nan')" if v != v else f"float('{'-' if v < 0 else ''}inf')"
  return repr(v)


def _shape_like(g: Gen, shape):
  r = g.r
  c = r.random()
  if c < 0.5 or not shape:
    return tuple(shape)
  if c < 0.75:
    return tuple(shape[1:])
  return tuple(1 if r.random() < 0.5 else d for d in shape)


def _operand(g: Gen, x, args: list) -> tuple[str, str, bool]:
  """One argument beside `x`: (source, dtype, weak) — a Python scalar, a typed NumPy/jnp
  scalar, a fresh array of any dtype, `x` itself or an earlier value."""
  r = g.r
  c = r.random()
  if c < 0.3:
    v = r.choice(_PY)
    k = "b" if isinstance(v, bool) else "f" if isinstance(v, float) else "i"
    return _fmt(v), default(k, g.x64), k != "b"
  if c < 0.45:
    tmpl = r.choice(_TYPED)
    v = r.choice([0, 1, 2, 3]) if "int" in tmpl or "bool" in tmpl else r.choice([0.5, -2.0, 3.0])
    dt = tmpl.split("(")[0].split(".")[1].rstrip("_")
    return tmpl.format(v), "bool" if dt == "bool" else dt, False
  if c < 0.8:
    y = g.new_input(dtype=r.choice(FLOATS + INTS + ["bool"]), shape=_shape_like(g, x.shape))
  elif c < 0.9:
    y = x
  else:
    y = g.pick(lambda v: v is not x) or x
  args.append(y)
  return "{%d}" % (len(args) - 1), y.dtype, y.weak


# template with slots {a}, {b}, {c} (x always fills {a}); the result's kind: "same", "bool", "f"
_MIXED = [
  ("jnp.clip({a}, {b}, {c})", "same"), ("jnp.clip({a}, min={b})", "same"),
  ("jnp.clip({a}, max={b})", "same"), ("jnp.clip({a}, {b})", "same"),
  ("jnp.where({c} > 0, {a}, {b})", "same"), ("jnp.where({a} > 0, {b}, {c})", "same"),
  ("jnp.maximum({b}, {a})", "same"), ("jnp.minimum({a}, {b})", "same"),
  ("jnp.power({b}, {a})", "same"), ("jnp.power({a}, {b})", "same"),
  ("jnp.arctan2({b}, {a})", "f"), ("jnp.logaddexp({a}, {b})", "f"),
  ("jnp.hypot({b}, {a})", "f"), ("jnp.fmax({a}, {b})", "same"),
  ("jnp.copysign({a}, {b})", "f"), ("jnp.heaviside({a}, {b})", "f"),
  ("jnp.floor_divide({b}, {a})", "same"), ("jnp.remainder({a}, {b})", "same"),
  ("jnp.isclose({a}, {b})", "bool"), ("jnp.full_like({a}, {b})", "same"),
  ("lax.clamp({b}, {a}, {c})", "same"), ("jnp.ldexp({a}, 3)", "f"),
  ("jnp.true_divide({b}, {a})", "f"), ("jnp.float_power({a}, {b})", "f"),
  ("jnp.nan_to_num({a}, nan={b})", "same"), ("jnp.allclose({a}, {b})", "bool"),
  ("jnp.array_equal({a}, {b})", "bool"), ("jnp.add({b}, {a})", "same"),
  ("jnp.subtract({b}, {a})", "same"), ("jnp.logical_or({a}, {b})", "bool"),
  ("jnp.bitwise_and({b}, {a})", "same"), ("jnp.fmod({b}, {a})", "same"),
]


def mixed_wrappers(g: Gen):
  """A jnp wrapper with Python scalars, typed scalars and arrays of any kind in every slot."""
  r = g.r
  x = g.pick()
  tmpl, res = r.choice(_MIXED)
  args = [x]
  fill = {"a": "{0}"}
  dt, weak = x.dtype, x.weak
  for slot in "bc":
    if "{" + slot + "}" in tmpl:
      src, d, w = _operand(g, x, args)
      fill[slot] = src
      if res == "same" and slot == "b":
        dt, weak = promote(dt, weak, d, w, g.x64)
  src = tmpl.format(**fill)
  if res == "bool":
    dt, weak = "bool", False
  elif res == "f" and kind(dt) != "f":
    dt = default("f", g.x64)
  shape = x.shape if "allclose" not in tmpl and "array_equal" not in tmpl else ()
  # power of floats is transcendental (XLA's pow and jaxlite's differ in the last ulps; seed
  # 301: 2.5 ** 0.9 is 2 ulps apart), not a structural op compared exactly; fmod, remainder
  # and floor_divide turn an ulp of an inexact divisor into an error as large as the quotient
  # times it (seed 310: fmod(-0.4, sigmoid(bf16 -3)), sigmoid 1 ulp apart, results 10% apart),
  # so like transcendental ops they are checked only from exact inputs
  cls = "transc" if res == "f" or tmpl.startswith(("jnp.power(", "jnp.fmod(", "jnp.remainder(",
                                                   "jnp.floor_divide(")) else "struct"
  g.emit(src, args, cls, dt, shape, weak, 16)


_FLOAT_ONLY = [
  "nn.sigmoid({0})", "nn.silu({0})", "nn.softplus({0})", "nn.gelu({0})",
  "nn.gelu({0}, approximate=False)", "nn.log_sigmoid({0})", "nn.softmax({0})",
  "nn.log_softmax({0})", "nn.elu({0})", "nn.celu({0})", "nn.selu({0})", "nn.mish({0})",
  "nn.standardize({0})", "nn.log1mexp({0})", "nn.logsumexp({0})", "nn.swish({0})",
  "nn.hard_tanh({0})", "nn.squareplus({0})", "nn.sparse_plus({0})", "nn.soft_sign({0})",
  "lax.exp({0})", "lax.log({0})", "lax.sin({0})", "lax.logistic({0})", "lax.tanh({0})",
  "lax.sqrt({0})", "lax.rsqrt({0})", "lax.erf({0})", "lax.lgamma({0})", "lax.digamma({0})",
  "lax.is_finite({0})", "lax.floor({0})", "lax.round({0})", "lax.cbrt({0})", "lax.exp2({0})",
  "lax.log1p({0})", "lax.expm1({0})", "lax.erf_inv({0})", "lax.erfc({0})", "lax.acos({0})",
  "lax.atan2({0}, {0})", "lax.pow({0}, {0})", "lax.nextafter({0}, {0})", "lax.reciprocal({0})",
  "jnp.exp({0})", "jnp.sinc({0})", "jnp.deg2rad({0})", "jnp.i0({0})", "jnp.log10({0})",
  "jnp.arccosh({0})", "jnp.signbit({0})", "jnp.isnan({0})", "jnp.frexp({0})[0]",
  "jnp.modf({0})[1]", "jnp.spacing({0})", "jnp.nextafter({0}, 1)",
]


def float_only(g: Gen):
  """A float-only function on an integer, unsigned or bool input (or any value)."""
  r = g.r
  x = g.pick() if r.random() < 0.3 else g.new_input(dtype=r.choice(INTS + ["bool"] + FLOATS))
  tmpl = r.choice(_FLOAT_ONLY)
  dt = x.dtype if kind(x.dtype) == "f" else default("f", g.x64)
  g.emit(tmpl, [x], "transc", "bool" if "is" in tmpl or "signbit" in tmpl else dt, x.shape,
         x.weak, 16)


_NON_ARRAYS = ["None", "'a'", "object()", "dict()", "[1.0, None]", "(1, 'b')", "print"]
_NON_ARRAY_CALLS = [
  "jnp.clip({n}, {0}, 1)", "jnp.clip({0}, {n})", "{0}.at[0].set({n})", "{0}.at[0].add({n})",
  "jnp.asarray({n}, dtype=jnp.float32)", "jnp.asarray({n})", "jnp.array({n})",
  "lax.convert_element_type({n}, jnp.float32)", "jnp.einsum('i,->i', {0}, {n})",
  "jnp.where({0} > 0, 1.0, {n})", "jnp.where({0} > 0, {n}, 1.0)", "jnp.where({n})",
  "jnp.add({0}, {n})", "jnp.multiply({n}, {0})", "lax.add({0}, {n})", "lax.sin({n})",
  "lax.max({0}, {n})", "jnp.sum({n})", "jnp.max({n})", "jnp.mean({n})", "jnp.sin({n})",
  "jnp.reshape({n}, (1,))", "jnp.stack([{0}, {n}])", "jnp.concatenate([{0}, {n}])",
  "jnp.zeros_like({n})", "jnp.full((2,), {n})", "jnp.dot({0}, {n})", "jnp.matmul({n}, {0})",
  "lax.select({0} > 0, {0}, {n})", "jnp.maximum({n}, {0})", "jnp.isclose({0}, {n})",
  "jnp.take({0}, {n})", "jnp.broadcast_to({n}, (2,))", "jnp.transpose({n})",
  "jnp.expand_dims({n}, 0)", "nn.relu({n})", "nn.sigmoid({n})", "nn.softmax({n})",
  "jnp.linalg.norm({n})", "jnp.sort({n})", "jnp.argsort({n})", "jnp.cumsum({n})",
  "nn.logsumexp({n})", "{0} + {n}", "{n} * {0}", "{0} < {n}", "jnp.logical_and({0}, {n})",
  "lax.clamp(0.0, {0}, {n})", "jnp.power({0}, {n})", "jnp.tile({n}, 2)",
]


def non_array(g: Gen):
  """None or another non-array where an array belongs: the error class must be JAX's."""
  r = g.r
  x = g.pick(lambda v: v.ndim > 0) or g.new_input(shape=(3,))
  tmpl = r.choice(_NON_ARRAY_CALLS).replace("{n}", r.choice(_NON_ARRAYS))
  g.emit(tmpl, [x], "struct", x.dtype, x.shape, x.weak)


_EMPTY_SHAPES = [(0,), (2, 0), (0, 3), (0, 0), (1, 0, 2)]
_REDUCE = ["jnp.sum", "jnp.prod", "jnp.max", "jnp.min", "jnp.mean", "jnp.var", "jnp.std",
           "jnp.argmax", "jnp.argmin", "jnp.any", "jnp.all", "jnp.nansum", "jnp.nanmax",
           "jnp.nanmin", "jnp.nanmean", "jnp.nanprod", "jnp.ptp", "jnp.median",
           "jnp.count_nonzero", "nn.logsumexp", "jnp.cumsum", "jnp.cumulative_sum",
           "jnp.cumulative_prod", "nn.softmax", "jnp.average", "jnp.nanvar", "jnp.nanstd",
           "jnp.amax", "jnp.linalg.vector_norm"]
_KW = ["", ", axis=0", ", axis=-1", ", keepdims=True", ", axis=0, keepdims=True",
       ", initial=0.0", ", axis=0, initial=-1.0", ", where={0} > 0", ", initial=1.0, where={0} > 0"]
_NORM_ORDS = ["None", "1", "2", "3", "0", "-1", "-2", "jnp.inf", "-jnp.inf", "'fro'", "'nuc'",
              "1.5", "-0.5"]


def empty_reduce(g: Gen):
  """An empty array into a reduction or a norm (or a non-empty one, sometimes)."""
  r = g.r
  x = g.new_input(dtype=r.choice(FLOATS * 2 + INTS + ["bool"]),
                  shape=r.choice(_EMPTY_SHAPES) if r.random() < 0.8 else None)
  if r.random() < 0.4:
    ord_ = r.choice(_NORM_ORDS)
    axis = r.choice(["", "", ", axis=0", ", axis=-1", ", axis=(0, 1)"])
    keep = ", keepdims=True" if r.random() < 0.2 else ""
    tmpl = f"jnp.linalg.norm({{0}}, ord={ord_}{axis}{keep})"
    if r.random() < 0.15:
      tmpl = f"jnp.linalg.matrix_norm({{0}}, ord={ord_ if ord_ != 'None' else 2!r})"
  else:
    tmpl = f"{r.choice(_REDUCE)}({{0}}{r.choice(_KW)})"
  dt = x.dtype if kind(x.dtype) == "f" else default("f", g.x64)
  g.emit(tmpl, [x], "reduce", dt, (), False, 16, max(1, x.size))


_STAGED = [
  ("nn.logsumexp({0}, axis=-1)", 1), ("nn.logsumexp({0}, axis=0, keepdims=True)", 1),
  ("nn.logsumexp({0}, b={0})", 0), ("nn.logsumexp({0}, axis=-1, return_sign=True)[1]", 1),
  ("nn.gelu({0}, approximate=False)", 0), ("jnp.cumulative_sum({0}, axis=-1)", 1),
  ("jnp.cumulative_sum({0}, axis=0, include_initial=True)", 1),
  ("jnp.cumulative_prod({0}, axis=-1)", 1),
  ("jnp.cumulative_sum({0}, axis=-1, dtype=jnp.int32)", 1),
  ("jnp.argsort({0}, stable=False)", 1), ("jnp.argsort({0}, descending=True)", 1),
  ("jnp.argsort({0}, stable=False, descending=True)", 1), ("jnp.sort({0}, stable=False)", 1),
  ("jnp.linalg.norm({0})", 0), ("jnp.linalg.norm({0}, ord=jnp.inf)", 1),
  ("jnp.linalg.norm({0}, ord=3)", 1), ("jnp.linalg.norm({0}, axis=-1, keepdims=True)", 1),
  ("jnp.var({0}, ddof=1)", 0), ("jnp.ptp({0})", 0), ("jnp.median({0})", 0),
  ("jnp.average({0}, axis=-1, weights=jnp.abs({0}) + 1)", 1), ("jnp.trace({0})", 2),
  ("jnp.tril({0})", 2), ("jnp.diagonal({0})", 2), ("jnp.kron({0}, {0})", 0),
  ("jnp.outer({0}, {0})", 0), ("jnp.round({0}, 1)", 0), ("jnp.searchsorted({0}, 0.5)", 1),
  ("jnp.nanmean({0}, axis=-1)", 1), ("jnp.interp({0}, jnp.arange(3.0), jnp.arange(3.0))", 0),
]
_MATMUL = [((1, 2, 3), (1, 3, 4)), ((1, 2, 3), (3, 4)), ((1, 1, 2, 3), (1, 3, 4)),
           ((2, 2, 3), (1, 3, 4)), ((2, 1, 2, 3), (1, 2, 3, 4)), ((3,), (1, 3, 2)),
           ((1, 2, 3), (3,)), ((1, 3), (2, 1, 3, 2))]


def staged(g: Gen):
  """A jnp/nn wrapper whose staged form (make_jaxpr text) JAX fixes, or a batched matmul."""
  r = g.r
  if r.random() < 0.3:
    sa, sb = r.choice(_MATMUL)
    dt = r.choice(FLOATS)
    a, b = g.new_input(dtype=dt, shape=sa), g.new_input(dtype=dt, shape=sb)
    tmpl = r.choice(["jnp.matmul({0}, {1})", "{0} @ {1}", "jnp.einsum('...ij,...jk->...ik', "
                     "{0}, {1})" if len(sa) > 1 and len(sb) > 1 else "jnp.matmul({0}, {1})"])
    g.emit(tmpl, [a, b], "reduce", dt, (), False, 0, sa[-1])
    return
  tmpl, min_nd = r.choice(_STAGED)
  x = g.pick(lambda v: v.ndim >= max(1, min_nd) and v.size > 0)
  if x is None or r.random() < 0.3:
    x = g.new_input(dtype=r.choice(FLOATS * 3 + INTS), shape=r.choice([(3,), (2, 3), (2, 2)]))
  dt = x.dtype if kind(x.dtype) == "f" else default("f", g.x64)
  g.emit(tmpl, [x], "transc", dt, x.shape, False, 16, max(1, x.size))


WIDE_FAMILIES = {
  "mixed_wrappers": (10, mixed_wrappers), "float_only": (6, float_only),
  "non_array": (4, non_array), "empty_reduce": (6, empty_reduce), "staged": (6, staged),
}
