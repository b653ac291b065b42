"""vmap: every primitive's batching rule against a Python loop over examples, the API (axes
specs, sizes, errors, tracer reprs), named axes with collectives, composition with jit and grad,
and JAX's printed vmapped jaxprs (oracle tests, skipped without jax).
"""
from __future__ import annotations

import importlib
import re
import sys

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite._src.base import core
from conftest import src_module_names
from jaxlite._src.interpreters import batching

B = 3  # batch size of the table tests


# --- the reference: a Python loop over examples ------------------------------------------------

def _is_key(x) -> bool:
  return hasattr(x, "dtype") and "key" in str(x.dtype)


def _plain(x):
  """A NumPy view of a result (key arrays compare by their data)."""
  if _is_key(x):
    x = jaxlite.random.key_data(x)
  return np.asarray(x)


def _stack(xs, axis):
  if _is_key(xs[0]):
    data = np.stack([_plain(x) for x in xs], axis)
    return jaxlite.random.wrap_key_data(data)
  return np.stack([np.asarray(x) for x in xs], axis)


def _example(x, b, axis):
  if _is_key(x):
    assert axis == 0
    return x[b]
  return np.take(x, b, axis=axis)


def loop_reference(f, args, in_axes, out_axes):
  """Stack, along `out_axes`, the results of `f` applied to one example at a time."""
  outs = []
  for b in range(B):
    ex = [a if d is None else _example(a, b, d) for a, d in zip(args, in_axes)]
    outs.append(jaxlite.tree.leaves(f(*ex)))
  return [_stack([o[i] for o in outs], out_axes) for i in range(len(outs[0]))]


def batched_args(make, in_axes, seed):
  """Arguments for `in_axes`: B independent examples stacked along each mapped axis."""
  rng = np.random.RandomState(seed)
  examples = [make(rng) for _ in range(B)]
  return [ex_arg if d is None else _stack([e[i] for e in examples], d)
          for i, (ex_arg, d) in enumerate(zip(examples[0], in_axes))]


def assert_close(got, want, tol):
  got, want = _plain(got), _plain(want)
  assert got.shape == want.shape, (got.shape, want.shape)
  assert got.dtype == want.dtype, (got.dtype, want.dtype)
  if got.dtype.kind in "fc":
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)
  else:
    np.testing.assert_array_equal(got, want)


# --- the table ---------------------------------------------------------------------------------

class Case:
  def __init__(self, name, fn, make, in_axes, out_axes=(0,), tol=1e-6):
    self.name, self.fn, self.make = name, fn, make
    self.in_axes, self.out_axes, self.tol = in_axes, out_axes, tol

  def params(self):
    return [pytest.param(self, ia, oa, id=f"{self.name}-{ia}-{oa}")
            for ia in self.in_axes for oa in self.out_axes]


def f32(*shape, lo=-1.0, hi=1.0):
  return lambda rng: rng.uniform(lo, hi, shape).astype(np.float32)


def i32(*shape, lo=-50, hi=50):
  return lambda rng: rng.randint(lo, hi, shape).astype(np.int32)


def c64(*shape):
  return lambda rng: (rng.randn(*shape) + 1j * rng.randn(*shape)).astype(np.complex64)


def u32(*shape):
  return lambda rng: rng.randint(0, 2**31, shape).astype(np.uint32)


def boolean(*shape):
  return lambda rng: rng.rand(*shape) > 0.5


def args(*makers):
  return lambda rng: [m(rng) for m in makers]


def _lax_call(name, call):
  """`call(lax.<name>, *args)` as a function of the args."""
  fn = getattr(lax, name)
  return lambda *a: call(fn, *a)


UNARY_AXES = [(0,), (1,), (2,)]
BINARY_AXES = [(0, 0), (1, None), (None, 0), (0, 2), (2, 1)]

_unit = f32(2, 3, lo=0.1, hi=0.9)
UNARY = [
    (name, getattr(lax, name), _unit) for name in
    ["neg", "sign", "floor", "ceil", "round", "is_finite", "exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "atanh", "sqrt", "rsqrt", "cbrt", "abs", "square", "erf", "erfc", "erf_inv", "lgamma", "digamma", "bessel_i0e", "bessel_i1e"]
] + [
    ("acosh", lax.acosh, f32(2, 3, lo=1.5, hi=3.0)),
    ("real", lax.real, c64(2, 3)), ("imag", lax.imag, c64(2, 3)), ("conj", lax.conj, c64(2, 3)),
    ("not", lax.bitwise_not, i32(2, 3)), ("population_count", lax.population_count, i32(2, 3)),
    ("clz", lax.clz, i32(2, 3, lo=0, hi=1000)),
    ("integer_pow", lambda x: lax.integer_pow(x, 3), _unit),
    ("convert_element_type", lambda x: lax.convert_element_type(x * 10, jnp.int32), _unit),
    ("bitcast_convert_type", lambda x: lax.bitcast_convert_type(x, jnp.int32), _unit),
    ("bitcast_narrowing", lambda x: lax.bitcast_convert_type(x, jnp.int16), _unit),
    ("reduce_precision", lambda x: lax.reduce_precision(x, 5, 10), _unit),
    ("round_even", lambda x: lax.round(x * 4, lax.RoundingMethod.TO_NEAREST_EVEN), _unit),
]

_pos = f32(2, 3, lo=0.5, hi=2.0)
BINARY = [
    (name, getattr(lax, name), args(_pos, _pos)) for name in
    ["add", "sub", "mul", "div", "pow", "max", "min", "atan2", "nextafter", "complex", "igamma", "igammac", "eq", "ne", "lt", "le", "gt", "ge"]
] + [
    (name, getattr(lax, name), args(i32(2, 3), i32(2, 3, lo=0, hi=6))) for name in
    ["bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right_arithmetic", "shift_right_logical", "mulhi"]
] + [
    ("rem", lax.rem, args(i32(2, 3), i32(2, 3, lo=1, hi=9))),
]

def _one_device_sharding():
  # reshard's values are its operand's; a one-device mesh works whatever the device count.
  from jaxlite.sharding import NamedSharding, PartitionSpec
  return NamedSharding(jaxlite.make_mesh((1,), ("x",)), PartitionSpec("x"))


CASES = [Case(n, f, args(m), UNARY_AXES) for n, f, m in UNARY]
CASES += [Case(n, f, m, BINARY_AXES) for n, f, m in BINARY]


def _auto_mesh_sharding():
  # A one-device mesh of Auto axes: with_sharding_constraint takes only Auto axes.
  from jaxlite.sharding import AxisType, NamedSharding, PartitionSpec
  mesh = jaxlite.make_mesh((1,), ("x",), axis_types=(AxisType.Auto,))
  return NamedSharding(mesh, PartitionSpec("x"))


def _inspected(x):
  x = jnp.asarray(x)  # as in JAX, a NumPy array has no sharding to inspect
  jaxlite.debug.inspect_array_sharding(x, callback=lambda s: None)
  return x * 2


CASES += [
    Case("sharding_constraint",
         lambda x: lax.with_sharding_constraint(x * 2, _auto_mesh_sharding()), args(f32(2, 3)),
         [(0,), (1,)]),
    Case("inspect_sharding", _inspected, args(f32(2, 3)), [(0,), (1,)]),
    Case("add_scalar", lax.add, args(f32(2, 3), f32()), [(0, 0), (None, 0), (1, None)]),
    Case("out_axes", lambda x, y: (lax.mul(x, y), lax.neg(y)), args(f32(2, 3), f32(2, 3)),
         [(0, 1), (None, 0), (2, None)], out_axes=(0, 1, 2, -1)),
    Case("select_n", lax.select_n, args(boolean(2, 3), f32(2, 3), f32(2, 3)),
         [(0, 0, 0), (None, 1, 0), (1, None, None), (0, 2, None), (None, None, 1)]),
    Case("select_n_scalar_pred", lax.select_n, args(boolean(), f32(2, 3), f32(2, 3)),
         [(0, 0, 0), (None, 1, 0), (0, None, None), (0, 2, None)]),
    Case("select_n_int_pred", lax.select_n,
         args(i32(2, 3, lo=0, hi=3), f32(2, 3), f32(2, 3), f32(2, 3)),
         [(0, 0, 0, 0), (1, None, 0, None), (None, 2, 1, 0)]),
    Case("clamp", lax.clamp, args(f32(2, 3, lo=-1, hi=0), f32(2, 3), f32(2, 3, lo=0, hi=1)),
         [(0, 0, 0), (None, 1, None), (1, None, 0)]),
    Case("clamp_scalar_bounds", lax.clamp, args(f32(), f32(2, 3), f32()),
         [(None, 0, None), (0, 1, None), (0, None, 0)]),
    # shape
    Case("broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (4, 2, 3), (1, 2)),
         args(f32(2, 3)), UNARY_AXES),
    Case("reshape", lambda x: lax.reshape(x, (3, 2)), args(f32(2, 3)), UNARY_AXES),
    Case("reshard", lambda x: jaxlite.sharding.reshard(x, _one_device_sharding()),
         args(f32(2, 3)), UNARY_AXES),
    Case("reshape_dims", lambda x: lax.reshape(x, (6,), (1, 0)), args(f32(2, 3)), UNARY_AXES),
    Case("squeeze", lambda x: lax.squeeze(x, (1,)), args(f32(2, 1, 3)), [(0,), (2,), (3,)]),
    Case("transpose", lambda x: lax.transpose(x, (2, 0, 1)), args(f32(2, 3, 4)),
         [(0,), (2,), (3,)]),
    Case("rev", lambda x: lax.rev(x, (0, 2)), args(f32(2, 3, 4)), [(0,), (1,), (3,)]),
    Case("pad", lambda x, v: lax.pad(x, v, ((1, 2, 1), (-1, 0, 0))), args(f32(2, 3), f32()),
         [(0, None), (1, 0), (None, 0), (2, 0)]),
    Case("concatenate", lambda x, y: lax.concatenate([x, y, x], 1),
         args(f32(2, 3), f32(2, 1)), [(0, 0), (1, None), (None, 2), (2, 1)]),
    Case("split", lambda x: lax.split(x, (1, 2), axis=1), args(f32(2, 3)), UNARY_AXES),
    Case("stack", lambda x, y: lax.stack([x, y], axis=1), args(f32(2, 3), f32(2, 3)),
         [(0, 0), (2, 2), (1, None), (None, 2)]),
    Case("unstack", lambda x: lax.unstack(x, axis=1), args(f32(2, 3)), UNARY_AXES),
    Case("tile", lambda x: lax.tile(x, (2, 1)), args(f32(2, 3)), UNARY_AXES),
    Case("iota", lambda x: x + lax.iota(jnp.float32, 3), args(f32(3)), [(0,), (1,)]),
    # reductions
    *[Case(name, _lax_call(name, lambda r, x: r(x, (0,))), args(f32(2, 3)), UNARY_AXES)
      for name in ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min")],
    Case("reduce_sum_all", lambda x: lax.reduce_sum(x, (0, 2)), args(f32(2, 3, 4)),
         [(0,), (2,), (3,)], tol=1e-5),
    *[Case(name, _lax_call(name, lambda r, x: r(x, (1,))), args(i32(2, 3)), UNARY_AXES)
      for name in ("reduce_and", "reduce_or", "reduce_xor")],
    Case("reduce_or_bool", lambda x: lax.reduce_or(x, (0,)), args(boolean(2, 3)), UNARY_AXES),
    *[Case(name, _lax_call(name, lambda r, x: r(x, 1, jnp.int32)), args(f32(2, 3)),
           UNARY_AXES) for name in ("argmax", "argmin")],
    *[Case(name, _lax_call(name, lambda r, x: r(x, 1, reverse=True)), args(_unit),
           UNARY_AXES, tol=1e-5)
      for name in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp")],
    Case("reduce", lambda x: lax.reduce(x, 0.0, lambda a, b: a * 0.5 + b, (0,)),
         args(f32(2, 3)), UNARY_AXES, tol=1e-5),
    Case("reduce_pair", lambda x, y: lax.reduce((x, y), (0.0, 1.0),
                                                lambda a, b: (a[0] + b[0], a[1] * b[1]), (1,)),
         args(f32(2, 3), f32(2, 3)), [(0, 0), (None, 1)], tol=1e-5),
    # contraction
    Case("matmul", lambda x, y: lax.dot_general(x, y, (((1,), (0,)), ((), ()))),
         args(f32(2, 3), f32(3, 4)), BINARY_AXES, tol=1e-5),
    Case("dot_batch_dims", lambda x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))),
         args(f32(2, 3, 4), f32(2, 4, 5)), [(0, 0), (3, None), (None, 1), (1, 3)], tol=1e-5),
    Case("dot_vectors", lambda x, y: lax.dot_general(x, y, (((0,), (0,)), ((), ()))),
         args(f32(3), f32(3)), [(0, 0), (1, None), (None, 0)], tol=1e-5),
    Case("dot_two_contractions", lambda x, y: lax.dot_general(x, y, (((0, 2), (2, 0)), ((), ()))),
         args(f32(2, 3, 4), f32(4, 5, 2)), [(0, 0), (3, None), (None, 2)], tol=1e-5),
    # slicing and indexing
    Case("slice", lambda x: lax.slice(x, (0, 1), (2, 3), (1, 2)), args(f32(2, 4)), UNARY_AXES),
    Case("dynamic_slice", lambda x, i: lax.dynamic_slice(x, (i, 1), (2, 2)),
         args(f32(4, 3), i32(lo=-2, hi=5)), [(0, 0), (None, 0), (1, None), (2, 0)]),
    Case("dynamic_update_slice", lambda x, u, i: lax.dynamic_update_slice(x, u, (i, 0)),
         args(f32(4, 3), f32(2, 3), i32(lo=-1, hi=4)),
         [(0, 0, 0), (None, None, 0), (1, None, None), (None, 2, None), (2, 0, 0)]),
    Case("gather_getitem", lambda x, i: jnp.asarray(x)[i], args(f32(5, 3), i32(2, lo=-5, hi=5)),
         [(0, 0), (None, 0), (1, None), (2, 1)]),
    Case("gather_dynamic_index", lambda x, i: jnp.asarray(x)[:, i], args(f32(3, 5), i32(lo=0, hi=5)),
         [(0, 0), (None, 0), (1, None)]),
    Case("scatter", lambda x, i, u: jnp.asarray(x).at[i].set(u), args(f32(5, 3), i32(2, lo=0, hi=5), f32(2, 3)),
         [(0, 0, 0), (None, 0, None), (1, None, 0), (None, None, 2), (2, 1, None)]),
    *[Case(f"scatter_{m}", lambda x, i, u, m=m: getattr(jnp.asarray(x).at[i], m)(u),
           args(f32(5, 3), i32(2, lo=0, hi=5), f32(2, 3)),
           [(0, 0, 0), (None, 0, None), (1, None, 0)], tol=1e-5)
      for m in ("add", "mul", "min", "max")],
    Case("scatter_sub", lambda x, i, u: lax.scatter_sub(
        x, i, u, lax.ScatterDimensionNumbers((1,), (0,), (0,))),
        args(f32(5, 3), i32(2, 1, lo=0, hi=5), f32(2, 3)), [(0, 0, 0), (None, 0, 1)]),
    Case("sort", lambda x: lax.sort(x, dimension=0), args(f32(4, 3)), UNARY_AXES),
    Case("sort_pair", lambda k, v: lax.sort((k, v), dimension=1, num_keys=1),
         args(i32(2, 4, lo=0, hi=3), f32(2, 4)), [(0, 0), (None, 0), (1, None), (2, 1)]),
    Case("top_k", lambda x: lax.top_k(x, 2), args(f32(2, 4)), UNARY_AXES),
]


def _inner_jit(x, y):
  return jaxlite.jit(lambda a, b: (jnp.sin(a) * b, b + 1.0))(x, y)


CASES += [
    Case("conv_general_dilated", lambda x, w: lax.conv_general_dilated(
        x, w, (2, 1), ((1, 0), (0, 1)), (1, 1), (1, 2), ("NHWC", "HWIO", "NCHW"),
        feature_group_count=2), args(f32(1, 4, 3, 4), f32(2, 2, 2, 4)),
         [(0, 0), (1, None), (None, 3), (3, 2)], tol=1e-5),
    Case("reduce_window_sum", lambda x: lax.reduce_window(x, 0., lax.add, (2, 2), (1, 2), "SAME"),
         args(f32(3, 4)), UNARY_AXES, tol=1e-6),
    Case("reduce_window_max", lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 2), (1, 1),
                                                          "VALID"), args(f32(3, 4)), UNARY_AXES),
    Case("reduce_window_min", lambda x: lax.reduce_window(x, np.inf, lax.min, (2, 1), (2, 1),
                                                          "VALID"), args(f32(4, 3)), UNARY_AXES),
    Case("reduce_window", lambda x: lax.reduce_window(x, 1., lax.mul, (2, 1), (1, 1), "SAME"),
         args(f32(4, 3)), UNARY_AXES),
]
CASES += [
    Case("jit", _inner_jit, args(f32(2, 3), f32(2, 3)), BINARY_AXES, out_axes=(0, 1)),
    Case("cond", lambda p, x: lax.cond(p, lambda v: v * 2.0, lambda v: v - 1.0, x),
         args(boolean(), f32(2, 3)), [(0, 0), (None, 0), (0, None)]),
    Case("while", lambda n, x: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 1.5),
                                              (0, x))[1],
         args(i32(lo=0, hi=4), f32(2, 3)), [(0, 0), (None, 1), (0, None)], tol=1e-5),
    Case("scan", lambda c, xs: lax.scan(lambda a, b: (a * 0.5 + b, a - b), c, xs),
         args(f32(3), f32(4, 3)), [(0, 0), (None, 1), (0, None), (0, 2)], tol=1e-5),
]


def _linalg_cases():
  from jaxlite._src.lax import fft as lax_fft
  from jaxlite._src.lax import linalg as lax_linalg

  def spd(rng):
    a = rng.randn(3, 3).astype(np.float32)
    return a @ a.T + 3 * np.eye(3, dtype=np.float32)

  tri = lambda rng: np.tril(spd(rng))
  return [
      Case("cholesky", lax_linalg.cholesky, lambda rng: [spd(rng)], [(0,), (2,)], tol=1e-4),
      Case("eigh", lambda a: lax_linalg.eigh(a)[1], lambda rng: [spd(rng)], [(0,), (1,)],
           tol=1e-4),
      Case("eig", lambda a: jnp.sort(jnp.real(lax_linalg.eig(
          a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0])),
           lambda rng: [spd(rng)], [(0,)], tol=1e-4),
      Case("lu", lambda a: lax_linalg.lu(a), lambda rng: [spd(rng)], [(0,), (2,)], tol=1e-4),
      Case("qr", lambda a: jnp.abs(lax_linalg.qr(a)[1]), lambda rng: [spd(rng)], [(0,), (1,)],
           tol=1e-4),
      Case("svd", lambda a: lax_linalg.svd(a, compute_uv=False), lambda rng: [spd(rng)],
           [(0,), (2,)], tol=1e-4),
      Case("triangular_solve", lambda a, b: lax_linalg.triangular_solve(a, b, left_side=True,
                                                                         lower=True),
           args(tri, f32(3, 2)), [(0, 0), (None, 1), (2, None)], tol=1e-4),
      Case("tridiagonal_solve", lax_linalg.tridiagonal_solve,
           args(f32(4, lo=0, hi=0.1), f32(4, lo=2, hi=3), f32(4, lo=0, hi=0.1), f32(4, 2)),
           [(0, 0, 0, 0), (None, 0, None, 1)], tol=1e-4),
      Case("lu_pivots_to_permutation", lambda p: lax_linalg.lu_pivots_to_permutation(p, 4),
           lambda rng: [np.array([rng.randint(i, 4) for i in range(3)], np.int32)], [(0,), (1,)]),
      Case("fft", lambda x: lax_fft.fft(x, "FFT", (4,)), args(c64(2, 4)), UNARY_AXES, tol=1e-5),
      Case("schur", lambda a: jnp.abs(lax_linalg.schur(a + a.T)[0]), lambda rng: [spd(rng)],
           [(0,), (1,)], tol=1e-4),
      Case("cholesky_update", lambda r, w: lax_linalg.cholesky_update(r, w),
           args(lambda rng: np.triu(spd(rng)), f32(3)), [(0, 0), (None, 0), (1, None)],
           tol=1e-4),
      Case("symmetric_product", lambda a, c: lax_linalg.symmetric_product(a, c, alpha=2.),
           args(f32(3, 3), f32(3, 3)), [(0, 0), (None, 1)], tol=1e-4),
      Case("householder_product", lax_linalg.householder_product,
           args(f32(4, 3), f32(3, lo=0, hi=1)), [(0, 0), (2, None)], tol=1e-4),
  ]


def _random_cases():
  from jaxlite import random
  from jaxlite._src.rng import prng
  keys = lambda rng: random.key(int(rng.randint(0, 1000)))
  return [
      Case("random_seed", lambda s: random.key(s), args(i32(lo=0, hi=100)), [(0,)]),
      Case("random_bits", lambda k: random.bits(k, (2,)), lambda rng: [keys(rng)], [(0,)]),
      Case("random_split", lambda k: random.split(k, 3), lambda rng: [keys(rng)], [(0,)]),
      Case("random_fold_in", random.fold_in, lambda rng: [keys(rng), rng.randint(0, 9)],
           [(0, 0), (None, 0), (0, None)]),
      Case("random_wrap", lambda d: random.wrap_key_data(d),
           lambda rng: [rng.randint(0, 99, (2,)).astype(np.uint32)],
           [(0,), (1,)]),
      Case("random_unwrap", random.key_data, lambda rng: [keys(rng)], [(0,)]),
      Case("threefry2x32", prng.threefry2x32_p.bind, args(*[u32(3)] * 4),
           [(0, 0, 0, 0), (None, 1, None, 0), (0, None, 1, None)]),
      Case("random_gamma", lambda k, a: random.gamma(k, a), lambda rng: [keys(rng),
                                                                        rng.uniform(1, 3)],
           [(0, 0), (None, 0), (0, None)], tol=1e-5),
  ]


def _optional_cases():
  """Cases for primitives defined outside lax: special functions, autodiff, custom rules."""
  from jaxlite._src.scipy import special as sp
  from jaxlite.ad_checkpoint import checkpoint_name
  betainc = lambda a, b, x: sp.regularized_incomplete_beta_p.bind(a, b, x)
  per_example_grad = jaxlite.grad(lambda x, y: jnp.sum(x * jnp.sin(x) * y))
  remat = jaxlite.checkpoint(lambda x, y: checkpoint_name(jnp.sin(x) * y, "h") + y)
  cases = [
      Case("regularized_incomplete_beta", betainc,
           args(f32(3, lo=0.5, hi=3), f32(3, lo=0.5, hi=3), f32(3, lo=0.05, hi=0.95)),
           [(0, 0, 0), (None, 0, 1), (1, None, None)], tol=1e-5),
      Case("add_any", per_example_grad, args(f32(2, 3), f32(3)), BINARY_AXES[:3], tol=1e-5),
      Case("stop_gradient", lambda x: jaxlite.stop_gradient(x) * 2.0, args(f32(2, 3)),
           UNARY_AXES),
      Case("custom_jvp_call", _custom_jvp_fn(), args(f32(2, 3), f32(3)), BINARY_AXES[:3]),
      Case("custom_vjp_call", _custom_vjp_fn(), args(f32(2, 3), f32(3)), BINARY_AXES[:3]),
      Case("remat2", remat, args(f32(2, 3), f32(3)), BINARY_AXES[:3]),
  ]
  cases += _callback_cases()
  return cases


def _callback_cases():
  """Host callbacks and checkify's check: batched by their own rules (surface-core)."""
  from jaxlite._src.transforms import callbacks
  from jaxlite._src.transforms import checkify
  sds = lambda x: jaxlite.ShapeDtypeStruct(x.shape, x.dtype)
  host_sin = lambda v: np.sin(np.asarray(v))
  return [
      Case("pure_callback", lambda x: callbacks.pure_callback(host_sin, sds(x), x,
                                                              vmap_method="sequential"),
           args(f32(2, 3)), UNARY_AXES[:2], tol=1e-6),
      Case("io_callback", lambda x: callbacks.io_callback(host_sin, sds(x), x),
           args(f32(2, 3)), UNARY_AXES[:2], tol=1e-6),
      Case("debug_callback", lambda x: (callbacks.debug_callback(lambda v: None, x), x + 1)[1],
           args(f32(2, 3)), UNARY_AXES[:2]),
      Case("debug_print", lambda x: (callbacks.debug_print("{}", x), x + 1)[1],
           args(f32(2, 3)), UNARY_AXES[:2]),
      Case("check", lambda x: (checkify.check(jnp.all(x < 2.0), "big"), x + 1)[1],
           args(f32(2, 3)), UNARY_AXES[:2]),
  ]


def _custom_jvp_fn():
  @jaxlite.custom_jvp
  def f(x, y):
    return jnp.sin(x) * y

  f.defjvp(lambda primals, tangents: (f(*primals), tangents[0] * primals[1]))
  return f


def _custom_vjp_fn():
  @jaxlite.custom_vjp
  def f(x, y):
    return jnp.exp(x) + y

  f.defvjp(lambda x, y: (f(x, y), x), lambda res, g: (g * jnp.exp(res), g))
  return f


def _special_and_barrier_cases():
  """Primitives of the lax remainder (special functions, optimization_barrier) and custom_vmap."""
  from jaxlite.custom_batching import sequential_vmap
  seq_sin = sequential_vmap(lambda x: jnp.sin(x))
  both = [(0, 0), (None, 0), (1, None)]
  return [
      Case("zeta", lax.zeta, args(f32(2, 3, lo=1.5, hi=3.0), f32(2, 3, lo=0.5, hi=2.0)), both,
           tol=1e-5),
      Case("polygamma", lax.polygamma,
           args(lambda rng: rng.randint(0, 3, (2, 3)).astype(np.float32),
                f32(2, 3, lo=0.5, hi=2.0)), both, tol=1e-4),
      Case("igamma_grad_a", lax.igamma_grad_a, args(_pos, _pos), both, tol=1e-4),
      Case("random_gamma_grad", lax.random_gamma_grad, args(_pos, _pos), both, tol=1e-4),
      Case("optimization_barrier", lambda x, y: lax.optimization_barrier((x * 2.0, y)),
           args(f32(2, 3), f32(2, 3)), both),
      Case("custom_vmap_call", seq_sin, args(f32(2, 3)), UNARY_AXES, tol=1e-6),
  ]


def _ref_program(x, i):
  """Every ref primitive: under vmap the refs are discharged into pure ops (state/)."""
  r = jaxlite.new_ref(x)
  r[0] = r[1] * 2.0
  jaxlite.ref.addupdate(r, i, x[2])
  old = jaxlite.ref.swap(r, jaxlite.ds(i, 2), r[jaxlite.ds(i, 2)] * 3.0)
  e = jaxlite.empty_ref(jaxlite.ShapeDtypeStruct((), np.float32))
  e[...] = x[0]
  out = jaxlite.ref.freeze(r) + e[...]
  jaxlite.ref.free_ref(e)
  return out, old


def _identity_ops_program(x, y):
  """Tokens, dce_sink and the identity-like primitives of lax/tokens.py and identity_ops.py."""
  from jaxlite._src.lax import identity_ops as ops
  lax.after_all(lax.create_token(), lax.create_token())
  lax.dce_sink(x)
  sem = (ops.ArrayCopySemantics.ALWAYS_COPY,)
  moved, = ops.device_put_p.bind(y, devices=(None,), srcs=(None,), copy_semantics=sem)
  total = ops.copy_p.bind(x) + moved + ops.stage_p.bind(x)
  total = total + ops.empty2_p.bind(dtype=np.dtype(np.float32), memory_space=None)
  return total, ops.eq_to_p.bind(x, y), ops.le_to_p.bind(x, y), ops.lt_to_p.bind(x, y)


def _householder_program(a, c):
  """hessenberg, tridiagonal, ormqr and geqrf (the Householder primitives)."""
  from jaxlite._src.lax.linalg_more import geqrf
  packed, taus = lax.linalg.hessenberg(a)
  tri = lax.linalg.tridiagonal(a + a.T, lower=False)
  return (packed, taus, tri, lax.linalg.ormqr(packed, taus, c, left=False, transpose=True),
          geqrf(a - c))


def _call_program(x, y):
  """`call_p` (binds a function) and `closed_call_p` (binds a ClosedJaxpr)."""
  from jaxlite._src.transforms.closed_call import call_p, closed_call_p
  a, = call_p.bind(lambda u, v: [jnp.sin(u) * v], x, y)
  body = jaxlite.make_jaxpr(lambda u, v: jnp.cos(u) + v)(x, y)
  b, = closed_call_p.bind(x, y, call_jaxpr=body)
  return a + b


def _ref_cases():
  return [Case("refs", _ref_program, args(f32(5), i32(lo=0, hi=3)),
               [(0, None), (0, 0), (None, 0)]),
          Case("identity_ops", _identity_ops_program, args(f32(2, 3), f32(2, 3)),
               [(0, 0), (None, 1), (1, None)]),
          Case("householder_reductions", _householder_program, args(f32(3, 3), f32(3, 3)),
               [(0, 0), (None, 1), (1, None)], tol=1e-5),
          Case("approx_top_k", lambda x: (lax.approx_max_k(x, 2), lax.approx_min_k(
              x, 1, reduction_dimension=0, aggregate_to_topk=False)), args(f32(3, 4)),
               [(0,), (1,)]),
          Case("call", _call_program, args(f32(2, 3), f32(2, 3)), [(0, 0), (None, 1), (1, None)])]


CASES += (_linalg_cases() + _random_cases() + _optional_cases()
          + _special_and_barrier_cases() + _ref_cases())
CASE_PARAMS = [p for c in CASES for p in c.params()]


@pytest.mark.parametrize("case,in_axes,out_axes", CASE_PARAMS)
def test_batching_rule_matches_loop(case, in_axes, out_axes):
  vals = batched_args(case.make, in_axes, seed=hash(case.name) % 2**31)
  want = loop_reference(case.fn, vals, in_axes, out_axes)
  got = jaxlite.tree.leaves(jaxlite.vmap(case.fn, in_axes, out_axes)(*vals))
  assert len(got) == len(want)
  for g, w in zip(got, want):
    assert_close(g, w, case.tol)


# `check` staged by jit without checkify raises ValueError, as in JAX (see test_checkify.py).
@pytest.mark.parametrize("case", [c for c in CASES if c.name not in ("random_wrap", "check")],
                         ids=lambda c: c.name)
def test_jit_of_vmap_matches_vmap(case):
  """The batched jaxpr runs through tier-0 codegen too (NumPy ints in params included)."""
  in_axes = case.in_axes[-1]
  vals = batched_args(case.make, in_axes, seed=1)
  f = jaxlite.vmap(case.fn, in_axes)
  for g, w in zip(jaxlite.tree.leaves(jaxlite.jit(f)(*vals)), jaxlite.tree.leaves(f(*vals))):
    assert_close(g, w, case.tol)


def _all_primitives():
  for name in src_module_names(skip=()):
    importlib.import_module(name)
  found = set()
  for name, mod in list(sys.modules.items()):
    if not name.startswith("jaxlite._src"):
      continue
    for v in vars(mod).values():
      if isinstance(v, core.Primitive):
        found.add(v)
  return found


def _primitives_of(jaxpr, out):
  for eqn in jaxpr.eqns:
    out.add(eqn.primitive)
    for sub in core.jaxprs_in_params(eqn.params):
      _primitives_of(sub, out)


# Never batched: iota takes no operands; custom_lin only lives in the linear jaxprs of
# linearize, which are transposed rather than batched (JAX has no rule either).
NEVER_BATCHED = {"iota", "custom_lin",
                 # Refs are never batched values: a ref made under vmap is discharged into pure
                 # ops before BatchTrace sees it (state/primitives.py), so these only ever meet
                 # unbatched refs, which BatchTrace binds without a rule; empty_ref has no operands.
                 "new_ref", "empty_ref", "freeze", "free_ref",
                 # As in JAX 0.10.2 (NotImplementedError): tests/test_linear_call.py
                 "linear_call",
                 # Compiler-internal: made only by passes.fuse_marked_fma after tracing is done.
                 "fma",
                 # JAX's batching rule is not the per-example loop (it draws the whole batch
                 # from the first key): vmap is checked against JAX's values in
                 # tests/test_ecosystem_prng_impls.py
                 "rng_bit_generator"}
# Primitives with named axes are checked against known answers below (no loop reference).
NAMED_AXES = {"psum", "pmax", "pmin", "all_gather", "axis_index",
              # checked by value under vmap(axis_name=) and shard_map in tests/test_shard_map.py
              "ppermute", "all_to_all", "reduce_scatter", "pbroadcast", "pvary",
              "psum_invariant", "shard_map",
              # shard_map's fused psums (device programs only): tests/test_spmd_programs.py
              "psum_fused"}


def test_every_primitive_has_a_batching_rule():
  prims = _all_primitives()
  missing = sorted(p.name for p in prims if p not in batching.primitive_batchers
                   and p not in batching.axis_primitive_batchers and p.name not in NEVER_BATCHED)
  assert missing == []


def test_every_primitive_is_in_the_table():
  covered = set()
  for case in CASES:
    example = case.make(np.random.RandomState(0))
    _primitives_of(jaxlite.make_jaxpr(case.fn)(*example).jaxpr, covered)
  names = {p.name for p in covered} | NAMED_AXES
  untested = sorted({p.name for p in _all_primitives()} - names - NEVER_BATCHED)
  assert untested == []


# --- in_axes, out_axes, sizes ------------------------------------------------------------------

def test_pytree_in_axes_prefixes():
  x, y = np.arange(6.0, dtype=np.float32).reshape(2, 3), np.ones(3, np.float32)
  f = lambda d, l: d["a"] * d["b"] + l[0] - l[1]
  out = jaxlite.vmap(f, in_axes=({"a": 0, "b": None}, [1, None]))(
      {"a": x, "b": y}, [x.T, np.float32(2)])
  np.testing.assert_allclose(out, x * y + x - 2)


def test_kwargs_are_mapped_along_axis_0():
  x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  out = jaxlite.vmap(lambda a, b: a + b, in_axes=(1,))(x.T, b=x)
  np.testing.assert_allclose(out, 2 * x)


def test_negative_axes_and_out_axes_pytree():
  x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
  a, b = jaxlite.vmap(lambda v: (v, v.sum()), in_axes=-1, out_axes=(-1, 0))(x)
  np.testing.assert_array_equal(a, x)
  np.testing.assert_array_equal(b, x.sum((0, 1)))


def test_unbatched_outputs_are_broadcast_and_none_out_axes():
  x = np.ones((4, 3), np.float32)
  y = jnp.arange(3.0)
  out = jaxlite.vmap(lambda a: (y, 1.0, 2), out_axes=(1, 0, 0))(x)
  np.testing.assert_array_equal(out[0], np.tile(np.arange(3.0)[:, None], (1, 4)))
  assert out[1].dtype == np.float32 and out[1].shape == (4,)
  assert out[2].dtype == np.int32 and out[2].shape == (4,)
  assert jaxlite.vmap(lambda a: y, out_axes=None)(x) is y


def test_axis_size_without_mapped_inputs():
  out = jaxlite.vmap(lambda: jnp.ones(2), axis_size=3)()
  np.testing.assert_array_equal(out, np.ones((3, 2)))
  out = jaxlite.vmap(lambda v: v * 2.0, in_axes=None, axis_size=2)(np.arange(3.0))
  np.testing.assert_array_equal(out, np.stack([np.arange(3.0) * 2] * 2))


def test_nested_vmap_matches_outer_product():
  x, y = np.arange(3.0, dtype=np.float32), np.arange(4.0, dtype=np.float32)
  out = jaxlite.vmap(jaxlite.vmap(lambda a, b: a * b, (None, 0)), (0, None))(x, y)
  np.testing.assert_array_equal(out, np.outer(x, y))
  out = jaxlite.vmap(jaxlite.vmap(jnp.sin, in_axes=1, out_axes=1), in_axes=1, out_axes=0)(
      np.ones((2, 3, 4), np.float32))
  assert out.shape == (3, 2, 4)


def test_vmap_of_numpy_and_mapped_bool_inputs():
  out = jaxlite.vmap(lambda v: v)(np.arange(3.0))
  assert out.dtype == np.float32
  np.testing.assert_array_equal(jaxlite.vmap(jnp.logical_not)(np.array([True, False])),
                                [False, True])


ERRORS = [
    ("inconsistent", lambda J, L: J.vmap(lambda a, b: a + b)(np.ones((2, 3)), np.ones(3)),
     ValueError, ("vmap got inconsistent sizes for array axes to be mapped:\n"
     "  * one axis had size 2: axis 0 of argument a of type float32[2,3];\n"
     "  * one axis had size 3: axis 0 of argument b of type float32[3]")),
    ("inconsistent_tree", lambda J, L: J.vmap(lambda a: a)(
        {"p": np.ones(2), "q": [np.ones(3), np.ones(4)]}),
     ValueError, ("vmap got inconsistent sizes for array axes to be mapped:\n"
     "  * one axis had size 2: axis 0 of argument a['p'] of type float32[2];\n"
     "  * one axis had size 3: axis 0 of argument a['q'][0] of type float32[3];\n"
     "  * one axis had size 4: axis 0 of argument a['q'][1] of type float32[4]")),
    ("inconsistent_kwargs", lambda J, L: J.vmap(lambda a, b: a)(np.ones(2), b=np.ones(3)),
     ValueError, ("vmap got inconsistent sizes for array axes to be mapped:\n"
     "  * one axis had size 2: axis 0 of argument a of type float32[2];\n"
     "  * one axis had size 3: axis 0 of kwargs['b'] of type float32[3]")),
    ("most_some", lambda J, L: J.vmap(lambda a, b, c, d, e: a)(
        np.ones(3), np.ones(3), np.ones((2, 3)), np.ones((2, 3)), np.ones(5)),
     ValueError, ("vmap got inconsistent sizes for array axes to be mapped:\n"
     "  * most axes (2 of them) had size 3, e.g. axis 0 of argument a of type float32[3];\n"
     "  * some axes (2 of them) had size 2, e.g. axis 0 of argument c of type float32[2,3];\n"
     "  * one axis had size 5: axis 0 of argument e of type float32[5]")),
    ("axis_size", lambda J, L: J.vmap(lambda a: a, axis_size=3)(np.ones((2, 3))),
     ValueError, ("vmap got inconsistent sizes for array axes to be mapped:\n"
     "  * the `axis_size` argument was 3;\n"
     "  * one axis had size 2: axis 0 of argument a of type float32[2,3]")),
    ("varargs", lambda J, L: J.vmap(lambda *a: a[0])(np.ones(3), np.ones(2)),
     ValueError, ("vmap got inconsistent sizes for array axes to be mapped:\n"
     "  * one axis had size 3: axis 0 of argument a of type float32[3];\n"
     "  * one axis had size 2: axis 0 of args[1] of type float32[2]")),
    ("rank", lambda J, L: J.vmap(lambda a: a, in_axes=2)(np.ones(2)), ValueError,
     ("vmap was requested to map its argument along axis 2, which implies that its rank should "
     "be at least 3, but is only 1 (its shape is (2,))")),
    ("rank_negative", lambda J, L: J.vmap(lambda a: a, in_axes=-3)(np.ones(2)), ValueError,
     ("vmap was requested to map its argument along axis -3, which implies that its rank should "
     "be at least 3, but is only 1 (its shape is (2,))")),
    ("scalar", lambda J, L: J.vmap(lambda a: a)(1.0), ValueError,
     ("vmap was requested to map its argument along axis 0, which implies that its rank should "
     "be at least 1, but is only 0 (its shape is ())")),
    ("no_mapped", lambda J, L: J.vmap(lambda a: a, in_axes=None)(np.ones(2)), ValueError,
     "vmap must have at least one non-None value in in_axes or axis_size must be specified"),
    ("empty", lambda J, L: J.vmap(lambda: 1.0)(), ValueError,
     ("vmap wrapped function must be passed at least one argument containing an array or "
     "axis_size must be specified, got empty *args=() and **kwargs={}")),
    ("in_axes_len", lambda J, L: J.vmap(lambda a, b: a, in_axes=(0,))(np.ones(2), np.ones(2)),
     ValueError, ("vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
     "positional arguments passed to the function, but got len(in_axes)=1, len(args)=2")),
    ("in_axes_type", lambda J, L: J.vmap(lambda a: a, in_axes="a"), TypeError,
     ("vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional "
     "arguments passed to the function, but got a.")),
    ("in_axes_leaf", lambda J, L: J.vmap(lambda a: a, in_axes=(1.0,)), TypeError,
     ("vmap in_axes must be an int, None, or (nested) container with those types as leaves, but "
     "got (1.0,).")),
    ("out_axes_leaf", lambda J, L: J.vmap(lambda a: a, out_axes="a"), TypeError,
     ("vmap out_axes must be an int, None, or (nested) container with those types as leaves, but "
     "got a.")),
    ("out_axes_range", lambda J, L: J.vmap(lambda a: a, out_axes=3)(np.ones((2, 3))),
     ValueError, "axis 3 is out of bounds for array of dimension 2"),
    ("out_axes_none", lambda J, L: J.vmap(lambda a: a, out_axes=None)(np.ones((2, 3))),
     ValueError, "at vmap out_axes, got axis spec None but output was batched on axis 0"),
    ("in_axes_prefix", lambda J, L: J.vmap(lambda d: d["a"], in_axes=({"a": 0},))(
        {"a": np.ones(2), "b": np.ones(2)}), ValueError,
     ("vmap in_axes specification must be a tree prefix of the corresponding value; \n"
     "  Mismatch details (1 found):\n"
     "  pytree structure error: different numbers of pytree children at key path\n"
     "    vmap in_axes[0]\n"
     "At that key path, the prefix pytree vmap in_axes has a subtree of type\n"
     "    <class 'dict'>\nwith 1 child keys\n    a\n"
     "but at the same key path the full pytree has a subtree of the same type but with 2 child "
     "keys\n    a b\nso the symmetric difference on key sets is\n    b")),
    ("out_axes_prefix", lambda J, L: J.vmap(lambda a: (a, a), out_axes=(0, 1, 2))(np.ones(2)),
     ValueError, ("vmap out_axes specification must be a tree prefix of the corresponding value; "
     "\n  Mismatch details (1 found):\n"
     "  pytree structure error: different lengths of tuple at key path\n    vmap out_axes\n"
     "At that key path, the prefix pytree vmap out_axes has a subtree of type tuple of length 3, "
     "but the full pytree has a subtree of the same type but of length 2.")),
    ("bad_output", lambda J, L: J.vmap(lambda a: "x")(np.ones(2)), TypeError,
     "Output from batched function 'x' with type <class 'str'> is not a valid JAX type"),
    ("bad_input", lambda J, L: J.vmap(lambda a: a)("s"), TypeError,
     "Argument 's' of type <class 'str'> is not a valid JAX type"),
    ("not_callable", lambda J, L: J.vmap(3), TypeError, "Expected a callable value, got 3"),
    ("unbound_psum", lambda J, L: J.vmap(lambda a: L.psum(a, "j"), axis_name="i")(
        np.ones(2)), NameError,
     "Found an unbound axis name: j. To fix this, please call psum under `jax.shard_map`."),
    ("unbound_axis_index", lambda J, L: L.axis_index("j"), NameError,
     "Found an unbound axis name: j. To fix this, please call axis_index under `jax.shard_map`."),
    ("unbound_constant_psum", lambda J, L: L.psum(np.ones(2), "j"), NameError,
     "unbound axis name: j"),
]


# Messages naming JAX's own internals (or values JAX builds) are checked here only.
NOT_IN_ORACLE = {"out_axes_prefix"}


@pytest.mark.parametrize("name,thunk,cls,msg", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_are_jaxs(name, thunk, cls, msg):
  with pytest.raises(cls) as info:
    thunk(jaxlite, lax)
  assert str(info.value) == msg


@pytest.mark.parametrize("name,thunk,cls,msg", [e for e in ERRORS if e[0] not in NOT_IN_ORACLE],
                         ids=[e[0] for e in ERRORS if e[0] not in NOT_IN_ORACLE])
def test_oracle_errors_match_jax(name, thunk, cls, msg):
  jax = pytest.importorskip("jax")
  with pytest.raises(cls) as info:
    thunk(jax, jax.lax)
  assert str(info.value) == msg


# --- tracers -----------------------------------------------------------------------------------

def test_tracer_repr_and_type():
  seen = []
  x = np.ones((4, 3), np.float32)
  jaxlite.vmap(lambda a: seen.append(repr(a)) or a)(x)
  jaxlite.vmap(lambda a: seen.append(str(a)) or a, in_axes=1)(x)
  jaxlite.jit(jaxlite.vmap(lambda a: seen.append(repr(a)) or a))(x)
  jaxlite.vmap(jaxlite.jit(lambda a: seen.append(repr(a)) or a))(x)
  assert seen == ["VmapTracer(aval=float32[3], batched=float32[4,3])",
                  "VmapTracer(aval=float32[4], batched=float32[4,3])",
                  "VmapTracer(aval=float32[3], batched=float32[4,3])",
                  "JitTracer(float32[3])"]


def test_tracer_is_unhashable_and_reports_where_it_was_made():
  def f(a):
    with pytest.raises(TypeError, match="unhashable type: 'BatchTracer'"):
      hash(a)
    b = a > 0
    with pytest.raises(jaxlite.errors.TracerBoolConversionError) as info:
      bool(b)
    msg = str(info.value)
    assert re.search(r"This BatchTracer with object id \d+ was created on line:\n  "
                     r".*test_vmap\.py:\d+:\d+ \(.*f\)", msg), msg
    return a
  jaxlite.vmap(f)(np.ones(2))


def test_unmapped_inputs_are_not_wrapped():
  seen = []
  jaxlite.vmap(lambda a, b: seen.append(type(b)) or a + b, in_axes=(0, None))(
      np.ones((2, 3)), jnp.ones(3))
  assert seen == [core.array_type]


def test_leaked_tracer_is_an_error():
  leaked = []
  jaxlite.vmap(lambda a: leaked.append(a) or a)(np.ones(2))
  with pytest.raises(jaxlite.errors.UnexpectedTracerError):
    jnp.sin(leaked[0])


# --- named axes --------------------------------------------------------------------------------

X6 = np.arange(6.0, dtype=np.float32).reshape(2, 3)


@pytest.mark.parametrize("in_axis", [0, 1])
def test_collectives_known_answers(in_axis):
  x = X6 if in_axis == 0 else X6.T
  ex = X6  # rows are the examples either way
  run = lambda f: jaxlite.vmap(f, in_axes=in_axis, axis_name="i")(x)
  np.testing.assert_allclose(run(lambda a: lax.psum(a, "i")), np.tile(ex.sum(0), (2, 1)))
  np.testing.assert_allclose(run(lambda a: lax.pmean(a, "i")), np.tile(ex.mean(0), (2, 1)))
  np.testing.assert_allclose(run(lambda a: lax.pmax(a, "i")), np.tile(ex.max(0), (2, 1)))
  np.testing.assert_allclose(run(lambda a: lax.pmin(a, "i")), np.tile(ex.min(0), (2, 1)))
  np.testing.assert_allclose(run(lambda a: lax.all_gather(a, "i")), np.stack([ex, ex]))
  np.testing.assert_allclose(run(lambda a: lax.all_gather(a, "i", axis=1)),
                             np.stack([ex.T, ex.T]))
  np.testing.assert_allclose(run(lambda a: lax.all_gather(a, "i", tiled=True)),
                             np.stack([ex.ravel()] * 2))
  np.testing.assert_array_equal(run(lambda a: lax.axis_index("i")), [0, 1])
  np.testing.assert_array_equal(run(lambda a: lax.psum(1, "i")), [2, 2])


def test_collectives_of_unbatched_values_and_pytrees():
  y = jnp.arange(3.0)
  f = lambda a, b: lax.psum((b, a * 2), "i")
  s, t = jaxlite.vmap(f, in_axes=(0, None), axis_name="i")(X6, y)
  np.testing.assert_allclose(s, np.tile(2 * np.arange(3.0), (2, 1)))
  np.testing.assert_allclose(t, np.tile(2 * X6.sum(0), (2, 1)))
  np.testing.assert_allclose(
      jaxlite.vmap(lambda a: lax.pmax(y, "i") + a, axis_name="i")(X6), X6 + np.arange(3.0))


def test_nested_named_axes():
  x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
  f = lambda a: lax.psum(a, ("i", "j"))
  out = jaxlite.vmap(jaxlite.vmap(f, axis_name="j"), axis_name="i")(x)
  np.testing.assert_allclose(out, np.broadcast_to(x.sum((0, 1)), x.shape))
  g = lambda a: lax.psum(a, "i") + 10 * lax.axis_index("j")
  out = jaxlite.vmap(jaxlite.vmap(g, axis_name="j"), axis_name="i")(x)
  np.testing.assert_allclose(out, np.broadcast_to(x.sum(0) + 10 * np.arange(3.0)[:, None],
                                                  x.shape))
  h = lambda a: lax.axis_index(("i", "j"))
  out = jaxlite.vmap(jaxlite.vmap(h, axis_name="j"), axis_name="i")(x)
  np.testing.assert_array_equal(out, np.arange(6).reshape(2, 3))


def test_collectives_inside_jit_inside_vmap_retrace_per_axis_size():
  f = jaxlite.jit(lambda a: a / lax.psum(1, "i") + lax.axis_index("i"))
  out2 = jaxlite.vmap(f, axis_name="i")(np.ones(2, np.float32))
  out4 = jaxlite.vmap(f, axis_name="i")(np.ones(4, np.float32))
  np.testing.assert_allclose(out2, 0.5 + np.arange(2))
  np.testing.assert_allclose(out4, 0.25 + np.arange(4))


def test_named_axis_printed_forms():
  x = jnp.arange(3.0)
  show = lambda f: str(jaxlite.make_jaxpr(jaxlite.vmap(f, axis_name="i"))(x))
  assert show(lambda a: lax.psum(a, "i")) == (
      "{ lambda ; a:f32[3]. let\n    b:f32[] = psum[axes=(0,) axis_index_groups=None] a\n"
      "    c:f32[3] = broadcast_in_dim b\n  in (c,) }")
  assert show(lambda a: lax.pmean(a, "i")) == (
      "{ lambda ; a:f32[3]. let\n    b:f32[] = psum[axes=(0,) axis_index_groups=None] a\n"
      "    c:f32[] = div b 3.0:f32[]\n    d:f32[3] = broadcast_in_dim c\n  in (d,) }")
  assert show(lambda a: lax.axis_index("i")) == (
      "{ lambda ; a:f32[3]. let\n"
      "    b:i32[3] = iota[dimension=0 dtype=int32 shape=(3,) sharding=None] \n  in (b,) }")


# --- composition -------------------------------------------------------------------------------

def test_vmap_of_jit_is_one_jit_eqn_over_a_batched_jaxpr():
  f = jaxlite.jit(lambda a, b: jnp.sin(a) * b)
  closed = jaxlite.make_jaxpr(jaxlite.vmap(f, in_axes=(0, None)))(np.ones((4, 3), np.float32),
                                                                np.ones(3, np.float32))
  (eqn,) = closed.eqns
  assert eqn.primitive.name == "jit"
  inner = eqn.params["jaxpr"]
  assert [a.shape for a in inner.in_avals] == [(4, 3), (3,)]
  assert [e.primitive.name for e in inner.eqns] == ["sin", "broadcast_in_dim", "mul"]


def test_vmap_of_jit_reuses_the_batched_jaxpr():
  f = jaxlite.jit(jnp.cos)
  g = lambda a: f(f(a))
  closed = jaxlite.make_jaxpr(jaxlite.vmap(g))(np.ones((4, 3), np.float32))
  first, second = closed.eqns
  assert first.params["jaxpr"] is second.params["jaxpr"]


def test_jit_of_vmap_and_eager_vmap_of_jit_agree():
  f = lambda a, b: jnp.tanh(a @ b)
  a, b = np.random.RandomState(0).randn(5, 2, 3), np.random.RandomState(1).randn(3, 4)
  want = np.tanh(np.einsum("bij,jk->bik", a, b))
  np.testing.assert_allclose(jaxlite.jit(jaxlite.vmap(f, (0, None)))(a, b), want, rtol=1e-5)
  np.testing.assert_allclose(jaxlite.vmap(jaxlite.jit(f), (0, None))(a, b), want, rtol=1e-5)


def _grad_or_skip():
  grad = getattr(jaxlite, "grad", None)
  if grad is None:
    pytest.skip("jaxlite.grad is not available yet (autodiff engineer's work in progress)")
  return grad


def _loss(w, x, y):
  return jnp.sum((x @ w - y) ** 2)


def test_vmap_of_grad_per_example_gradients():
  grad = _grad_or_skip()
  rng = np.random.RandomState(0)
  w, xs, ys = rng.randn(4).astype(np.float32), rng.randn(8, 4).astype(np.float32), \
      rng.randn(8).astype(np.float32)
  got = jaxlite.jit(jaxlite.vmap(grad(lambda w, x, y: (x @ w - y) ** 2), (None, 0, 0)))(w, xs, ys)
  want = 2 * (xs @ w - ys)[:, None] * xs
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_grad_of_vmap():
  grad = _grad_or_skip()
  x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  g = grad(lambda v: jnp.sum(jaxlite.vmap(lambda r: jnp.sin(r) * r)(v)))(x)
  np.testing.assert_allclose(g, np.cos(x) * x + np.sin(x), rtol=1e-6)


def test_jacobians_built_on_vmap():
  jacfwd, jacrev = getattr(jaxlite, "jacfwd", None), getattr(jaxlite, "jacrev", None)
  if jacfwd is None or jacrev is None:
    pytest.skip("jaxlite.jacfwd/jacrev are not available yet")
  x = np.arange(3.0, dtype=np.float32)
  f = lambda v: jnp.sin(v) * jnp.sum(v)
  want = np.diag(np.cos(x) * x.sum()) + np.sin(x)[:, None]
  np.testing.assert_allclose(jacfwd(f)(x), want, rtol=1e-6)
  np.testing.assert_allclose(jacrev(f)(x), want, rtol=1e-6)


# --- oracle: printed vmapped jaxprs and values equal JAX's -------------------------------------

def _oracle_cases():
  r = np.random.RandomState(0)
  x3 = r.randn(4, 2, 3).astype(np.float32)
  x2 = r.randn(2, 3).astype(np.float32)
  m = r.randn(4, 2, 3).astype(np.float32)
  n = r.randn(4, 3, 5).astype(np.float32)
  idx = np.array([0, 2, -1, 4], np.int32)
  v5 = r.randn(4, 5).astype(np.float32)
  return [
      ("add_unbatched", lambda N, X: lambda a, b: a + b, [x2, x2[0]], {"in_axes": (0, None)}),
      ("add_moved", lambda N, X: lambda a, b: a + b, [x2, x2[:, 0]], {"in_axes": (1, None)}),
      ("sum", lambda N, X: lambda a: a.sum(), [x3], {"in_axes": 1}),
      ("where", lambda N, X: lambda a: N.where(a > 0, a, 0.0), [x3], {"in_axes": 1}),
      ("selu", lambda N, X: lambda a: 1.05 * N.where(a > 0, a, 1.67 * N.exp(a) - 1.67), [x2], {}),
      ("broadcast_in_dim", lambda N, X: lambda a: X.broadcast_in_dim(a, (5, 4, 3), (1, 2)),
       [x3], {"in_axes": 1}),
      ("transpose", lambda N, X: lambda a: X.transpose(a, (1, 0)), [x3], {"in_axes": 2}),
      ("reduce_max", lambda N, X: lambda a: X.reduce_max(a, (0,)), [x3], {"in_axes": 1}),
      ("argmax", lambda N, X: lambda a: X.argmax(a, 1, N.int32), [x3], {"in_axes": 1}),
      ("cumsum", lambda N, X: lambda a: X.cumsum(a, 1), [x3], {"in_axes": 1}),
      ("select", lambda N, X: lambda p, a, b: X.select(p, a, b),
       [np.ones(4, bool), x3, x2], {"in_axes": (0, 0, None)}),
      ("clamp", lambda N, X: lambda a, b: X.clamp(b, a, 1.0), [x3, x3[:, 0, 0]],
       {"in_axes": (0, 0)}),
      ("matmul_bb", lambda N, X: N.matmul, [m, n], {}),
      ("matmul_nb", lambda N, X: N.matmul, [m[0], n], {"in_axes": (None, 0)}),
      ("matmul_bn", lambda N, X: N.matmul, [m.transpose(1, 2, 0), n[0]], {"in_axes": (2, None)}),
      ("dot", lambda N, X: N.dot, [x3[:, 0], x3[:, 1]], {}),
      ("getitem_both", lambda N, X: lambda a, j: a[j], [v5, idx], {}),
      ("getitem_index", lambda N, X: lambda a, j: N.asarray(a)[j], [v5[0], idx], {"in_axes": (None, 0)}),
      ("at_set", lambda N, X: lambda a, j: N.asarray(a).at[j].set(2.0), [v5[0], idx], {"in_axes": (None, 0)}),
      ("at_add", lambda N, X: lambda a, j, u: a.at[j].add(u), [v5, idx, v5[:, 0]], {}),
      ("dynamic_slice", lambda N, X: lambda a, j: X.dynamic_slice(a, (j,), (2,)), [v5, idx], {}),
      ("dynamic_update_slice", lambda N, X: lambda a, b, j: X.dynamic_update_slice(a, b, (j,)),
       [v5, v5[:, :2], idx], {}),
      ("sort_pair", lambda N, X: lambda a, b: X.sort((a, b), dimension=1, num_keys=1),
       [x3, x3[0]], {"in_axes": (0, None)}),
      ("concatenate", lambda N, X: lambda a, b: X.concatenate([a, b], 0), [x3, x2],
       {"in_axes": (1, None)}),
      ("pad_batched_value", lambda N, X: lambda a, p: X.pad(a, p, ((1, 2, 0), (0, 1, 1))),
       [x3, np.arange(2, dtype=np.float32)], {"in_axes": (1, 0)}),
      ("jit_unbatched_out", lambda N, X: _oracle_jit(N), [x2, x2[0]], {"in_axes": (0, None)}),
      ("jit_out_axes", lambda N, X: _oracle_jit(N), [x2, x2[:, 0]],
       {"in_axes": (1, None), "out_axes": (1, None)}),
      ("psum_pair", lambda N, X: lambda a, b: X.psum((a, 2 * b), "i"), [x2, x2.T],
       {"in_axes": (1, 0), "axis_name": "i"}),
      ("pmean_int", lambda N, X: lambda a: X.pmean(a, "i"), [np.arange(3, dtype=np.int32)],
       {"axis_name": "i"}),
      ("all_gather_unbatched", lambda N, X: lambda a, b: X.all_gather(a, "i"), [x2, x2[0]],
       {"in_axes": (None, 0), "axis_name": "i"}),
      ("psum_unbatched", lambda N, X: lambda a, b: X.psum(a, "i"), [x2, x2[0]],
       {"in_axes": (None, 0), "axis_name": "i"}),
      ("nested_psum", lambda N, X: lambda a: X.psum(a, "i"), [x2], {"axis_name": "i"}),
      ("rev", lambda N, X: lambda a: X.rev(a, (0,)), [x3], {"in_axes": 1}),
      ("split", lambda N, X: lambda a: X.split(a, (1, 2), 1), [x3], {"in_axes": 1}),
      ("stack", lambda N, X: lambda a, b: N.stack([a, b], 1), [x3, x3], {"in_axes": (2, 2)}),
      ("unstack", lambda N, X: lambda a: N.unstack(a, axis=1), [x3], {"in_axes": 1}),
      ("tile", lambda N, X: lambda a: N.tile(a, (2, 1)), [x3], {"in_axes": 1}),
      ("squeeze", lambda N, X: lambda a: X.squeeze(a, (0,)), [x3[:1]], {"in_axes": 2}),
      ("reshape", lambda N, X: lambda a: X.reshape(a, (6,)), [x3], {"in_axes": 0}),
      ("top_k", lambda N, X: lambda a: X.top_k(a, 2), [x3], {"in_axes": 0}),
      ("reduce", lambda N, X: lambda a: X.reduce(a, 0.0, lambda u, w: u * w + 1.0, (0,)), [x3],
       {"in_axes": 1}),
      ("slice_strided", lambda N, X: lambda a: a[1:4:2], [v5], {}),
      ("dynamic_slice_2d", lambda N, X: lambda a, j: X.dynamic_slice(a, (j, 1), (2, 2)),
       [r.randn(4, 5, 6).astype(np.float32), idx], {}),
      ("at_set_batched_operand", lambda N, X: lambda a: a.at[1].set(2.0), [v5], {}),
      ("at_add_batched_update", lambda N, X: lambda a, u: N.asarray(a).at[1].add(u),
       [v5[0], v5[:, 0]], {"in_axes": (None, 0)}),
      ("vmap_of_grad", lambda N, X: _oracle_module(N).grad(lambda a: N.sin(a) * a),
       [x3[:, 0, 0]], {}),
      ("nested_vmap", lambda N, X: _oracle_module(N).vmap(lambda a, b: a * b, (None, 0)),
       [x2[0], x2[0]], {"in_axes": (0, None)}),
      ("cond", lambda N, X: lambda a: X.cond(a > 1, N.sin, N.cos, a), [x2[0]], {}),
      ("scan", lambda N, X: lambda a: X.scan(lambda c, y: (c + y, c * y), a, N.arange(3.0)),
       [x2[0]], {}),
  ]


def _oracle_module(N):
  return jaxlite if N is jnp else __import__("jax")


def _oracle_jit(N):
  @_oracle_module(N).jit
  def f(a, b):
    return N.sin(a) * b, b + 1.0
  return f


@pytest.mark.parametrize("name,make,vals,kw", _oracle_cases(), ids=[c[0] for c in _oracle_cases()])
def test_oracle_printed_vmapped_jaxprs_and_values(name, make, vals, kw):
  jax = pytest.importorskip("jax")
  import jax.numpy as jjnp
  want_fn = make(jjnp, jax.lax)
  got_fn = make(jnp, lax)
  want_jaxpr = str(jax.make_jaxpr(jax.vmap(want_fn, **kw))(*vals))
  got_jaxpr = str(jaxlite.make_jaxpr(jaxlite.vmap(got_fn, **kw))(*vals))
  assert got_jaxpr == want_jaxpr
  want = jax.tree.leaves(jax.vmap(want_fn, **kw)(*vals))
  got = jaxlite.tree.leaves(jaxlite.vmap(got_fn, **kw)(*vals))
  for g, w in zip(got, want):
    assert g.dtype == w.dtype and g.shape == w.shape
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)
