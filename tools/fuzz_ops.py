"""The fuzzer's vocabulary: op families over jnp/lax/nn/random, each emitting IR ops whose source
templates work in both jaxlite and JAX (`jax`, `jnp`, `lax`, `nn` are bound by the runner).

Tolerance classes (`cls`): exact (bit-identical, JAX-COMPAT §10.1), struct (moves or selects
values, exact but continuous), disc (discontinuous: exact only on exact inputs), arith (exact
eager, 1 ulp under jit), transc (`ulps`), reduce (rtol 1e-5 of the magnitudes summed).
"""
from __future__ import annotations

import math

from fuzz_gen import X64_FLOATS, FLOATS, Gen, bits, default, kind, promote

# name -> (template, cls, ulps, kinds accepted)
_UNARY = [
  ("jnp.exp({0})", "transc", 4, "f"), ("jnp.log({0})", "transc", 4, "f"),
  ("jnp.log1p({0})", "transc", 4, "f"), ("jnp.expm1({0})", "transc", 8, "f"),
  ("jnp.sin({0})", "transc", 4, "f"), ("jnp.cos({0})", "transc", 4, "f"),
  ("jnp.tanh({0})", "transc", 8, "f"), ("jnp.arctan({0})", "transc", 4, "f"),
  ("jnp.sqrt({0})", "arith", 0, "f"), ("lax.rsqrt({0})", "transc", 4, "f"),
  ("jnp.cbrt({0})", "transc", 4, "f"), ("jnp.exp2({0})", "transc", 32, "f"),
  ("jnp.log2({0})", "transc", 8, "f"), ("nn.sigmoid({0})", "transc", 8, "f"),
  ("nn.softplus({0})", "transc", 8, "f"), ("nn.gelu({0})", "transc", 16, "f"),
  ("nn.silu({0})", "transc", 8, "f"), ("lax.erf({0})", "transc", 8, "f"),
  ("jnp.arcsinh({0})", "transc", 8, "f"), ("nn.relu({0})", "struct", 0, "fi"),
  ("jnp.negative({0})", "struct", 0, "fiu"), ("-{0}", "struct", 0, "fiu"),
  ("jnp.abs({0})", "struct", 0, "fiu"), ("jnp.floor({0})", "disc", 0, "fiub"),
  ("jnp.ceil({0})", "disc", 0, "fiu"), ("jnp.round({0})", "disc", 0, "fiu"),
  ("lax.round({0})", "disc", 0, "f"), ("jnp.trunc({0})", "disc", 0, "fiu"),
  ("jnp.sign({0})", "disc", 0, "fiub"), ("jnp.square({0})", "arith", 0, "fiu"),
  ("jnp.reciprocal({0})", "arith", 0, "fi"), ("jnp.isnan({0})", "disc", 0, "fiub"),
  ("jnp.isinf({0})", "disc", 0, "fi"), ("jnp.isfinite({0})", "disc", 0, "fiub"),
  ("jnp.signbit({0})", "disc", 0, "fi"), ("jnp.logical_not({0})", "disc", 0, "fiub"),
  ("~{0}", "exact", 0, "iub"), ("lax.clz({0})", "exact", 0, "iu"),
  ("lax.population_count({0})", "exact", 0, "iu"), ("jnp.nan_to_num({0})", "struct", 0, "f"),
  ("jnp.clip({0}, -1, 2)", "struct", 0, "fiu"),  # jnp.fix: gone from JAX 0.10 (RELIABILITY.md)
  ("jnp.positive({0})", "struct", 0, "fiu"), ("jnp.rint({0})", "disc", 0, "f"),
  ("jnp.deg2rad({0})", "arith", 1, "f"), ("jnp.sinc({0})", "transc", 16, "f"),
]

_BOOL_OUT = ("isnan", "isinf", "isfinite", "signbit", "logical_not")

# binary: template, cls, ulps, kinds, bool result
_BINARY = [
  ("{0} + {1}", "arith", 0, "fiub", False), ("{0} - {1}", "arith", 0, "fiu", False),
  # XLA:CPU's float division is not correctly rounded, even eagerly (JAX: float32 4.5 / 7 is
  # 0.64285719, IEEE 0.64285713): 1 ulp in every mode
  ("{0} * {1}", "arith", 0, "fiub", False), ("{0} / {1}", "arith", 1, "fiu", False),
  ("jnp.add({0}, {1})", "arith", 0, "fiub", False),
  ("jnp.subtract({0}, {1})", "arith", 0, "fiu", False),
  ("jnp.multiply({0}, {1})", "arith", 0, "fiu", False),
  ("jnp.true_divide({0}, {1})", "arith", 1, "fiu", False),
  ("{0} // {1}", "disc", 0, "fiu", False), ("{0} % {1}", "disc", 0, "fiu", False),
  ("jnp.fmod({0}, {1})", "disc", 0, "fiu", False),
  ("jnp.maximum({0}, {1})", "struct", 0, "fiub", False),
  ("jnp.minimum({0}, {1})", "struct", 0, "fiub", False),
  ("jnp.fmax({0}, {1})", "struct", 0, "fiu", False),
  ("jnp.power({0}, {1})", "transc", 16, "fiu", False), ("{0} ** {1}", "transc", 16, "fiu", False),
  ("jnp.arctan2({0}, {1})", "transc", 8, "f", False),
  ("jnp.hypot({0}, {1})", "transc", 4, "f", False),
  ("jnp.logaddexp({0}, {1})", "transc", 8, "f", False),
  ("jnp.copysign({0}, {1})", "struct", 0, "f", False),
  ("jnp.nextafter({0}, {1})", "disc", 0, "f", False),
  ("{0} == {1}", "disc", 0, "fiub", True), ("{0} < {1}", "disc", 0, "fiub", True),
  ("jnp.greater_equal({0}, {1})", "disc", 0, "fiub", True),
  ("jnp.not_equal({0}, {1})", "disc", 0, "fiub", True),
  ("jnp.logical_and({0}, {1})", "disc", 0, "fiub", True),
  ("jnp.logical_xor({0}, {1})", "disc", 0, "fiub", True),
  ("{0} & {1}", "exact", 0, "iub", False), ("{0} | {1}", "exact", 0, "iub", False),
  ("jnp.bitwise_xor({0}, {1})", "exact", 0, "iub", False),
  ("jnp.left_shift({0}, {1})", "exact", 0, "iu", False),
  ("{0} >> {1}", "exact", 0, "iu", False),
  ("jnp.heaviside({0}, {1})", "disc", 0, "f", False),
]

_LAX_BINARY = [("lax.add({0}, {1})", "arith"), ("lax.mul({0}, {1})", "arith"),
               ("lax.sub({0}, {1})", "arith"), ("lax.div({0}, {1})", "disc"),
               ("lax.rem({0}, {1})", "disc"), ("lax.max({0}, {1})", "struct"),
               ("lax.shift_right_logical({0}, {1})", "exact"),
               ("lax.shift_right_arithmetic({0}, {1})", "exact"),
               ("lax.nextafter({0}, {1})", "disc")]


def _fmt(v):
  return repr(v) if not (isinstance(v, float) and not math.isfinite(v)) else (
    "float('nan')" if v != v else f"float('{'-' if v < 0 else ''}inf')")


def unary(g: Gen):
  r = g.r
  x = g.pick()
  choices = [u for u in _UNARY if x.k in u[3]]
  if not choices:
    return
  tmpl, cls, ulps, _ = r.choice(choices)
  out_dt = "bool" if any(s in tmpl for s in _BOOL_OUT) else x.dtype
  if tmpl in ("lax.clz({0})", "lax.population_count({0})"):
    out_dt = x.dtype
  g.emit(tmpl, [x], cls, out_dt, x.shape, x.weak, ulps)


def _broadcastable(g: Gen, shape):
  r = g.r
  c = r.random()
  if c < 0.5 or not shape:
    return tuple(shape)
  if c < 0.7:
    return tuple(shape[1:])
  if c < 0.85:
    return tuple(1 if r.random() < 0.5 else d for d in shape)
  return tuple(r.choice([d, 1, 2]) for d in shape)  # sometimes incompatible: an error to match


def binary(g: Gen):
  r = g.r
  x = g.pick()
  c = r.random()
  if c < 0.35:
    y_expr, y = _fmt(r.choice([0, 1, -1, 2, 3, 0.5, -0.0, 2.5, True, 300, 2**31 - 1,
                               float("inf"), float("nan")])), None
  elif c < 0.55:
    y = g.pick(lambda v: v is not x) or x
  elif c < 0.8:
    y = g.new_input(dtype=x.dtype if r.random() < 0.6 else None, shape=_broadcastable(g, x.shape))
  else:
    y = x
  choices = [b for b in _BINARY if x.k in b[3]]
  tmpl, cls, ulps, _, boolean = r.choice(choices)
  if "**" in tmpl and _python_scalar(g, x) and (y is None or _python_scalar(g, y)):
    # Python's own int ** int (2147483647 ** 2147483647) never ends and no alarm interrupts
    # it (seed 502 hung both workers): the same operation through jnp, same draws
    tmpl = "jnp.power({0}, {1})"
  if y is None:
    tmpl = tmpl.replace("{1}", y_expr)
    if r.random() < 0.3:  # scalar on the left
      tmpl = tmpl.replace("{0}", "\0").replace(y_expr, "{0}", 1).replace("\0", y_expr)
    dt, weak = x.dtype, x.weak
    if "." in y_expr and x.k != "f" or "inf" in y_expr or "nan" in y_expr:
      dt = default("f", g.x64) if x.k != "f" else x.dtype
    g.emit(tmpl, [x], cls, "bool" if boolean else dt, x.shape, weak, ulps)
    return
  dt, weak = promote(x.dtype, x.weak, y.dtype, y.weak, g.x64)
  if "/" in tmpl and "//" not in tmpl and kind(dt) != "f" or "true_divide" in tmpl:
    dt = dt if kind(dt) == "f" else default("f", g.x64)
  shape = _bshape(x.shape, y.shape)
  g.emit(tmpl, [x, y], cls, "bool" if boolean else dt, shape, weak, ulps)


def _python_scalar(g: Gen, v) -> bool:
  return any(i["name"] == v.name and i["py"] for i in g.inputs)


def _bshape(a, b):
  n = max(len(a), len(b))
  a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
  return tuple(max(p, q) if 1 in (p, q) else p for p, q in zip(a, b))


def lax_binary(g: Gen):
  r = g.r
  x = g.pick()
  tmpl, cls = r.choice(_LAX_BINARY)
  if "shift" in tmpl and x.k not in "iu" or "nextafter" in tmpl and x.k != "f":
    return
  if r.random() < 0.5:
    y = g.new_input(dtype=x.dtype if r.random() < 0.9 else None, shape=x.shape)
  else:
    y = x
  g.emit(tmpl, [x, y], cls, x.dtype, x.shape, x.weak and y.weak)


def where(g: Gen):
  x = g.pick()
  y = g.pick() if g.r.random() < 0.5 else g.new_input(shape=_broadcastable(g, x.shape))
  c = g.new_input(dtype="bool", shape=_broadcastable(g, x.shape))
  dt, weak = promote(x.dtype, x.weak, y.dtype, y.weak, g.x64)
  tmpl = g.r.choice(["jnp.where({2}, {0}, {1})", "jnp.where({2} > 0, {0}, {1})",
                     "lax.select({2}, {0}, {1})"])
  g.emit(tmpl, [x, y, c], "struct", dt, _bshape(_bshape(x.shape, y.shape), c.shape), weak)


def cast(g: Gen):
  x = g.pick()
  dt = g.r.choice(g.dtypes() + ["int64", "float64"])
  tmpl = g.r.choice([f"{{0}}.astype(jnp.{dt})", f"lax.convert_element_type({{0}}, jnp.{dt})",
                     f"jnp.asarray({{0}}, dtype='{dt}')"])
  if not g.x64 and dt.endswith("64"):
    dt = dt.replace("64", "32")
  cls = "disc" if kind(dt) != "f" and x.k == "f" or kind(dt) == "b" else "struct"
  g.emit(tmpl, [x], cls, dt, x.shape)


def _axis(g: Gen, ndim, allow_none=True, allow_tuple=True):
  r = g.r
  c = r.random()
  if ndim == 0 or (allow_none and c < 0.25):
    return None
  if allow_tuple and c < 0.4 and ndim > 1:
    return tuple(sorted(r.sample(range(ndim), r.randint(1, ndim))))
  ax = r.randrange(ndim)
  if r.random() < 0.3:
    ax -= ndim
  if r.random() < 0.03:
    ax = ndim  # out of range: an error to match
  return ax


def _reduced(shape, axis, keepdims):
  nd = len(shape)
  axes = range(nd) if axis is None else [a % nd for a in
                                         (axis if isinstance(axis, tuple) else (axis,))]
  return tuple(1 if i in axes else d for i, d in enumerate(shape) if keepdims or i not in axes)


_REDUCTIONS = [("sum", "reduce", None), ("prod", "reduce", None), ("max", "struct", None),
               ("min", "struct", None), ("mean", "reduce", "f"), ("argmax", "disc", "i"),
               ("argmin", "disc", "i"), ("any", "disc", "b"), ("all", "disc", "b"),
               ("var", "reduce", "f"), ("std", "reduce", "f"), ("nansum", "reduce", None),
               ("nanmax", "struct", None)]


def reduction(g: Gen):
  r = g.r
  x = g.pick()
  name, cls, out_k = r.choice(_REDUCTIONS)
  arg = name in ("argmax", "argmin")
  axis = _axis(g, x.ndim, allow_tuple=not arg)
  keep = r.random() < 0.3
  kw = f", axis={axis}" + (", keepdims=True" if keep else "")
  tmpl = r.choice([f"jnp.{name}({{0}}{kw})", f"{{0}}.{name}({kw[2:]})"]) if name[:3] != "nan" \
    else f"jnp.{name}({{0}}{kw})"
  try:
    shape = _reduced(x.shape, axis, keep) if not (arg and axis is None) else ()
  except ZeroDivisionError:
    shape = ()
  if out_k == "i":
    dt = default("i", g.x64)
  elif out_k == "b":
    dt = "bool"
  elif out_k == "f":
    dt = x.dtype if x.k == "f" else default("f", g.x64)
  elif name in ("sum", "prod", "nansum") and x.k in "biu" and bits(x.dtype) < 32:
    dt = default("u" if x.k == "u" else "i", g.x64)
  else:
    dt = x.dtype
  red = max(1, x.size // max(1, math.prod(shape)))
  g.emit(tmpl, [x], cls, dt, shape, False, 0, red)


def cumulative(g: Gen):
  r = g.r
  x = g.pick(lambda v: v.ndim > 0)
  if x is None:
    return
  ax = r.randrange(x.ndim) - (x.ndim if r.random() < 0.3 else 0)
  name, cls = r.choice([("jnp.cumsum", "reduce"), ("jnp.cumprod", "reduce"),
                        ("lax.cummax", "struct"), ("lax.cumsum", "reduce"),
                        ("lax.cummin", "struct"), ("jnp.diff", "arith")])
  tmpl = f"{name}({{0}}, axis={ax})"
  if name.startswith("lax.") and r.random() < 0.3:
    tmpl = f"{name}({{0}}, axis={ax}, reverse=True)"
  shape = list(x.shape)
  if name == "jnp.diff":
    shape[ax] = max(0, shape[ax] - 1)
  dt = x.dtype
  if name in ("jnp.cumsum", "jnp.cumprod") and x.k in "biu" and bits(x.dtype) < 32:
    dt = default("u" if x.k == "u" else "i", g.x64)
  g.emit(tmpl, [x], cls, dt, shape, False, 0, x.shape[ax] if x.shape else 1)


def shape_op(g: Gen):
  r = g.r
  x = g.pick()
  nd, shape = x.ndim, x.shape
  c = r.randrange(12)
  if c == 0:
    new = _factor(g, x.size)
    tmpl = r.choice([f"jnp.reshape({{0}}, {new})", f"{{0}}.reshape({new})",
                     f"lax.reshape({{0}}, {new})"])
  elif c == 1 and nd:
    perm = tuple(r.sample(range(nd), nd))
    tmpl, new = f"jnp.transpose({{0}}, {perm})", tuple(shape[p] for p in perm)
  elif c == 2:
    ax = r.randint(-nd - 1, nd)
    new = list(shape)
    new.insert(ax % (nd + 1), 1)
    tmpl = f"jnp.expand_dims({{0}}, {ax})"
  elif c == 3:
    tmpl, new = "jnp.squeeze({0})", tuple(d for d in shape if d != 1)
  elif c == 4 and nd:
    ax = _axis(g, nd, allow_tuple=True)
    tmpl, new = f"jnp.flip({{0}}, {ax})", shape
  elif c == 5:
    new = (2,) + tuple(shape)
    tmpl = f"jnp.broadcast_to({{0}}, {new})"
  elif c == 6 and nd:
    ax = r.randrange(nd)
    new = list(shape)
    new[ax] *= 2
    tmpl = f"jnp.concatenate([{{0}}, {{0}}], axis={ax})"
  elif c == 7:
    ax = r.randint(0, nd)
    new = list(shape)
    new.insert(ax, 2)
    tmpl = f"jnp.stack([{{0}}, {{0}}], axis={ax})"
  elif c == 8:
    tmpl, new = "jnp.ravel({0})", (x.size,)
  elif c == 9 and nd:
    ax = r.randrange(nd)
    new = list(shape)
    new[ax] *= 2
    tmpl = f"jnp.repeat({{0}}, 2, axis={ax})"
  elif c == 10 and nd:
    ax = r.randrange(nd)
    tmpl, new = f"jnp.roll({{0}}, {r.randint(-3, 3)}, axis={ax})", shape
  elif c == 11 and nd:
    cfg = [(r.randint(-1, 2), r.randint(-1, 2), r.randint(0, 1)) for _ in range(nd)]
    new = [max(0, d + lo + hi + max(0, d - 1) * it) for d, (lo, hi, it) in zip(shape, cfg)]
    tmpl = f"lax.pad({{0}}, jnp.zeros((), {{0}}.dtype), {cfg})"
  else:
    return
  g.emit(tmpl, [x], "struct", x.dtype, new, x.weak)


def _factor(g: Gen, n):
  r = g.r
  if n == 0:
    return r.choice([(0,), (2, 0), (0, 3)])
  if r.random() < 0.3:
    return (-1,) if r.random() < 0.5 else (n,)
  divs = [d for d in range(1, n + 1) if n % d == 0]
  d = r.choice(divs)
  return (d, n // d) if r.random() < 0.7 else (n // d, 1, d)


def slicing(g: Gen):
  r = g.r
  x = g.pick(lambda v: v.ndim > 0)
  if x is None:
    return
  c = r.randrange(6)
  d0 = x.shape[0]
  if c == 0:
    a, b, s = r.randint(-4, 4), r.choice([None, r.randint(-4, 5)]), r.choice([None, 1, 2, -1])
    sl = f"{a}:{'' if b is None else b}" + ("" if s is None else f":{s}")
    new = (len(range(*slice(a, b, s).indices(d0))),) + x.shape[1:]
    tmpl = f"{{0}}[{sl}]" if r.random() < 0.6 else f"{{0}}[..., {sl}]"
    if "..." in tmpl:
      new = x.shape[:-1] + (len(range(*slice(a, b, s).indices(x.shape[-1]))),)
  elif c == 1:
    i = r.randint(-d0 - 1, d0)
    tmpl, new = f"{{0}}[{i}]", x.shape[1:]
  elif c == 2:
    starts = [r.randint(-2, d + 2) for d in x.shape]
    sizes = [r.randint(0, d) for d in x.shape]
    tmpl = r.choice([f"lax.dynamic_slice({{0}}, {starts}, {sizes})",
                     f"lax.dynamic_slice({{0}}, jnp.array({starts}), {sizes})"])
    new = sizes
  elif c == 3:
    idx = [r.randint(-d0 - 2, d0 + 1) for _ in range(r.randint(0, 4))]
    tmpl = r.choice([f"{{0}}[jnp.array({idx}, dtype=jnp.int32)]",
                     f"jnp.take({{0}}, jnp.array({idx}, dtype=jnp.int32), axis=0)",
                     f"jnp.take({{0}}, jnp.array({idx}, dtype=jnp.int32), axis=0, mode='clip')"])
    new = (len(idx),) + x.shape[1:]
  elif c == 4:
    m = g.new_input(dtype="bool", shape=x.shape)
    tmpl = r.choice(["{0}[{1}]", "{0}[{0} > 0]" if x.k != "b" else "{0}[{0}]"])
    g.emit(tmpl, [x, m], "struct", x.dtype, (sum(m_ for m_ in
                                                  g.inputs[-1]["values"]),), x.weak)
    return
  else:
    upd = g.new_input(dtype=x.dtype, shape=tuple(r.randint(0, d) for d in x.shape))
    starts = [r.randint(-2, d + 1) for d in x.shape]
    g.emit(f"lax.dynamic_update_slice({{0}}, {{1}}, {starts})", [x, upd], "struct", x.dtype,
           x.shape, x.weak)
    return
  g.emit(tmpl, [x], "struct", x.dtype, new, x.weak)


def at_update(g: Gen):
  r = g.r
  x = g.pick(lambda v: v.ndim > 0)
  if x is None:
    return
  d0 = x.shape[0]
  idx = r.choice([str(r.randint(-d0 - 1, d0)), f"{r.randint(-1, 2)}:",
                  f"jnp.array({[r.randint(-d0 - 1, d0) for _ in range(r.randint(1, 3))]})"])
  method = r.choice(["set", "add", "multiply", "min", "max", "get"])
  val = _fmt(r.choice([0, 1, -1, 2.5, 7, float("nan"), True])) if r.random() < 0.6 else "{1}"
  args = [x]
  if val == "{1}":
    args.append(g.new_input(dtype=x.dtype if r.random() < 0.8 else None, shape=()))
  mode = r.choice(["", "", ", mode='drop'", ", mode='clip'", ", mode='promise_in_bounds'"])
  if method == "get":
    mode = r.choice(["", ", mode='fill'", ", mode='fill', fill_value=-1"])
    tmpl, cls = f"{{0}}.at[{idx}].get({mode[2:]})", "struct"
    shape = None
  else:
    tmpl = f"{{0}}.at[{idx}].{method}({val}{mode})"
    cls = "arith" if method in ("add", "multiply") else "struct"
    shape = x.shape
  if shape is None:
    shape = x.shape[1:] if idx.lstrip("-").isdigit() else x.shape
  g.emit(tmpl, args, cls, x.dtype, shape, x.weak)


def dot(g: Gen):
  r = g.r
  x = g.pick(lambda v: 1 <= v.ndim <= 2)
  if x is None:
    return
  k = x.shape[-1]
  c = r.randrange(5)
  dt = x.dtype if r.random() < 0.8 else None
  if c == 0:
    y = g.new_input(dtype=dt, shape=(k, r.randint(0, 3)))
    tmpl = r.choice(["jnp.dot({0}, {1})", "{0} @ {1}", "jnp.matmul({0}, {1})"])
    new = x.shape[:-1] + y.shape[1:]
  elif c == 1:
    y = g.new_input(dtype=dt, shape=(k,))
    tmpl, new = "jnp.dot({0}, {1})", x.shape[:-1]
  elif c == 2 and x.ndim == 2:
    y = g.new_input(dtype=dt, shape=(k, 2))
    tmpl, new = "jnp.einsum('ij,jk->ki', {0}, {1})", (2, x.shape[0])
  elif c == 3:
    y = g.new_input(dtype=dt, shape=x.shape)
    tmpl, new = "jnp.einsum('...i,...i->...', {0}, {1})", x.shape[:-1]
  else:
    y = g.new_input(dtype=dt, shape=(r.randint(0, 3),))
    tmpl, new = "jnp.outer({0}, {1})", (x.size, y.size)
  dtp, _ = promote(x.dtype, False, y.dtype, False, g.x64)
  g.emit(tmpl, [x, y], "reduce" if c != 4 else "arith", dtp, new, False, 0, k)


def sort(g: Gen):
  r = g.r
  x = g.pick(lambda v: v.ndim > 0)
  if x is None:
    return
  ax = r.randrange(x.ndim) - (x.ndim if r.random() < 0.3 else 0)
  c = r.randrange(5)
  if c == 0:
    g.emit(f"jnp.sort({{0}}, axis={ax})", [x], "struct", x.dtype, x.shape, x.weak)
  elif c == 1:
    g.emit(f"jnp.argsort({{0}}, axis={ax})", [x], "disc", default("i", g.x64), x.shape)
  elif c == 2:
    g.emit("lax.sort({0})", [x], "struct", x.dtype, x.shape, x.weak)
  elif c == 3:
    k = r.randint(0, x.shape[-1] + 1)
    g.emit(f"lax.top_k({{0}}, {k})[0]", [x], "struct", x.dtype, x.shape[:-1] + (k,), x.weak)
  else:
    g.emit(f"jnp.sort({{0}}, axis={ax}, descending=True)", [x], "struct", x.dtype, x.shape,
           x.weak)


def control(g: Gen):
  r = g.r
  x = g.pick()
  c = r.randrange(5)
  one = "1" if x.k != "b" else "True"
  if c == 0:
    tmpl = r.choice([f"lax.cond(jnp.sum({{0}}) > 0, lambda a: a * 2, lambda a: a - {one}, {{0}})",
                     "lax.cond(True, lambda a: a, lambda a: -a, {0})",
                     "lax.cond(jnp.all({0} < 1), lambda a: jnp.abs(a), lambda a: a + a, {0})"])
    g.emit(tmpl, [x], "arith", x.dtype, x.shape, x.weak)
  elif c == 1:
    n = r.randint(0, 3)
    tmpl = r.choice([f"lax.fori_loop(0, {n}, lambda i, c: c * 2, {{0}})",
                     f"lax.fori_loop(0, {n}, lambda i, c: c + i, {{0}})",
                     f"lax.fori_loop(0, {n}, lambda i, c: jnp.sin(c), {{0}})"])
    g.emit(tmpl, [x], "transc" if "sin" in tmpl else "arith", x.dtype, x.shape, x.weak, 4 * n)
  elif c == 2 and x.ndim > 0:
    tmpl = r.choice(["lax.scan(lambda c, r: (c + r, c * r), {0}[0], {0})[1]",
                     "lax.scan(lambda c, r: (c, r * 2), 0, {0})[1]",
                     "lax.scan(lambda c, r: (jnp.maximum(c, r), c), {0}[0], {0}, reverse=True)[1]"])
    g.emit(tmpl, [x], "arith", x.dtype, x.shape, x.weak)
  elif c == 3:
    tmpl = "lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2), (0, {0}))[1]"
    g.emit(tmpl, [x], "arith", x.dtype, x.shape, x.weak)
  else:
    tmpl = "lax.switch(2, [lambda a: a, lambda a: a * 2, lambda a: a - a], {0})"
    g.emit(tmpl, [x], "arith", x.dtype, x.shape, x.weak)


def prng(g: Gen):
  r = g.r
  x = g.pick()
  seed = r.randint(0, 2**32 - 1) if r.random() < 0.3 else r.randint(0, 50)
  key = r.choice([f"jax.random.key({seed})", f"jax.random.PRNGKey({seed})",
                  f"jax.random.split(jax.random.key({seed}))[1]",
                  f"jax.random.fold_in(jax.random.key({seed}), 7)"])
  shape = tuple(x.shape)
  fdt = r.choice(FLOATS + (X64_FLOATS if g.x64 else []))
  c = r.randrange(8)
  if c == 0:
    e, cls, dt, ulps = f"jax.random.uniform({key}, {shape}, jnp.{fdt})", "exact", fdt, 0
  elif c == 1:
    e, cls, dt, ulps = f"jax.random.normal({key}, {shape}, jnp.{fdt})", "transc", fdt, 8
  elif c == 2:
    e, cls, dt, ulps = (f"jax.random.randint({key}, {shape}, -5, 100)", "exact",
                        default("i", g.x64), 0)
  elif c == 3:
    e, cls, dt, ulps = f"jax.random.bernoulli({key}, 0.3, {shape})", "exact", "bool", 0
  elif c == 4 and x.ndim:
    g.emit(f"jax.random.permutation({key}, {{0}})", [x], "struct", x.dtype, x.shape, x.weak)
    return
  elif c == 5:
    e, cls, dt, ulps = (f"jax.random.gamma({key}, {r.choice([0.3, 1.0, 2.5])}, {shape})",
                        "transc", default("f", g.x64), 16)
  elif c == 6:
    e, cls, dt, ulps = (f"jax.random.truncated_normal({key}, -1.0, 2.0, {shape})", "transc",
                        default("f", g.x64), 16)
  else:
    e, cls, dt, ulps = (f"jax.random.bits({key}, {shape}, jnp.uint{r.choice([8, 16, 32])})",
                        "exact", "uint32", 0)
  if r.random() < 0.5:
    g.emit(e, [], cls, dt, shape, False, ulps)
    return
  out, _ = promote(x.dtype, x.weak, dt, False, g.x64)
  if cls == "exact":
    g.emit(f"{{0}} + {e}", [x], "arith", out, shape, False, ulps)
    return
  # an inexact sample is its own op, so that the sum's tolerance scales with the sample's
  # magnitude (x + sample can cancel: a relative bound on the sum alone is too tight)
  v = g.emit(e, [], cls, dt, shape, False, ulps)
  g.emit("{0} + {1}", [x, v], "arith", out, shape, False, 0)


FAMILIES = {
  "unary": (14, unary), "binary": (16, binary), "lax_binary": (3, lax_binary),
  "where": (3, where), "cast": (5, cast), "reduction": (9, reduction),
  "cumulative": (3, cumulative), "shape": (8, shape_op), "slicing": (8, slicing),
  "at": (5, at_update), "dot": (4, dot), "sort": (3, sort), "control": (4, control),
  "prng": (4, prng),
}
