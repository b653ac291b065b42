"""Public `jax.test_util`: numerical checks of derivatives (`check_grads`) for tests.

Derivatives are compared with central differences along random directions: forward mode
directly, reverse mode through the inner-product identity <t, vjp(c)> = <jvp(t), c>, to any
order by differentiating the derivative function itself.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

from jaxlite._src.transforms import ad_api
from jaxlite._src.base import dtypes, tree_util

__all__ = ["check_close", "check_grads", "check_jvp", "check_vjp", "numerical_jvp"]

EPS = 1e-4

_DEFAULT_TOLERANCE = {
    np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-5}
if dtypes.bfloat16 is not None:
  _DEFAULT_TOLERANCE[np.dtype(dtypes.bfloat16)] = 1e-1


def _dtype(x):
  return np.dtype(getattr(x, "dtype", None) or np.asarray(x).dtype)


def _tolerance(dtype, given):
  if given is not None:
    return given
  return _DEFAULT_TOLERANCE.get(np.dtype(dtype), 0.0)


def _is_inexact(x) -> bool:
  return dtypes.issubdtype(_dtype(x), np.inexact)


def check_close(xs, ys, atol=None, rtol=None, err_msg: str = "") -> None:
  """Leaf by leaf `assert_allclose`, with tolerances defaulting by dtype."""
  def check(x, y):
    dt = np.promote_types(_dtype(x), _dtype(y))
    a = _tolerance(max(_dtype(x), _dtype(y), key=lambda d: _tolerance(d, None)), atol)
    r = _tolerance(max(_dtype(x), _dtype(y), key=lambda d: _tolerance(d, None)), rtol)
    np.testing.assert_allclose(np.asarray(x, dtype=dt), np.asarray(y, dtype=dt), atol=a,
                               rtol=r, err_msg=err_msg)
  tree_util.tree_map(check, xs, ys)


def _rand_like(rng, x):
  shape, dt = np.shape(x), _dtype(x)
  if not dtypes.issubdtype(dt, np.inexact):
    return np.zeros(shape, dtypes.float0)
  draw = lambda: np.asarray(rng.randn(*shape), dtype=dt)
  if dtypes.issubdtype(dt, np.complexfloating):
    return draw() + dt.type(1j) * draw()
  return draw()


def _axpy(scale, xs, ys, sign=1.0):
  """ys + sign * scale * xs over inexact leaves (others are left as they are)."""
  def f(x, y):
    if not _is_inexact(y):
      return y
    return np.asarray(np.asarray(y) + sign * scale * np.asarray(x), _dtype(y))
  return tree_util.tree_map(f, xs, ys)


def numerical_jvp(f: Callable, primals, tangents, eps: float = EPS):
  """(f(x + eps t) - f(x - eps t)) / (2 eps), in the dtype of each output."""
  f_pos = f(*_axpy(eps, tangents, primals))
  f_neg = f(*_axpy(eps, tangents, primals, sign=-1.0))

  def diff(a, b):
    if not _is_inexact(a):
      return np.zeros(np.shape(a), dtypes.float0)
    dt = _dtype(a)
    return np.asarray((np.asarray(a, np.result_type(dt, np.float64))
                       - np.asarray(b, np.result_type(dt, np.float64))) * (0.5 / eps), dt)
  return tree_util.tree_map(diff, f_pos, f_neg)


def _inner_prod(xs, ys) -> complex:
  total = 0.0
  for x, y in zip(tree_util.tree_leaves(xs), tree_util.tree_leaves(ys)):
    if _is_inexact(x) and _is_inexact(y):
      total = total + np.vdot(np.asarray(x, np.complex128), np.asarray(y, np.complex128))
  return total


def _conj(xs):
  return tree_util.tree_map(lambda x: np.conj(np.asarray(x)) if _is_inexact(x) else x, xs)


def check_jvp(f: Callable, f_jvp: Callable, args, atol=None, rtol=None, eps: float = EPS,
              err_msg: str = "") -> None:
  """`f_jvp(args, tangents)` against f's value and central differences."""
  rng = np.random.RandomState(0)
  tangent = tree_util.tree_map(functools.partial(_rand_like, rng), args)
  v_out, t_out = f_jvp(args, tangent)
  check_close(v_out, f(*args), atol, rtol, f"{err_msg} primal" if err_msg else "primal")
  check_close(t_out, numerical_jvp(f, args, tangent, eps), atol, rtol,
              f"{err_msg} tangent" if err_msg else "tangent")


def check_vjp(f: Callable, f_vjp: Callable, args, atol=None, rtol=None, eps: float = EPS,
              err_msg: str = "") -> None:
  """`f_vjp(*args)` against f's value and, through inner products, central differences."""
  rng = np.random.RandomState(0)
  v_out, vjp_fun = f_vjp(*args)
  check_close(v_out, f(*args), atol, rtol, f"{err_msg} primal" if err_msg else "primal")
  tangent = tree_util.tree_map(functools.partial(_rand_like, rng), args)
  tangent_out = numerical_jvp(f, args, tangent, eps)
  cotangent = tree_util.tree_map(functools.partial(_rand_like, rng), v_out)
  cotangent_out = _conj(vjp_fun(_conj(cotangent)))
  ip = _inner_prod(tangent, cotangent_out)
  ip_expected = _inner_prod(tangent_out, cotangent)
  # the tolerance of the dtype the products are computed in, as JAX's check_close of them: a
  # Python or NumPy float64 argument is float32 without x64 (numpy's log1mexp grads)
  dt = max((dtypes.canonicalize_dtype(_dtype(x)) for x in tree_util.tree_leaves(args)
            if _is_inexact(x)), key=lambda d: _tolerance(d, None), default=np.dtype(np.float64))
  np.testing.assert_allclose(ip, ip_expected, atol=_tolerance(dt, atol),
                             rtol=_tolerance(dt, rtol),
                             err_msg=f"{err_msg} cotangent projection" if err_msg
                             else "cotangent projection")


def check_grads(f: Callable, args: Sequence, order: int, modes=("fwd", "rev"), atol=None,
                rtol=None, eps: float | None = None) -> None:
  """Checks `f`'s derivatives up to `order` in forward (`"fwd"`) and reverse (`"rev"`) mode
  against central differences; raises AssertionError naming the failing derivative."""
  args = tuple(args)
  eps = eps or EPS

  def check(f, args, order, err_msg=""):
    if "fwd" in modes:
      msg = f"JVP of {err_msg}" if err_msg else "JVP"
      check_jvp(f, functools.partial(ad_api.jvp, f), args, atol, rtol, eps, msg)
      if order > 1:
        check(functools.partial(ad_api.jvp, f), (args, args), order - 1, msg)
    if "rev" in modes:
      msg = f"VJP of {err_msg}" if err_msg else "VJP"
      check_vjp(f, functools.partial(ad_api.vjp, f), args, atol, rtol, eps, msg)
      if order > 1:
        def f_vjp(*args):
          out, vjp_fun = ad_api.vjp(f, *args)
          return vjp_fun(out)
        check(f_vjp, args, order - 1, msg)
  check(f, args, order)
