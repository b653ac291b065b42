"""Autodiff: every differentiable primitive against central differences (both modes, second
order), compositions (grad of jit, nested derivatives, closures, vmap), float0 and symbolic
zeros, JAX's errors and tracer reprs, and the oracle: values and printed jaxprs of real JAX."""
import functools

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.test_util import check_grads

from conftest import oracle

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


def _reduce_with(fn, x, init, axes):
  return lax.reduce(x, np.float32(init), fn, axes)


# (id, function, args): one row per differentiable primitive (some with a few variants).
PRIMITIVES = [
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
    ("jit", jax.jit(lambda x, y: jnp.sin(x) * y), (_signed((3,)), _signed((3,)))),
    ("checkpoint", jax.checkpoint(lambda x: jnp.sin(jnp.cos(x)) * x), (_signed((3,)),)),
]


@pytest.mark.parametrize("name,fun,args", PRIMITIVES, ids=[p[0] for p in PRIMITIVES])
def test_primitive_gradients(name, fun, args):
  check_grads(fun, args, order=2, modes=("fwd", "rev"), eps=1e-3, atol=2e-2, rtol=2e-2)
