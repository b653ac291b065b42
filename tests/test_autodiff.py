"""Autodiff: every differentiable primitive against central differences (both modes, second
order), compositions (grad of jit, nested derivatives, closures, vmap), float0 and symbolic
zeros, JAX's errors and tracer reprs, and the oracle: values and printed jaxprs of real JAX."""

import functools
import itertools

import numpy as np
import pytest
from conftest import oracle

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.test_util import check_grads

RNG = np.random.default_rng(0)


def _u(shape, lo=0.2, hi=0.9, dtype=np.float32):
  return RNG.uniform(lo, hi, size=shape).astype(dtype)


def _signed(shape, dtype=np.float32):
  """Values bounded away from zero, of both signs (for abs, sign, comparisons)."""
  return (_u(shape, 0.3, 1.0) * np.where(RNG.random(shape) < 0.5, -1, 1)).astype(dtype)


def _distinct(shape):
  """A shuffled range plus noise: no ties, so max/sort derivatives are well defined."""
  n = int(np.prod(shape))
  return (RNG.permutation(n).astype(np.float32) * 0.37 + _u((n,), 0, 0.1)).reshape(shape)


def _gdn(**kw):
  return lax.GatherDimensionNumbers(**kw)


def _sdn(**kw):
  return lax.ScatterDimensionNumbers(**kw)


_IDX = np.array([[2], [0], [3]], np.int32)
_DUP = np.array([[1], [3], [1]], np.int32)
_SCATTER_DN = _sdn(update_window_dims=(1,), inserted_window_dims=(0,),
                   scatter_dims_to_operand_dims=(0,))
_GATHER_DN = _gdn(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))


def _linalg():
  return lax.linalg


_A = _signed((3, 3))
_SPD = (_A @ _A.T + 3 * np.eye(3)).astype(np.float32)


def _betainc(a, b, x):
  from jaxlite.scipy.special import betainc
  return betainc(a, b, x)


def _reduce_with(fn, x, init, axes):
  return lax.reduce(x, np.float32(init), fn, axes)


# (id, function, args): one row per differentiable primitive (some with a few variants).
def _linear_call():
  from jaxlite.custom_derivatives import linear_call
  return linear_call


def _call_p():
  from jaxlite._src.transforms.closed_call import call_p
  return call_p


def _closed_call_p():
  from jaxlite._src.transforms.closed_call import closed_call_p
  return closed_call_p


def _resharded(x):
  # a one-device mesh of an Explicit axis: reshard's JVP/transpose without other devices
  from jaxlite.sharding import NamedSharding, PartitionSpec, reshard
  mesh = jax.make_mesh((1,), ("x",))
  return reshard(x * 2, NamedSharding(mesh, PartitionSpec("x")))


PRIMITIVES = [
    ("reshard", _resharded, (_signed((3,)),)),
    ("neg", lax.neg, (_signed((3,)),)),
    ("exp", lax.exp, (_u((3,)),)),
    ("exp2", lax.exp2, (_u((3,)),)),
    ("log", lax.log, (_u((3,)),)),
    ("log1p", lax.log1p, (_u((3,)),)),
    ("expm1", lax.expm1, (_u((3,)),)),
    ("tanh", lax.tanh, (_signed((3,)),)),
    ("logistic", lax.logistic, (_signed((3,)),)),
    ("sin", lax.sin, (_signed((3,)),)),
    ("cos", lax.cos, (_signed((3,)),)),
    ("tan", lax.tan, (_signed((3,)),)),
    ("asin", lax.asin, (_u((3,), -0.7, 0.7),)),
    ("acos", lax.acos, (_u((3,), -0.7, 0.7),)),
    ("atan", lax.atan, (_signed((3,)),)),
    ("sinh", lax.sinh, (_signed((3,)),)),
    ("cosh", lax.cosh, (_signed((3,)),)),
    ("asinh", lax.asinh, (_signed((3,)),)),
    ("acosh", lax.acosh, (_u((3,), 1.3, 2.0),)),
    ("atanh", lax.atanh, (_u((3,), -0.6, 0.6),)),
    ("sqrt", lax.sqrt, (_u((3,), 0.5, 2.0),)),
    ("rsqrt", lax.rsqrt, (_u((3,), 0.5, 2.0),)),
    ("cbrt", lax.cbrt, (_u((3,), 0.5, 2.0),)),
    ("abs", lax.abs, (_signed((3,)),)),
    ("square", lax.square, (_signed((3,)),)),
    ("integer_pow3", lambda x: lax.integer_pow(x, 3), (_signed((3,)),)),
    ("integer_pow-2", lambda x: lax.integer_pow(x, -2), (_u((3,), 0.5, 1.5),)),
    ("integer_pow1", lambda x: lax.integer_pow(x, 1), (_signed((3,)),)),
    ("integer_pow0", lambda x: lax.integer_pow(x, 0) * x, (_signed((3,)),)),
    ("sign", lambda x: lax.sign(x) * x, (_signed((3,)),)),
    ("floor", lambda x: lax.floor(x) * x, (_u((3,), 0.2, 0.8) + np.float32(1),)),
    ("ceil", lambda x: lax.ceil(x) * x, (_u((3,), 0.2, 0.8) + np.float32(1),)),
    ("round", lambda x: lax.round(x) * x, (_u((3,), 0.6, 0.9),)),
    ("is_finite", lambda x: lax.select(lax.is_finite(x), x, x * 2), (_signed((3,)),)),
    ("real_imag_complex", lambda x, y: lax.real(lax.complex(x, y)) * lax.imag(lax.complex(y, x)),
     (_signed((3,)), _signed((3,)))),
    ("conj", lambda x, y: lax.imag(lax.conj(lax.complex(x, y)) * lax.complex(y, x)),
     (_signed((3,)), _signed((3,)))),
    ("abs_complex", lambda x, y: lax.abs(lax.complex(x, y)), (_signed((3,)), _signed((3,)))),
    ("add", lax.add, (_signed((3,)), _signed((3,)))),
    ("add_scalar_bcast", lax.add, (_signed(()), _signed((3,)))),
    ("sub", lax.sub, (_signed((3,)), _signed((3,)))),
    ("sub_unit_dim_bcast", lax.sub, (_signed((3, 1)), _signed((3, 4)))),
    ("mul", lax.mul, (_signed((3,)), _signed((3,)))),
    ("mul_scalar_bcast", lax.mul, (_signed((2, 3)), _signed(()))),
    ("div", lax.div, (_signed((3,)), _signed((3,)))),
    ("div_bcast", lax.div, (_signed(()), _signed((3,)))),
    ("rem", lax.rem, (_u((3,), 2.1, 2.9), _u((3,), 0.7, 0.9))),
    ("pow", lax.pow, (_u((3,), 0.5, 1.5), _signed((3,)))),
    ("max", lax.max, (_distinct((4,)), _distinct((4,)))),
    ("min", lax.min, (_distinct((4,)), _distinct((4,)))),
    ("atan2", lax.atan2, (_signed((3,)), _signed((3,)))),
    ("select_n", lambda x, y: lax.select_n(np.array([True, False, True]), x, y),
     (_signed((3,)), _signed((3,)))),
    ("select_n_int", lambda x, y, z: lax.select_n(np.array([0, 2, 1], np.int32), x, y, z),
     (_signed((3,)), _signed((3,)), _signed((3,)))),
    ("clamp", lax.clamp, (np.float32(-0.5), _signed((4,)), np.float32(0.5))),
    ("clamp_arrays", lax.clamp, (_u((3,), -1, -0.9), _signed((3,)), _u((3,), 0.9, 1.0))),
    ("convert_element_type", lambda x: lax.real(lax.convert_element_type(x, np.complex64) ** 2),
     (_signed((3,)),)),
    ("convert_to_int", lambda x: lax.convert_element_type(x * 3, np.int32) * x,
     (_u((3,), 0.4, 0.6),)),
    ("reduce_precision", lambda x: lax.reduce_precision(x, 8, 23) * x, (_signed((3,)),)),
    ("erf", lax.erf, (_signed((3,)),)),
    ("erfc", lax.erfc, (_signed((3,)),)),
    ("erf_inv", lax.erf_inv, (_u((3,), -0.6, 0.6),)),
    ("lgamma", lax.lgamma, (_u((3,), 0.5, 3.0),)),
    ("digamma", lax.digamma, (_u((3,), 0.5, 3.0),)),
    ("igamma_x", lambda x: lax.igamma(np.float32(1.7), x), (_u((3,), 0.5, 2.0),)),
    ("igammac_x", lambda x: lax.igammac(np.float32(1.7), x), (_u((3,), 0.5, 2.0),)),
    ("polygamma_x", lambda x: lax.polygamma(np.float32(1.), x), (_u((3,), 0.5, 2.0),)),
    ("optimization_barrier", lambda x: lax.optimization_barrier(x * 2.0) * x, (_u((3,)),)),
    ("copy", lambda x: lax.copy_p.bind(x * 2.0) * x, (_u((3,)),)),
    ("approx_top_k", lambda x: lax.approx_max_k(x * x, 2)[0],
     (np.array([[0.3, 0.9, 0.5, 0.1], [0.8, 0.2, 0.6, 0.4]], np.float32),)),
    ("linear_call", lambda x: _linear_call()(lambda r, v: v * r, lambda r, t: t * r, 3.0,
                                             jnp.sin(x)) * x, (_u((3,)),)),
    ("call", lambda x: _call_p().bind(lambda u: [jnp.sin(u) * u], x)[0], (_u((3,)),)),
    ("closed_call", lambda x: _closed_call_p().bind(
        x, call_jaxpr=jax.make_jaxpr(lambda u: jnp.cos(u) * u)(x))[0], (_u((3,)),)),
    ("stage", lambda x: lax.stage_p.bind(x * 2.0) * x, (_u((3,)),)),
    ("device_put", lambda x: lax.device_put_p.bind(
        x * 2.0, devices=(None,), srcs=(None,), copy_semantics=(None,))[0] * x, (_u((3,)),)),
    ("bessel_i0e", lax.bessel_i0e, (_signed((3,)),)),
    ("bessel_i1e", lax.bessel_i1e, (_signed((3,)),)),
    ("broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1, 2)),
     (_signed((3, 1)),)),
    ("reshape", lambda x: lax.reshape(x, (3, 2)), (_signed((2, 3)),)),
    ("reshape_dims", lambda x: lax.reshape(x, (6,), dimensions=(1, 0)), (_signed((2, 3)),)),
    ("squeeze", lambda x: lax.squeeze(x, (0, 2)), (_signed((1, 3, 1)),)),
    ("transpose", lambda x: lax.transpose(x, (2, 0, 1)), (_signed((2, 3, 4)),)),
    ("rev", lambda x: lax.rev(x, (1,)), (_signed((2, 3)),)),
    ("pad", lambda x, v: lax.pad(x, v, ((1, 2, 1), (-1, 1, 0))),
     (_signed((3, 2)), np.float32(0.5))),
    ("concatenate", lambda x, y: lax.concatenate([x, y, x], 1), (_signed((2, 2)), _signed((2, 3)))),
    ("split", lambda x: lax.split(x, (1, 2), axis=1), (_signed((2, 3)),)),
    ("stack", lambda x, y: lax.stack([x, y], 1), (_signed((2, 3)), _signed((2, 3)))),
    ("unstack", lambda x: lax.unstack(x, 1), (_signed((2, 3)),)),
    ("tile", lambda x: lax.tile(x, (2, 3)), (_signed((2, 2)),)),
    ("reduce_sum", lambda x: lax.reduce_sum(x, (0, 2)), (_signed((2, 3, 2)),)),
    ("reduce_prod", lambda x: lax.reduce_prod(x, (1,)), (_signed((2, 3)),)),
    ("reduce_max", lambda x: lax.reduce_max(x, (1,)), (_distinct((2, 3)),)),
    ("reduce_min", lambda x: lax.reduce_min(x, (0, 1)), (_distinct((2, 3)),)),
    ("reduce", lambda x: _reduce_with(lambda a, b: a * b + a + b, x, 0.0, (1,)),
     (_u((2, 3), 0.1, 0.3),)),
    ("cumsum", lambda x: lax.cumsum(x, 1), (_signed((2, 3)),)),
    ("cumsum_reverse", lambda x: lax.cumsum(x, 0, reverse=True), (_signed((3, 2)),)),
    ("cumprod", lambda x: lax.cumprod(x, 1), (_signed((2, 5)),)),
    ("cummax", lambda x: lax.cummax(x, 0, reverse=True), (_distinct((5,)),)),
    ("cummin", lambda x: lax.cummin(x, 0), (_distinct((5,)),)),
    ("cumlogsumexp", lambda x: lax.cumlogsumexp(x, 1), (_signed((2, 4)),)),
    ("dot_general_matmul", lambda x, y: lax.dot(x, y), (_signed((2, 3)), _signed((3, 4)))),
    ("dot_general_vec", lambda x, y: lax.dot(x, y), (_signed((3,)), _signed((3,)))),
    ("dot_general_batch", lambda x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))),
     (_signed((2, 3, 4)), _signed((2, 4, 2)))),
    ("dot_general_odd", lambda x, y: lax.dot_general(x, y, (((0, 2), (2, 0)), ((1,), (1,)))),
     (_signed((3, 2, 4)), _signed((4, 2, 3)))),
    ("conv_general_dilated", lambda x, w: lax.conv_general_dilated(
        x, w, (2, 1), ((1, 0), (0, 1)), (1, 1), (1, 2), feature_group_count=2),
     (_signed((1, 4, 4, 3)), _signed((2, 2, 2, 2)))),
    ("reduce_window_sum", lambda x: lax.reduce_window(x, 0., lax.add, (2, 2), (1, 2), "SAME"),
     (_signed((3, 4)),)),
    ("reduce_window_max", lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 2), (1, 1),
                                                      "VALID"), (_distinct((3, 4)),)),
    ("reduce_window_min", lambda x: lax.reduce_window(x, np.inf, lax.min, (2, 1), (2, 1),
                                                      "VALID"), (_distinct((4, 3)),)),
    ("slice", lambda x: lax.slice(x, (1, 0), (3, 3)), (_signed((4, 3)),)),
    ("slice_strided", lambda x: lax.slice(x, (0, 1), (4, 3), (2, 1)), (_signed((4, 3)),)),
    ("dynamic_slice", lambda x: lax.dynamic_slice(x, (np.int32(1), np.int32(1)), (2, 2)),
     (_signed((4, 3)),)),
    ("dynamic_update_slice", lambda x, u: lax.dynamic_update_slice(x, u, (np.int32(2),)),
     (_signed((5,)), _signed((2,)))),
    ("gather", lambda x: lax.gather(x, _IDX, _GATHER_DN, (1, 3)), (_signed((4, 3)),)),
    ("gather_jnp_index", lambda x: x[np.array([2, 0, 2])], (_signed((4, 3)),)),
    ("scatter_add", lambda x, u: lax.scatter_add(x, _DUP, u, _SCATTER_DN),
     (_signed((4, 3)), _signed((3, 3)))),
    ("scatter_sub", lambda x, u: lax.scatter_sub(x, _DUP, u, _SCATTER_DN),
     (_signed((4, 3)), _signed((3, 3)))),
    ("scatter_unique", lambda x, u: lax.scatter(x, _IDX, u, _SCATTER_DN, unique_indices=True),
     (_signed((4, 3)), _signed((3, 3)))),
    ("scatter_dup", lambda x, u: lax.scatter(x, _DUP, u, _SCATTER_DN),
     (_signed((4, 3)), _signed((3, 3)))),
    ("scatter_mul", lambda x, u: lax.scatter_mul(x, _IDX, u, _SCATTER_DN, unique_indices=True),
     (_signed((4, 3)), _signed((3, 3)))),
    ("scatter_max", lambda x, u: lax.scatter_max(x, _DUP, u, _SCATTER_DN),
     (_distinct((4, 3)), _distinct((3, 3)))),
    ("scatter_min", lambda x, u: lax.scatter_min(x, _DUP, u, _SCATTER_DN),
     (_distinct((4, 3)), _distinct((3, 3)))),
    ("sort", lambda x: lax.sort(x, 1), (_distinct((2, 4)),)),
    ("sort_multi", lambda k, v: lax.sort((k, v), 0, num_keys=1), (_distinct((4,)), _signed((4,)))),
    ("top_k", lambda x: lax.top_k(x, 2)[0], (_distinct((2, 4)),)),
    ("psum", lambda x: jax.vmap(lambda v: lax.psum(v ** 2, "i") * v, axis_name="i")(x),
     (_signed((3,)),)),
    ("all_gather", lambda x: jax.vmap(lambda v: jnp.sum(lax.all_gather(v, "i") * v),
                                      axis_name="i")(x), (_signed((3,)),)),
    ("cholesky", lambda a: _linalg().cholesky(a), (_SPD,)),
    ("triangular_solve", lambda a, b: _linalg().triangular_solve(a, b, left_side=True,
                                                                 lower=True),
     (np.tril(_SPD), _signed((3, 2)))),
    ("qr", lambda a: _linalg().qr(a)[1], (_signed((3, 3)),)),
    ("eigh", lambda a: _linalg().eigh(a + a.T)[1], (_signed((3, 3)),)),
    ("eig", lambda a: jnp.real(_linalg().eig(a @ a.T + 3 * np.eye(3, dtype=np.float32),
                                             compute_left_eigenvectors=False,
                                             compute_right_eigenvectors=False)[0]),
     (_signed((3, 3)),)),
    ("svd", lambda a: _linalg().svd(a, compute_uv=False), (_signed((3, 3)),)),
    ("lu", lambda a: _linalg().lu(a)[0], (_SPD,)),
    ("tridiagonal_solve", lambda d, b: _linalg().tridiagonal_solve(
        np.array([0., 1, 1], np.float32), d, np.array([1., 1, 0], np.float32), b),
     (_u((3,), 4, 5), _signed((3, 2)))),
    ("fft", lambda x: jnp.real(jnp.fft.fft(x)) + jnp.imag(jnp.fft.fft(x)), (_signed((2, 4)),)),
    ("cond", lambda x: lax.cond(x[0] > 0, jnp.sin, lambda x: x * x, x), (_signed((3,)),)),
    ("scan", lambda x, xs: lax.scan(lambda c, a: (c * a, jnp.sin(c)), x, xs)[1],
     (_signed((3,)), _signed((4, 3)))),
    ("while_fwd", lambda x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 1.5),
                                           (0, x))[1], (_signed((3,)),)),
    ("regularized_incomplete_beta", lambda x: _betainc(np.float32(1.5), np.float32(2.5), x),
     (_u((3,), 0.2, 0.8),)),
    ("jit", jax.jit(lambda x, y: jnp.sin(x) * y), (_signed((3,)), _signed((3,)))),
    ("checkpoint", jax.checkpoint(lambda x: jnp.sin(jnp.cos(x)) * x), (_signed((3,)),)),
]


# Forward mode only: JAX does not transpose a while loop with a traced trip count either.
FORWARD_ONLY = {"while_fwd"}
# First order only, as in JAX: eigenvalue derivatives use eigenvectors, whose own derivatives
# are not implemented.
FIRST_ORDER_ONLY = {"eig"}


@pytest.mark.parametrize("name,fun,args", PRIMITIVES, ids=[p[0] for p in PRIMITIVES])
def test_primitive_gradients(name, fun, args):
  modes = ("fwd",) if name in FORWARD_ONLY else ("fwd", "rev")
  order = 1 if name in FIRST_ORDER_ONLY else 2
  check_grads(fun, args, order=order, modes=modes, eps=1e-3, atol=2e-2, rtol=2e-2)


def _primitives_in(jaxpr, out):
  for eqn in jaxpr.eqns:
    out.add(eqn.primitive.name)
    for v in eqn.params.values():
      for sub in v if isinstance(v, (tuple, list)) else (v,):
        inner = getattr(sub, "jaxpr", sub)
        if hasattr(inner, "eqns"):
          _primitives_in(inner, out)
  return out


# Primitives with derivative rules that the table reaches only through others (add_any,
# custom_lin) or that are tested in their own files (custom_jvp_call, custom_vjp_call, name).
COVERED_ELSEWHERE = {
                     # sharding annotations: gradients through them in tests/test_sharded_jit.py
                     "sharding_constraint", "inspect_sharding",
                     "add_any", "custom_lin", "custom_jvp_call", "custom_vjp_call", "name",
                     "stop_gradient", "integer_pow", "cumsum", "reduce_and", "reduce_or",
                     "reduce_xor", "argmax", "argmin", "bitcast_convert_type", "population_count",
                     "clz", "not", "and", "or", "xor", "shift_left", "shift_right_arithmetic",
                     "shift_right_logical", "mulhi", "eq", "ne", "lt", "le", "gt", "ge",
                     "lu_pivots_to_permutation", "while",
                     # under vmap these become batched ops; the rows "psum"/"all_gather" run them
                     "all_gather",
                     # host callbacks and checks: tests/test_callbacks.py, tests/test_checkify.py
                     "pure_callback", "io_callback", "debug_callback", "debug_print", "check",
                     # tests/test_custom_batching.py (jvp and vmap of jvp against JAX)
                     "custom_vmap_call",
                     # gamma's implicit reparameterisation gradient (random_gamma_grad):
                     # grad and vmap of grad against JAX in tests/test_random_gamma_impls.py
                     "random_gamma",
                     # collectives and shard_map: gradients against JAX in tests/test_shard_map.py
                     "ppermute", "all_to_all", "reduce_scatter", "pbroadcast", "pvary",
                     "psum_invariant", "shard_map",
                     # no tangents (tokens, booleans, sinks, constants): tests/test_lax_tokens.py
                     "create_token", "after_all", "dce_sink", "empty2", "eq_to", "le_to",
                     "lt_to",
                     # tests/one_file_primitive.py's test primitive: its own test takes grads
                     "softsign"}


def test_table_covers_every_differentiable_primitive():
  import jaxlite.nn
  import jaxlite.random
  import jaxlite.scipy.special  # noqa: F401
  # Modules whose primitives have rules: imported here so the answer does not depend on which
  # tests ran before.
  import jaxlite._src.transforms.callbacks  # noqa: F401
  import jaxlite._src.transforms.checkify  # noqa: F401
  import jaxlite._src.transforms.custom_batching  # noqa: F401
  from jaxlite._src.interpreters import ad
  reached = set()
  for _, fun, args in PRIMITIVES:
    _primitives_in(jax.make_jaxpr(fun)(*args).jaxpr, reached)
  # jaxlite's own primitives (a library's, made by other tests, have their own tests)
  with_rules = {p.name for p in list(ad.jvp_rules) + list(ad.linearize_rules) if not p.library}
  missing = with_rules - reached - COVERED_ELSEWHERE
  assert not missing, f"primitives with derivative rules but no row in the table: {missing}"


def test_collectives_inside_vmap_of_grad():
  # AD runs inside the named axis here, so psum and all_gather are transposed themselves.
  f = lambda x: lax.psum(x ** 2, "i")
  x = jnp.arange(3.)
  np.testing.assert_allclose(jax.vmap(jax.grad(f), axis_name="i")(x), [0., 6., 12.])
  g = lambda x: jnp.sum(lax.all_gather(x, "i") * jnp.arange(3.)[:, None])
  np.testing.assert_allclose(jax.vmap(jax.grad(g), axis_name="i")(jnp.ones((3, 2))),
                             [[0, 0], [3, 3], [6, 6]])


# --- known answers and compositions -----------------------------------------------------------

def test_grad_of_sin_to_third_order():
  g = jnp.sin
  for expected in (np.cos, lambda x: -np.sin(x), lambda x: -np.cos(x)):
    g = jax.grad(g)
    np.testing.assert_allclose(g(0.7), expected(0.7), rtol=1e-6)


@pytest.mark.parametrize("outer,inner", [(jax.grad, jax.jit), (jax.jit, jax.grad)])
def test_grad_and_jit_compose(outer, inner):
  f = lambda x: jnp.sum(jnp.tanh(x) ** 2)
  x = np.array([0.1, 0.5, -0.3], np.float32)
  h = outer(inner(f))
  np.testing.assert_allclose(h(x), 2 * np.tanh(x) * (1 - np.tanh(x) ** 2), rtol=1e-6)


def test_grad_of_grad_of_jit_and_jit_inside_grad_of_grad():
  f = jax.jit(lambda x: x ** 3)
  assert float(jax.grad(jax.grad(f))(2.0)) == 12.0
  assert float(jax.jit(jax.grad(jax.grad(lambda x: f(x) * x)))(2.0)) == 48.0


def test_hessian_vector_product_by_jvp_of_grad():
  f = lambda x: jnp.sum(jnp.sin(x) * x ** 2)
  x, v = np.array([0.3, 1.1], np.float32), np.array([1.0, -2.0], np.float32)
  _, hvp = jax.jvp(jax.grad(f), (x,), (v,))
  hess = np.diag(2 * np.sin(x) + 4 * x * np.cos(x) - x ** 2 * np.sin(x))
  np.testing.assert_allclose(hvp, hess @ v, rtol=1e-5)


def test_perturbation_confusion_is_avoided():
  # d/dx (x * d/dy (x + y)) at any point is 1: the inner derivative must not see x's tangent.
  f = lambda x: x * jax.grad(lambda y: x + y)(0.0)
  assert float(jax.grad(f)(3.0)) == 1.0
  g = lambda x: jax.jvp(lambda y: x * y, (2.0,), (1.0,))[1]
  assert float(jax.jvp(g, (3.0,), (1.0,))[1]) == 1.0


def test_closures_over_outer_tracers():
  def f(x):
    inner = lambda y: jnp.sin(x * y)
    return jax.grad(inner)(2.0)   # cos(2x) * x
  x = 0.3
  expected = np.cos(2 * x) - 2 * x * np.sin(2 * x)
  np.testing.assert_allclose(jax.grad(f)(x), expected, rtol=1e-5)
  np.testing.assert_allclose(jax.jit(jax.grad(f))(x), expected, rtol=1e-5)


def test_vmap_of_grad_and_grad_of_vmap():
  f = lambda x: jnp.sin(x) * x
  x = np.linspace(-1, 1, 5, dtype=np.float32)
  expected = np.cos(x) * x + np.sin(x)
  np.testing.assert_allclose(jax.vmap(jax.grad(f))(x), expected, rtol=1e-6)
  np.testing.assert_allclose(jax.grad(lambda x: jnp.sum(jax.vmap(f)(x)))(x), expected,
                             rtol=1e-6)


def test_value_and_grad_argnums_and_has_aux():
  f = lambda x, y: (x * jnp.sin(y), {"y": y})
  (val, aux), (gx, gy) = jax.value_and_grad(f, argnums=(0, 1), has_aux=True)(2.0, 0.5)
  np.testing.assert_allclose(val, 2 * np.sin(0.5), rtol=1e-6)
  assert float(aux["y"]) == 0.5 and type(aux["y"]).__name__ == "ArrayImpl"
  np.testing.assert_allclose([gx, gy], [np.sin(0.5), 2 * np.cos(0.5)], rtol=1e-6)
  g, aux = jax.grad(f, argnums=1, has_aux=True)(2.0, 0.5)
  np.testing.assert_allclose(g, 2 * np.cos(0.5), rtol=1e-6)


def test_grad_of_pytree_arguments():
  params = {"w": np.array([1.0, 2.0], np.float32), "b": np.float32(0.5)}
  loss = lambda p, x: jnp.sum(p["w"] * x + p["b"]) ** 2
  g = jax.grad(loss)(params, np.array([3.0, 4.0], np.float32))
  s = 1 * 3 + 2 * 4 + 2 * 0.5
  np.testing.assert_allclose(g["w"], [2 * s * 3, 2 * s * 4])
  np.testing.assert_allclose(g["b"], 2 * s * 2)


def test_integer_inputs_get_float0_cotangents_and_tangents():
  gx, gn = jax.grad(lambda x, n: x * n, argnums=(0, 1), allow_int=True)(2.0, 3)
  assert float(gx) == 3.0 and gn.dtype == jax.dtypes.float0 and gn.shape == ()
  _, f_vjp = jax.vjp(lambda x, n: x * n, 2.0, jnp.arange(3))
  _, ct_n = f_vjp(jnp.ones(3))
  assert ct_n.dtype == jax.dtypes.float0 and ct_n.shape == (3,)
  y, t = jax.jvp(lambda x: x.astype(jnp.int32), (2.5,), (1.0,))
  assert int(y) == 2 and t.dtype == jax.dtypes.float0
  y, t = jax.jvp(lambda n: n * 2, (jnp.arange(3),), (np.zeros(3, jax.dtypes.float0),))
  assert t.dtype == jax.dtypes.float0


def test_integer_outputs_float0_tangents_staged_and_unravelled_as_jax():
  # JAX 0.10.2: a jvp's float0 zero of a non-scalar integer output is staged as
  # `broadcast_in_dim (b'',):float0[]`; jacfwd casts it to the output's dtype (int32 zeros)
  x = jnp.ones((2, 3))
  text = str(jax.make_jaxpr(lambda x: jax.jvp(lambda x: x.astype(int), (x,), (x,)))(x))
  assert text == ("{ lambda ; a:f32[2,3]. let\n"
                  "    b:i32[2,3] = convert_element_type[new_dtype=int32 weak_type=False] a\n"
                  "    c:float0[2,3] = broadcast_in_dim (b'',):float0[]\n"
                  "  in (b, c) }")
  for jac in (jax.jacfwd(lambda x: x.astype(int)), jax.jit(jax.jacfwd(lambda x: x.astype(int)))):
    j = jac(jnp.ones(2))
    assert j.dtype == jnp.int32 and j.shape == (2, 2) and not j.any()
  ji, jf = jax.jacfwd(lambda x: (x.astype(int), x * 2))(jnp.ones(2))
  assert ji.dtype == jnp.int32 and jf.dtype == jnp.float32
  np.testing.assert_array_equal(jf, 2 * np.eye(2))
  _, t = jax.vmap(lambda x: jax.jvp(lambda x: x.astype(int), (x,), (x,)))(x)
  assert t.dtype == jax.dtypes.float0 and t.shape == (2, 3)


def test_symbolic_zeros_reach_outputs_as_zeros():
  f = lambda x, y: (x * 2.0, jnp.cos(3.0))
  _, (tx, ty) = jax.jvp(f, (1.0, 2.0), (1.0, 0.0))
  assert float(tx) == 2.0 and float(ty) == 0.0
  assert float(jax.grad(lambda x: 4.0)(1.0)) == 0.0
  # A symbolic zero never becomes an eqn: the gradient is a literal, nothing is transposed.
  assert str(jax.make_jaxpr(jax.grad(lambda x, y: y * 2.0))(1.0, 2.0)) == \
      "{ lambda ; a:f32[] b:f32[]. let _:f32[] = mul b 2.0:f32[] in (0.0:f32[],) }"


def test_holomorphic_and_complex_inputs():
  np.testing.assert_allclose(jax.grad(lambda z: z ** 2, holomorphic=True)(1 + 1j), 2 + 2j)
  np.testing.assert_allclose(jax.grad(lambda z: jnp.abs(z) ** 2)(1 + 1j), 2 - 2j, rtol=1e-6)
  np.testing.assert_allclose(jax.jacfwd(lambda z: z ** 2, holomorphic=True)(
      jnp.array([1 + 1j, 2])), np.diag([2 + 2j, 4]), rtol=1e-6)


def test_linearize_and_vjp():
  f = lambda x: jnp.sin(x) * x
  y, f_jvp = jax.linearize(f, 0.5)
  np.testing.assert_allclose(y, np.sin(0.5) * 0.5, rtol=1e-6)
  np.testing.assert_allclose(f_jvp(2.0), 2 * (np.cos(0.5) * 0.5 + np.sin(0.5)), rtol=1e-6)
  _, f_vjp, aux = jax.vjp(lambda x: (f(x), x * 3), 0.5, has_aux=True)
  (ct,) = f_vjp(1.0)
  np.testing.assert_allclose(ct, np.cos(0.5) * 0.5 + np.sin(0.5), rtol=1e-6)
  assert float(aux) == 1.5
  # The vjp function is a pytree: it can cross a jit boundary.
  g = jax.jit(lambda fv, c: fv(c))(f_vjp, 2.0)
  np.testing.assert_allclose(g[0], 2 * ct, rtol=1e-6)


def test_jacobians_and_hessian():
  f = lambda x: lax.concatenate([lax.broadcast_in_dim(x[0] * x[1], (1,), ()),
                                 lax.broadcast_in_dim(jnp.sin(x[1]), (1,), ())], 0)
  x = np.array([2.0, 0.5], np.float32)
  want = np.array([[0.5, 2.0], [0.0, np.cos(0.5)]], np.float32)
  np.testing.assert_allclose(jax.jacfwd(f)(x), want, rtol=1e-6)
  np.testing.assert_allclose(jax.jacrev(f)(x), want, rtol=1e-6)
  np.testing.assert_allclose(jax.jacobian(f)(x), want, rtol=1e-6)
  h = jax.hessian(lambda x: x[0] ** 2 * x[1])(x)
  np.testing.assert_allclose(h, [[2 * 0.5, 2 * 2.0], [2 * 2.0, 0.0]], rtol=1e-6)
  jac = jax.jacrev(lambda p: {"a": p["u"] * 2, "b": jnp.sum(p["v"])})(
      {"u": np.float32(1.0), "v": np.ones(2, np.float32)})
  np.testing.assert_allclose(jac["b"]["v"], [1.0, 1.0])
  assert float(jac["a"]["u"]) == 2.0


def test_stop_gradient():
  assert float(jax.grad(lambda x: x * lax.stop_gradient(x))(3.0)) == 3.0
  assert float(jax.grad(lambda x: jax.stop_gradient(x ** 2) + x)(3.0)) == 1.0
  tree = jax.stop_gradient({"a": jnp.ones(2), "n": jnp.arange(2)})
  assert tree["n"].dtype == jnp.int32


def test_grad_through_python_control_flow_on_values():
  def f(x):
    return x ** 2 if x > 0 else -x
  assert float(jax.grad(f)(3.0)) == 6.0 and float(jax.grad(f)(-3.0)) == -1.0


def test_checkpoint_policies_save_or_recompute():
  def block(x, w):
    return jnp.sin(jnp.dot(x, w))
  x, w = np.ones((2, 3), np.float32), np.full((3, 3), 0.1, np.float32)
  expected = jax.grad(lambda w: jnp.sum(block(x, w)))(w)
  names = {}
  for policy in (None, jax.checkpoint_policies.nothing_saveable,
                 jax.checkpoint_policies.everything_saveable,
                 jax.checkpoint_policies.dots_saveable):
    remat_block = jax.checkpoint(block, policy=policy)
    g = jax.grad(functools.partial(lambda f, w: jnp.sum(f(x, w)), remat_block))
    np.testing.assert_allclose(g(w), expected, rtol=1e-6)
    jaxpr = jax.make_jaxpr(g)(w)
    linear = next(e for e in jaxpr.eqns if e.primitive.name == "remat2")
    names[policy] = [e.primitive.name for e in linear.params["jaxpr"].eqns]
  # dots_saveable keeps the matmul out of the recomputation; nothing_saveable recomputes it.
  assert "dot_general" in names[jax.checkpoint_policies.nothing_saveable]
  assert names[jax.checkpoint_policies.dots_saveable].count("dot_general") < \
      names[jax.checkpoint_policies.nothing_saveable].count("dot_general")
  assert "sin" not in names[jax.checkpoint_policies.everything_saveable]


def test_remat_is_an_alias_and_composes_with_jit_and_vmap():
  f = jax.remat(lambda x: jnp.sin(x) ** 2)
  x = np.linspace(0, 1, 4, dtype=np.float32)
  want = 2 * np.sin(x) * np.cos(x)
  np.testing.assert_allclose(jax.jit(jax.vmap(jax.grad(f)))(x), want, rtol=1e-5)
  np.testing.assert_allclose(jax.grad(lambda x: jnp.sum(jax.vmap(f)(x)))(x), want, rtol=1e-5)


def test_eager_grad_of_jnp_wrappers_and_where():
  f = lambda x: jnp.sum(jnp.where(x > 0, x, 0.1 * x) + jnp.clip(x, -0.5, 0.5))
  x = np.array([-1.0, -0.2, 0.3, 2.0], np.float32)
  np.testing.assert_allclose(jax.grad(f)(x), [0.1, 1.1, 2.0, 1.0], rtol=1e-6)


# --- errors -------------------------------------------------------------------------------------

ERRORS = [
    (lambda: jax.grad(lambda x: x)(1), TypeError,
     ("grad requires real- or complex-valued inputs (input dtype that is a sub-dtype of "
      "np.inexact), but got int32. If you want to use Boolean- or integer-valued inputs, use vjp "
      "or set allow_int to True.")),
    (lambda: jax.grad(lambda x: x)(jnp.ones(2)), TypeError,
     "Gradient only defined for scalar-output functions. Output had shape: (2,)."),
    (lambda: jax.grad(lambda x: x.astype(int))(1.), TypeError,
     ("grad requires real-valued outputs (output dtype that is a sub-dtype of np.floating), but "
      "got int32. For differentiation of functions with integer outputs, use jax.vjp directly.")),
    (lambda: jax.grad(lambda x: x * 1j)(1.), TypeError,
     ("grad requires real-valued outputs (output dtype that is a sub-dtype of np.floating), but "
      "got complex64. For holomorphic differentiation, pass holomorphic=True.")),
    (lambda: jax.grad(lambda x: x, holomorphic=True)(1.), TypeError,
     "grad with holomorphic=True requires inputs with complex dtype, but got float32."),
    (lambda: jax.jvp(jnp.sin, 1., 1.), TypeError,
     "primal and tangent arguments to jax.jvp must be tuples or lists; found float and float."),
    (lambda: jax.jvp(jnp.sin, (1.,), (1,)), TypeError,
     ("primal and tangent arguments to jax.jvp do not match; dtypes must be equal, or in case of "
      "int/bool primal dtype the tangent dtype must be float0.Got primal dtype float32 and so "
      "expected tangent dtype float32, but got tangent dtype int32 instead.")),
    (lambda: jax.jvp(jnp.sin, (jnp.ones(2),), (jnp.ones(3),)), ValueError,
     ("jvp called with different primal and tangent shapes;Got primal shape (2,) and tangent "
      "shape as (3,)")),
    (lambda: jax.jvp(lambda x, y: x, (1., 2.), (1.,)), TypeError,
     ("primal and tangent arguments to jax.jvp must have the same tree structure; primals have "
      "tree structure PyTreeDef((*, *)) whereas tangents have tree structure PyTreeDef((*,)).")),
    (lambda: jax.vjp(jnp.sin, 1.)[1](1., 2.), TypeError,
     "The function returned by `jax.vjp` applied to sin was called with 2 arguments,"),
    (lambda: jax.vjp(jnp.sin, 1.)[1](jnp.ones(2)), ValueError,
     ("unexpected JAX type (e.g. shape/dtype) for argument to VJP function: got float32[2], but "
      "expected float32[] because the corresponding output of the differentiated function had "
      "JAX type float32[]")),
    (lambda: jax.vjp(lambda x: (x, x), 1.)[1](1.), ValueError, "unexpected tree structure."),
    (lambda: jax.grad(lambda x, y: x, argnums=2)(1., 2.), TypeError,
     ("differentiating with respect to argnums=2 requires at least 3 positional arguments to be "
      "passed by the caller, but got only 2 positional arguments.")),
    (lambda: jax.grad(1), TypeError, "Expected a callable value, got 1"),
    (lambda: jax.grad(lambda x: lax.nextafter(x, 2.))(1.), NotImplementedError,
     "Differentiation rule for 'nextafter' not implemented"),
    (lambda: jax.jacfwd(lambda x: x)(1), TypeError,
     ("jacfwd requires real-valued inputs (input dtype that is a sub-dtype of np.floating), but "
      "got int32.")),
    (lambda: jax.grad(lambda x: x, has_aux=True)(1.), TypeError,
     "expected function with aux output to return a two-element tuple, but got type"),
]


@pytest.mark.parametrize("fn,cls,text", ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_errors(fn, cls, text):
  with pytest.raises(cls) as info:
    fn()
  assert str(info.value).strip().startswith(text)


def test_errors_match_jax():
  jax_ = oracle()
  import jax.numpy as jjnp
  cases = [lambda J, N: J.grad(lambda x: x)(1), lambda J, N: J.grad(lambda x: x)(N.ones(2)),
           lambda J, N: J.grad(lambda x: x.astype(int))(1.),
           lambda J, N: J.vjp(N.sin, 1.)[1](N.ones(2))]
  for case in cases:
    msgs = []
    for J, N in ((jax_, jjnp), (jax, jnp)):
      with pytest.raises((TypeError, ValueError)) as info:
        case(J, N)
      msgs.append((type(info.value), str(info.value)))
    assert msgs[0] == msgs[1]


# --- tracer reprs --------------------------------------------------------------------------------

def _seen(transform, fun_args):
  seen = []

  def f(x):
    seen.append(str(x))
    return x
  transform(f, *fun_args)
  return seen[0]


def test_tracer_reprs():
  assert _seen(lambda f, x: jax.jvp(f, (x,), (1.0,)), (2.0,)) == \
      "JVPTracer(primal=2.0, tangent=1.0)"
  assert _seen(lambda f, x: jax.grad(f)(x), (2.0,)) == \
      "GradTracer(primal=2.0, typeof(tangent)=f32[])"
  assert _seen(lambda f, x: jax.grad(lambda y: jnp.sum(f(y)))(x), (jnp.ones(3),)) == \
      "GradTracer(primal=[1. 1. 1.], typeof(tangent)=f32[3])"
  assert _seen(lambda f, x: jax.grad(jax.grad(f))(x), (2.0,)) == \
      "GradTracer(primal=GradTracer(primal=2.0, typeof(tangent)=f32[]), typeof(tangent)=f32[])"
  assert _seen(lambda f, x: jax.jit(jax.grad(f))(x), (2.0,)) == \
      "GradTracer(primal=JitTracer(~float32[]), typeof(tangent)=f32[])"
  assert _seen(lambda f, x: jax.jit(lambda y: jax.jvp(f, (y,), (y,)))(x), (2.0,)) == \
      "JVPTracer(primal=JitTracer(~float32[]), tangent=JitTracer(~float32[]))"
  assert _seen(lambda f, x: jax.vmap(jax.grad(f))(x), (jnp.ones(3),)) == \
      "GradTracer(primal=VmapTracer(aval=float32[], batched=float32[3]), typeof(tangent)=f32[])"
  with pytest.raises(TypeError, match="unhashable"):
    jax.grad(lambda x: hash(x))(1.0)


# --- oracle: real JAX ----------------------------------------------------------------------------

def _grad_cases(J, N):
  """name -> (function, args) over a jax-like module J and numpy-like module N."""
  L = J.lax
  v3 = np.array([0.5, -1.2, 2.0], np.float32)
  m23 = np.arange(6, dtype=np.float32).reshape(2, 3) / 5 - 0.4
  return {
      "sin": (N.sin, (1.0,)),
      "x_sin_x": (lambda x: x * N.sin(x), (1.0,)),
      "exp_log": (lambda x: N.log(N.exp(x) + 1.0), (0.5,)),
      "tanh_sum": (lambda x: N.sum(N.tanh(x) ** 2), (v3,)),
      "logistic": (lambda x: L.logistic(x) * L.rsqrt(x), (0.5,)),
      "sqrt_cbrt": (lambda x: N.sqrt(x) + N.cbrt(x), (2.0,)),
      "trig": (lambda x: N.tan(x) + N.arcsin(x) + N.arccos(x) + N.arctan(x), (0.5,)),
      "hyperbolic": (lambda x: N.sinh(x) + N.cosh(x) + N.arcsinh(x) + N.arctanh(x), (0.5,)),
      "abs_square": (lambda x: N.sum(N.abs(x) * N.square(x)), (v3,)),
      "powers": (lambda x: x ** 3 + x ** 2.5, (2.0,)),
      "div": (lambda x: (x - 2.0) / x, (1.0,)),
      "div_sum": (lambda x: N.sum(x / x.sum()), (np.abs(v3),)),
      "max_min": (lambda x: N.sum(N.maximum(x, 0.5) + N.minimum(x, x[::-1])), (v3,)),
      "where": (lambda x: N.sum(N.where(x > 0, x, 0.1 * x)), (v3,)),
      "dot": (lambda W, x: N.sum(N.dot(W, x)), (m23, v3)),
      "matmul": (lambda W, x: N.sum(W @ x), (m23, m23.T.copy())),
      "batched_matmul": (lambda a, b: N.sum(a @ b), (np.stack([m23, m23]),
                                                      np.stack([m23.T, m23.T]))),
      "sum_axis": (lambda x: N.sum(N.sum(x, axis=1) ** 2), (m23,)),
      "max_axis": (lambda x: N.sum(N.max(x, axis=1)), (m23,)),
      "mean": (lambda x: N.mean(x ** 2), (m23,)),
      "reshape_T_index": (lambda x: N.sum(x.reshape(2, 3).T[0]), (v3.repeat(2),)),
      "broadcast_mul": (lambda x: N.sum(x.reshape(3, 1) * N.ones((3, 4))), (v3,)),
      "astype": (lambda x: N.sum(x.astype(N.float16) * 2), (v3,)),
      "jit": (J.jit(N.sin), (1.0,)),
      "jit_two_args": (lambda x: J.jit(lambda a, b: N.sin(a) * b)(x, x), (1.0,)),
      "slices": (lambda x: N.sum(x[1:] * x[:-1]) + N.sum(x[::2] ** 2), (v3,)),
      "gather": (lambda x, i: N.sum(x[i] ** 2), (v3, np.array([0, 2, 2], np.int32))),
      "at_set_add": (lambda x: N.sum(x.at[0].set(5.0) * x + x.at[np.array([0, 1])].add(1.0)),
                     (v3,)),
      "dynamic_index": (lambda x, i: x[i] * 2.0, (v3, np.int32(1))),
      "pad_rev": (lambda x: N.sum(L.pad(L.rev(x, (0,)), 0.0, ((1, 2, 1),)) * N.arange(8.0)),
                  (v3,)),
      "concatenate": (lambda x: N.sum(L.concatenate([x, 2 * x], 0)), (v3,)),
      "einsum": (lambda a, b: N.sum(N.einsum("ij,kj->ik", a, b)), (m23, m23)),
      "cumsum": (lambda x: N.sum(N.cumsum(x) * x), (v3,)),
      "clip": (lambda x: N.sum(N.clip(x, -1.0, 1.0)), (v3,)),
      "stop_gradient": (lambda x: x * J.lax.stop_gradient(x), (2.0,)),
      "select_scalar": (lambda x: L.select(x > 0, x, 2 * x), (1.0,)),
      "checkpoint": (J.checkpoint(lambda x: N.sin(N.sin(x))), (1.0,)),
  }


_GRAD_CASES = list(_grad_cases(jax, jnp))


@pytest.mark.parametrize("name", _GRAD_CASES)
def test_grad_jaxprs_and_values_match_jax(name):
  jax_ = oracle()
  import jax.numpy as jjnp
  fj, args = _grad_cases(jax_, jjnp)[name]
  fl, _ = _grad_cases(jax, jnp)[name]
  want = jax_.make_jaxpr(jax_.grad(fj))(*args)
  got = jax.make_jaxpr(jax.grad(fl))(*args)
  assert str(got) == str(want)
  np.testing.assert_allclose(jax.grad(fl)(*args), jax_.grad(fj)(*args), rtol=2e-6, atol=1e-7)


def _transform_cases(J, N):
  f = lambda x: N.sin(x) * x
  g = lambda x: N.sum(N.tanh(x) ** 2)
  h = J.jit(lambda a, b: N.sin(a) * b)
  v = np.array([0.3, -0.4, 1.5], np.float32)
  return {
      "jvp": (lambda x, t: J.jvp(f, (x,), (t,)), (1.0, 1.0)),
      "jvp_of_jit": (lambda x, t: J.jvp(h, (x, 2.0), (t, 0.0)), (1.0, 1.0)),
      "jvp_of_jit_closure": (lambda x, t: J.jvp(lambda x: h(x, 2.0), (x,), (t,)), (1.0, 1.0)),
      "linearize": (lambda x: J.linearize(f, x)[0], (1.0,)),
      "linearize_apply": (lambda x: J.linearize(f, x)[1](x), (1.0,)),
      "vjp_apply": (lambda x, c: J.vjp(f, x)[1](c), (1.0, 2.0)),
      "grad_of_grad": (J.grad(J.grad(f)), (1.0,)),
      "hvp": (lambda x, t: J.jvp(J.grad(g), (x,), (t,)), (v, v)),
      "jit_of_grad": (J.jit(J.grad(f)), (1.0,)),
      "value_and_grad": (J.value_and_grad(f), (1.0,)),
      "grad_argnums": (J.grad(lambda x, y: x * N.sin(y), argnums=(0, 1)), (1.0, 2.0)),
      "vmap_of_grad": (J.vmap(J.grad(f)), (v,)),
      "jvp_of_checkpoint": (lambda x: J.jvp(J.checkpoint(N.sin), (x,), (1.0,)), (0.5,)),
  }


@pytest.mark.parametrize("name", list(_transform_cases(jax, jnp)))
def test_transformation_jaxprs_and_values_match_jax(name):
  jax_ = oracle()
  import jax.numpy as jjnp
  fj, args = _transform_cases(jax_, jjnp)[name]
  fl, _ = _transform_cases(jax, jnp)[name]
  assert str(jax.make_jaxpr(fl)(*args)) == str(jax_.make_jaxpr(fj)(*args))
  for a, b in zip(jax.tree.leaves(fl(*args)), jax_.tree.leaves(fj(*args))):
    np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-7)


def _jacobian_cases(N):
  return {
      "vector": (lambda x: N.sin(x) * N.sum(x ** 2), (np.array([0.3, -0.8, 1.1], np.float32),)),
      "matrix_in": (lambda W: N.tanh(W @ np.array([1.0, -2.0, 0.5], np.float32)),
                    (np.arange(6, dtype=np.float32).reshape(2, 3) / 7,)),
      "two_args": (lambda x, y: x * N.exp(y), (np.array([1.0, 2.0], np.float32),
                                               np.array([0.1, -0.3], np.float32))),
  }


@pytest.mark.parametrize("name", list(_jacobian_cases(np)))
@pytest.mark.parametrize("transform", ["grad_of_sum", "jacfwd", "jacrev", "hessian_of_sum"])
def test_jacobian_values_match_jax(name, transform):
  jax_ = oracle()
  import jax.numpy as jjnp
  fj, args = _jacobian_cases(jjnp)[name]
  fl, _ = _jacobian_cases(jnp)[name]
  argnums = tuple(range(len(args)))

  def build(J, N, f):
    total = lambda *a: N.sum(f(*a))
    return {"grad_of_sum": J.grad(total, argnums), "jacfwd": J.jacfwd(f, argnums),
            "jacrev": J.jacrev(f, argnums), "hessian_of_sum": J.hessian(total, argnums)}[transform]
  got = build(jax, jnp, fl)(*args)
  want = build(jax_, jjnp, fj)(*args)
  assert jax.tree.structure(got) == jax.tree.structure(want) or \
      len(jax.tree.leaves(got)) == len(jax_.tree.leaves(want))
  for a, b in zip(jax.tree.leaves(got), jax_.tree.leaves(want)):
    assert np.shape(a) == np.shape(b)
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# --- an MLP trained with jit(value_and_grad(loss)) and SGD --------------------------------------

def _mlp_problem(sizes=(20, 32, 32, 5), batch=16, seed=0):
  rng = np.random.default_rng(seed)
  params = [(rng.normal(0, 1 / np.sqrt(m), (m, n)).astype(np.float32),
             np.zeros(n, np.float32)) for m, n in itertools.pairwise(sizes)]
  x = rng.normal(size=(batch, sizes[0])).astype(np.float32)
  y = rng.integers(0, sizes[-1], batch)
  labels = np.eye(sizes[-1], dtype=np.float32)[y]
  return params, x, labels


def _train(J, N, steps=25, lr=0.1):
  params, x, labels = _mlp_problem()

  def predict(params, x):
    for w, b in params[:-1]:
      x = J.nn.relu(N.dot(x, w) + b)
    w, b = params[-1]
    return N.dot(x, w) + b

  def loss(params, x, labels):
    return -N.mean(N.sum(J.nn.log_softmax(predict(params, x)) * labels, axis=-1))

  step_grad = J.jit(J.value_and_grad(loss))
  losses = []
  for _ in range(steps):
    value, grads = step_grad(params, x, labels)
    params = J.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
    losses.append(float(value))
  return np.array(losses), params


def test_mlp_training_lowers_the_loss():
  losses, _ = _train(jax, jnp)
  assert losses[-1] < 0.5 * losses[0]
  assert np.all(np.diff(losses) < 1e-3)


def test_mlp_training_matches_jax():
  jax_ = oracle()
  import jax.numpy as jjnp
  ours, ours_params = _train(jax, jnp)
  theirs, their_params = _train(jax_, jjnp)
  np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
  for a, b in zip(jax.tree.leaves(ours_params), jax_.tree.leaves(their_params)):
    np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)
