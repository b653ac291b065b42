"""jnp's covariance, histogram, binning and interpolation functions, and the window functions.

Output sizes depend only on static arguments (`length=`, integer `bins`), as in JAX.
"""
from __future__ import annotations

import operator

import numpy as np

from jaxlite._src.base import core, dtypes
from jaxlite._src.transforms.jit_function import internal_jit
from jaxlite._src.numpy import creation, matmul as linalg_basic, shape_ops, sorting
from jaxlite._src.numpy import where_reshape as lnp
from jaxlite._src.numpy import reductions as red
from jaxlite._src.numpy import ufuncs as uf
from jaxlite._src.numpy.util import check_arraylike, dtype_weak, promote_dtypes_inexact


def _arr(x):
  return creation.asarray(x)


def _concrete_int(x, what):
  if isinstance(x, core.Tracer):
    raise core.ConcretizationTypeError(x, what) if hasattr(core, "ConcretizationTypeError") \
        else TypeError(what)
  return operator.index(int(x))


@internal_jit(static_argnames=("rowvar", "bias", "ddof"), name="cov")
def _cov(m, y, rowvar, bias, ddof, fweights, aweights):
  x = m if m.ndim == 2 else m.reshape(1, -1)
  if not rowvar and x.shape[0] != 1:
    x = x.T
  if y is not None:
    y = y if y.ndim == 2 else y.reshape(1, -1)
    if not rowvar and y.shape[0] != 1:
      y = y.T
    x = shape_ops.concatenate([x, y], axis=0)
  if ddof is None:
    ddof = 0 if bias else 1
  w = None
  if fweights is not None:
    w = _arr(fweights).astype(x.dtype)
  if aweights is not None:
    aw = _arr(aweights).astype(x.dtype)
    w = aw if w is None else w * aw
  if w is None:
    avg = red.mean(x, axis=1)
    w_sum = x.shape[1]
    fact = w_sum - ddof
  else:
    w_sum = red.sum(w)
    avg = red.sum(x * w, axis=1) / w_sum
    if ddof == 0:
      fact = w_sum
    elif aweights is None:
      fact = w_sum - ddof
    else:
      fact = w_sum - ddof * red.sum(w * aw) / w_sum
  xc = x - avg[:, None]
  xw = xc if w is None else xc * w
  c = linalg_basic.dot(xw, uf.conjugate(xc).T if xc.dtype.kind == "c" else xc.T)
  return uf.true_divide(c, fact).squeeze() if c.size == 1 else uf.true_divide(c, fact)


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
  check_arraylike("cov", m)
  m = _arr(m)
  if m.ndim > 2:
    raise ValueError("m has more than 2 dimensions")
  if y is None:
    (m,) = promote_dtypes_inexact(m)
  else:
    m, y = promote_dtypes_inexact(m, _arr(y))
  return _cov(m, y, bool(rowvar), bool(bias), None if ddof is None else int(ddof), fweights,
              aweights)


@internal_jit(static_argnames=("rowvar",), name="corrcoef")
def _corrcoef(x, y, rowvar):
  c = cov(x, y, rowvar)
  if c.ndim == 0:
    return uf.divide(c, c)
  d = linalg_basic.diagonal(c)
  stddev = uf.sqrt(uf.real(d)).astype(c.dtype)
  c = c / stddev[:, None] / stddev[None, :]
  if c.dtype.kind == "c":
    return c  # complex results are not clipped, as NumPy
  return sorting.clip(c, -1, 1)


def corrcoef(x, y=None, rowvar=True):
  check_arraylike("corrcoef", x)
  return _corrcoef(_arr(x), None if y is None else _arr(y), bool(rowvar))


def bincount(x, weights=None, minlength=0, *, length=None):
  check_arraylike("bincount", x)
  x = _arr(x)
  if dtype_weak(x)[0].kind not in "iub":
    raise TypeError(f"x argument to bincount must have an integer type; got {x.dtype}")
  if x.ndim != 1:
    raise ValueError("only 1-dimensional input supported.")
  minlength = _concrete_int(minlength, "The error occurred because of argument 'minlength' of "
                            "jnp.bincount.")
  if length is None:
    if isinstance(x, core.Tracer):
      raise core.ConcretizationTypeError(x, "The error occurred because of argument 'x' of "
                                         "jnp.bincount. To avoid this error, pass a static "
                                         "`length` argument.")
    length = max(minlength, int(np.max(np.asarray(x), initial=-1)) + 1)
  else:
    length = _concrete_int(length, "The error occurred because of argument 'length' of "
                           "jnp.bincount.")
  if weights is None:
    weights = np.array(1, dtypes.default_int_dtype())
  elif np.shape(weights) != x.shape:
    raise ValueError("shape of weights must match shape of x.")
  weights = lnp.broadcast_to(_arr(weights), x.shape)
  out = creation.zeros(length, weights.dtype)
  return out.at[sorting.clip(x, 0)].add(weights, mode="drop")


@internal_jit(static_argnames=("right",), name="digitize")
def _digitize(x, bins, right):
  side = "left" if right else "right"
  if bins.shape[0] == 0:
    return creation.zeros(x.shape, np.int32)
  increasing = bins[-1] >= bins[0]
  fwd = sorting.searchsorted(bins, x, side=side)
  bwd = bins.shape[0] - sorting.searchsorted(shape_ops.flip(bins, 0), x, side=side)
  return lnp.where(increasing, fwd, bwd).astype(np.int32)


def digitize(x, bins, right=False, *, method=None):
  check_arraylike("digitize", x, bins)
  bins = _arr(bins)
  if bins.ndim != 1:
    raise ValueError(f"digitize: bins must be a 1-dimensional array; got bins={bins}")
  return _digitize(_arr(x), bins, bool(right))


def _interp(x, xp, fp, left=None, right=None, period=None):
  check_arraylike("interp", x, xp, fp)
  if np.shape(xp) != np.shape(fp) or np.ndim(xp) != 1:
    raise ValueError("xp and fp must be one-dimensional arrays of equal size")
  x, xp = promote_dtypes_inexact(x, xp)
  (fp,) = promote_dtypes_inexact(fp)
  extrapolate = {}
  for side, given in (("left", left), ("right", right)):
    if isinstance(given, str) and given != "extrapolate":
      raise ValueError(f"the only valid string value of `{side}` is 'extrapolate', but got: "
                       f"{given!r}")
    extrapolate[side] = isinstance(given, str)
  if dtype_weak(x)[0].kind == "c":
    raise ValueError("jnp.interp: complex x values not supported.")
  if period is not None:
    if np.ndim(period) != 0:
      raise ValueError(f"period must be a scalar; got {period}")
    from jaxlite._src.lax.sort import sort_key_val
    period = uf.abs(period)
    x = x % period
    xp = xp % period
    xp, fp = sort_key_val(xp, fp)
    xp = shape_ops.concatenate([xp[-1:] - period, xp, xp[:1] + period])
    fp = shape_ops.concatenate([fp[-1:], fp, fp[:1]])
  i = sorting.clip(sorting.searchsorted(xp, x, side="right"), 1, xp.shape[0] - 1)
  df = fp[i] - fp[i - 1]
  dx = xp[i] - xp[i - 1]
  delta = x - xp[i - 1]
  epsilon = np.spacing(dtypes.finfo(dtype_weak(xp)[0]).eps)
  dx0 = _lax_abs(dx) <= epsilon  # equal xp: the left value, and no NaN gradient from dx
  f = lnp.where(dx0, fp[i - 1], fp[i - 1] + (delta / lnp.where(dx0, 1, dx)) * df)
  if not extrapolate["left"]:
    left_value = fp[0] if left is None else left
    if period is None:
      f = lnp.where(x < xp[0], left_value, f)
  if not extrapolate["right"]:
    right_value = fp[-1] if right is None else right
    if period is None:
      f = lnp.where(x > xp[-1], right_value, f)
  return f


def _lax_abs(x):
  from jaxlite._src.lax import namespace as lax
  return lax.abs(x)


_INTERP_JITS = {}


def interp(x, xp, fp, left=None, right=None, period=None):
  """A jit of _interp whose static arguments are the bounds given as strings or None and an
  absent period, as JAX's (its jaxpr takes the others as operands)."""
  static = tuple(name for name, v in (("left", left), ("right", right))
                 if isinstance(v, str) or v is None) + (("period",) if period is None else ())
  if static not in _INTERP_JITS:
    _INTERP_JITS[static] = internal_jit(_interp, static_argnames=static, name="_interp")
  return _INTERP_JITS[static](x, xp, fp, left, right, period)


@internal_jit(static_argnames=("axis",), name="unwrap")
def _unwrap(p, discont, axis, period):
  if discont is None:
    discont = period / 2
  interval = period / 2
  dd = _diff(p, axis)
  ddmod = uf.remainder(dd + interval, period) - interval
  ddmod = lnp.where(uf.logical_and(uf.equal(ddmod, -interval), uf.greater(dd, 0)), interval,
                    ddmod)
  ph_correct = lnp.where(uf.less(uf.abs(dd), discont), 0, ddmod - dd)
  n = p.shape[axis]
  first = lax_slice(p, 0, 1, axis)
  rest = lax_slice(p, 1, n, axis) + red.cumsum(ph_correct, axis=axis)
  return shape_ops.concatenate([first, rest], axis=axis)


def lax_slice(a, start, stop, axis):
  from jaxlite._src.lax import namespace as lax
  return lax.slice_in_dim(a, start, stop, axis=axis)


def _diff(a, axis):
  n = a.shape[axis]
  return lax_slice(a, 1, n, axis) - lax_slice(a, 0, n - 1, axis)


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
  check_arraylike("unwrap", p)
  (p,) = promote_dtypes_inexact(_arr(p))
  if p.ndim == 0 or p.shape[axis] == 0:
    return p
  axis = axis % p.ndim
  return _unwrap(p, discont, axis, period)


# ---- histograms ------------------------------------------------------------------------------

def histogram_bin_edges(a, bins=10, range=None, weights=None):
  check_arraylike("histogram_bin_edges", a)
  (a,) = promote_dtypes_inexact(_arr(a))
  if isinstance(bins, str):
    raise NotImplementedError("string values for `bins` not implemented.")
  if np.ndim(bins) == 1:
    return _arr(bins).astype(a.dtype)
  bins = _concrete_int(bins, "The error occurred because of argument 'bins' of "
                       "jnp.histogram_bin_edges.")
  if range is None:
    lo, hi = red.min(a), red.max(a)
  else:
    lo, hi = (_arr(v).astype(a.dtype) for v in range)
  same = uf.equal(lo, hi)
  lo = lnp.where(same, lo - 0.5, lo)
  hi = lnp.where(same, hi + 0.5, hi)
  return creation.linspace(lo, hi, bins + 1, dtype=a.dtype)


def histogram(a, bins=10, range=None, weights=None, density=None):
  check_arraylike("histogram", a)
  a = lnp.ravel(_arr(a))
  if weights is None:
    (a,) = promote_dtypes_inexact(a)
    weights = creation.ones_like(a)
  else:
    a, weights = promote_dtypes_inexact(a, lnp.ravel(_arr(weights)))
  edges = histogram_bin_edges(a, bins, range, weights)
  idx = sorting.searchsorted(edges, a, side="right")
  idx = lnp.where(uf.equal(a, edges[-1]), edges.shape[0] - 1, idx)  # the last bin is closed
  counts = creation.zeros(edges.shape[0] + 1, weights.dtype).at[idx].add(weights)[1:-1]
  if density:
    widths = edges[1:] - edges[:-1]
    counts = counts / widths / red.sum(counts)
  return counts, edges


def histogramdd(sample, bins=10, range=None, weights=None, density=None):
  check_arraylike("histogramdd", sample)
  sample = _arr(sample)
  n, d = sample.shape
  (sample,) = promote_dtypes_inexact(sample)
  if weights is None:  # integer counts, as JAX
    weights = creation.ones(n, dtypes.default_int_dtype())
  else:
    weights = _arr(weights).astype(sample.dtype)
  bins_per_dim = bins if isinstance(bins, (list, tuple)) else [bins] * d
  range_per_dim = range if range is not None else [None] * d
  edges, idxs, nbins = [], [], []
  for i in _range(d):  # `range` is the argument here
    e = histogram_bin_edges(sample[:, i], bins_per_dim[i], range_per_dim[i])
    ix = sorting.searchsorted(e, sample[:, i], side="right")
    ix = lnp.where(uf.equal(sample[:, i], e[-1]), e.shape[0] - 1, ix)
    edges.append(e)
    idxs.append(ix)
    nbins.append(e.shape[0] + 1)
  flat = creation.zeros((), np.int32)
  for ix, nb in zip(idxs, nbins):
    flat = flat * nb + ix
  total = int(np.prod(nbins))
  hist = creation.zeros(total, weights.dtype).at[flat].add(weights)
  hist = hist.reshape(tuple(nbins))
  hist = hist[tuple(slice(1, -1) for _ in nbins)]
  if density:
    hist = hist / red.sum(hist)
    for i, e in enumerate(edges):
      shape = [1] * d
      shape[i] = -1
      hist = hist / (e[1:] - e[:-1]).reshape(shape)
  return hist, edges


def _range(n):
  import builtins
  return builtins.range(n)


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
  check_arraylike("histogram2d", x, y)
  x, y = promote_dtypes_inexact(_arr(x), _arr(y))
  sample = shape_ops.stack([x, y], axis=1)
  if np.ndim(bins) == 1 and not isinstance(bins, (list, tuple)) or \
      (isinstance(bins, (list, tuple)) and len(bins) != 2):
    bins = [bins, bins]
  hist, edges = histogramdd(sample, bins, range, weights, density)
  return hist, edges[0], edges[1]


# ---- windows ---------------------------------------------------------------------------------

def _window_length(M, name):
  return _concrete_int(M, f"M argument of jnp.{name}")


def _window(name, fn):
  def window(M):
    M = _window_length(M, name)
    dt = dtypes.default_float_dtype()
    if M <= 1:
      return creation.ones(max(M, 0), dt)
    n = creation.arange(M, dtype=dt)
    return fn(n, M).astype(dt)
  window.__name__ = window.__qualname__ = name
  return window


bartlett = _window("bartlett", lambda n, M: 1 - uf.abs(2 * n + 1 - M) / (M - 1))
blackman = _window("blackman", lambda n, M: 0.42 - 0.5 * uf.cos(2 * np.pi * n / (M - 1))
                   + 0.08 * uf.cos(4 * np.pi * n / (M - 1)))
hamming = _window("hamming", lambda n, M: 0.54 - 0.46 * uf.cos(2 * np.pi * n / (M - 1)))
hanning = _window("hanning", lambda n, M: 0.5 - 0.5 * uf.cos(2 * np.pi * n / (M - 1)))


def kaiser(M, beta):
  from jaxlite._src.numpy.elementwise_extra import i0
  M = _window_length(M, "kaiser")
  dt = dtypes.default_float_dtype()
  if M <= 1:
    return creation.ones(max(M, 0), dt)
  n = creation.arange(M, dtype=dt)
  alpha = 0.5 * (M - 1)
  return i0(beta * uf.sqrt(1 - ((n - alpha) / alpha) ** 2)) / i0(_arr(beta).astype(dt))
