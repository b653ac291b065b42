"""More of `jax.lax.linalg`, composed in jnp: Householder reductions in LAPACK's packed form
(hessenberg = gehrd, tridiagonal = sytrd), ormqr (apply geqrf's Q) and the QDWH polar
decomposition."""
from __future__ import annotations


def _jnp():
  from jaxlite._src.numpy import namespace as jnp
  return jnp


def _real_square(name: str, a):
  jnp = _jnp()
  a = jnp.asarray(a)
  if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
    raise ValueError(f"{name}: expected a batch of square matrices, got shape {a.shape}")
  if jnp.issubdtype(a.dtype, jnp.complexfloating):
    raise NotImplementedError(f"{name}: complex inputs are not supported by jaxlite yet")
  if not jnp.issubdtype(a.dtype, jnp.floating):
    a = a.astype(jnp.result_type(float))
  return a


def _reflector(x):
  """LAPACK's larfg on the vector x: (beta, tau, v) with (I - tau [1; v][1; v]^H)^H x = beta e1,
  beta real; tau = 0 (the identity) when x is already a real multiple of e1."""
  jnp = _jnp()
  alpha, rest = x[0], x[1:]
  xnorm = jnp.sqrt(jnp.sum(jnp.real(rest * jnp.conj(rest))))
  trivial = (xnorm == 0) & (jnp.imag(alpha) == 0)
  beta = -jnp.where(jnp.real(alpha) >= 0, 1., -1.) * jnp.hypot(jnp.abs(alpha), xnorm)
  beta = beta.astype(x.dtype)
  safe_beta = jnp.where(trivial, 1., beta)
  tau = jnp.where(trivial, 0., (beta - alpha) / safe_beta)
  v = jnp.where(trivial, 0., rest / jnp.where(trivial, 1., alpha - beta))
  return jnp.where(trivial, alpha, beta), tau.astype(x.dtype), v


def _hessenberg_2d(a):
  """gehrd: for k = 0 .. n-3, a reflector on rows k+1.. zeroes column k below the subdiagonal;
  A <- H A H. The vectors are stored below the subdiagonal, as LAPACK does."""
  jnp = _jnp()
  n = a.shape[0]
  taus = []
  for k in range(n - 2):
    beta, tau, v = _reflector(a[k + 1:, k])
    w = jnp.concatenate([jnp.ones((1,), a.dtype), v])
    # A H on columns k+1.., then H A on rows and columns k+1.. (column k becomes beta e1 and
    # the earlier columns hold earlier reflectors, so neither is touched)
    cols = a[:, k + 1:]
    a = a.at[:, k + 1:].set(cols - tau * jnp.outer(cols @ w, w))
    sub = a[k + 1:, k + 1:]
    a = a.at[k + 1:, k + 1:].set(sub - tau * jnp.outer(w, w @ sub))
    a = a.at[k + 1, k].set(beta).at[k + 2:, k].set(v)
    taus.append(tau)
  taus.append(jnp.zeros((), a.dtype))  # LAPACK's tau has n - 1 entries; the last is 0
  return a, jnp.stack(taus[:max(n - 1, 0)]) if n > 1 else jnp.zeros((0,), a.dtype)


def hessenberg(a):
  """(packed, taus): the upper Hessenberg form H = Q^T A Q on and above the subdiagonal of
  `packed`, Q's Householder vectors below it, and their scales `taus` (LAPACK gehrd)."""
  return tuple(hessenberg_p.bind(_real_square("hessenberg", a)))


def _hessenberg(a):
  jnp = _jnp()
  return jnp.vectorize(_hessenberg_2d, signature="(n,n)->(n,n),(k)")(a) if a.shape[-1] > 1 \
      else (a, jnp.zeros(a.shape[:-2] + (0,), a.dtype))


def _tridiagonal_lower_2d(a):
  """sytrd with uplo='L': the Householder reduction of the symmetric matrix (lower triangle
  read), vectors below the subdiagonal; the strict upper triangle is left as given."""
  jnp = _jnp()
  n = a.shape[0]
  lower = jnp.tril(a) + jnp.tril(a, -1).T  # the symmetric matrix the lower triangle defines
  work, taus, es = lower, [], []
  out = a
  for k in range(n - 1):
    beta, tau, v = _reflector(work[k + 1:, k])
    w = jnp.concatenate([jnp.ones((1,), a.dtype), v])
    sub = work[k + 1:, k + 1:]
    # H S H for the trailing block, S symmetric
    p = tau * (sub @ w)
    kk = p - 0.5 * tau * (p @ w) * w
    work = work.at[k + 1:, k + 1:].set(sub - jnp.outer(w, kk) - jnp.outer(kk, w))
    out = out.at[k + 1, k].set(beta).at[k + 2:, k].set(v)
    taus.append(tau)
    es.append(beta)
  d = jnp.diagonal(work)
  out = out.at[jnp.arange(n), jnp.arange(n)].set(d)
  e = jnp.stack(es) if es else jnp.zeros((0,), a.dtype)
  t = jnp.stack(taus) if taus else jnp.zeros((0,), a.dtype)
  return out, d, e, t


def _geqrf_2d(a):
  """geqrf: for k < min(m, n), a reflector zeroes column k below the diagonal (R on and above
  it, the vectors below it, as LAPACK stores them); returns (packed, taus)."""
  jnp = _jnp()
  m, n = a.shape
  taus = []
  for k in range(min(m, n)):
    beta, tau, v = _reflector(a[k:, k])
    w = jnp.concatenate([jnp.ones((1,), a.dtype), v])
    rest = a[k:, k + 1:]
    # H^H = I - conj(tau) w w^H from the left (zgeqr2's zlarf with conj(tau))
    a = a.at[k:, k + 1:].set(rest - jnp.conj(tau) * jnp.outer(w, jnp.conj(w) @ rest))
    a = a.at[k, k].set(beta).at[k + 1:, k].set(v)
    taus.append(tau)
  return a, jnp.stack(taus) if taus else jnp.zeros((0,), a.dtype)


def geqrf(a):
  """(packed, taus): LAPACK geqrf's Householder QR of each matrix of `a` (R on and above the
  diagonal of `packed`, the reflectors' vectors below it; Q = H_0 ... H_{k-1}, ormqr applies
  it). `jnp.linalg.qr(mode='raw')` returns (packed^T, taus), as NumPy."""
  jnp = _jnp()
  a = jnp.asarray(a)
  if a.ndim < 2:
    raise ValueError(f"geqrf: expected a batch of matrices, got shape {a.shape}")
  if not jnp.issubdtype(a.dtype, jnp.inexact):
    a = a.astype(jnp.result_type(float))
  return tuple(geqrf_p.bind(a))


def _geqrf(a):
  return _jnp().vectorize(_geqrf_2d, signature="(m,n)->(m,n),(k)")(a)


def tridiagonal(a, *, lower: bool = True):
  """(packed, d, e, taus): Q^T A Q = tridiagonal(d, e) for symmetric A read from its `lower`
  (or upper) triangle, Q's Householder vectors packed as LAPACK sytrd stores them."""
  return tuple(tridiagonal_p.bind(_real_square("tridiagonal", a), lower=bool(lower)))


def _tridiagonal(a, *, lower):
  jnp = _jnp()
  if lower:
    return jnp.vectorize(_tridiagonal_lower_2d, signature="(n,n)->(n,n),(n),(m),(m)")(a)
  # uplo='U' is the mirror image: reverse rows and columns, reduce the lower triangle, and
  # reverse everything back
  flip = a[..., ::-1, ::-1]
  packed, d, e, t = jnp.vectorize(_tridiagonal_lower_2d,
                                  signature="(n,n)->(n,n),(n),(m),(m)")(flip)
  return packed[..., ::-1, ::-1], d[..., ::-1], e[..., ::-1], t[..., ::-1]


def ormqr(a, taus, c, *, left: bool = True, transpose: bool = False):
  """Q c, Q^T c, c Q or c Q^T (`left`, `transpose`) with Q the product of the Householder
  reflectors geqrf packed in `a` and `taus`, without the caller forming Q."""
  jnp = _jnp()
  a, taus, c = jnp.asarray(a), jnp.asarray(taus), jnp.asarray(c)
  if taus.shape[-1] > min(a.shape[-2], a.shape[-1]):
    raise ValueError(f"ormqr: taus has {taus.shape[-1]} entries but a has shape {a.shape}")
  return ormqr_p.bind(a, taus, c, left=bool(left), transpose=bool(transpose))


def _ormqr(a, taus, c, *, left, transpose):
  jnp = _jnp()
  from jaxlite._src.lax.linalg import householder_product
  m, k = a.shape[-2], taus.shape[-1]
  if k > min(m, a.shape[-1]):
    raise ValueError(f"ormqr: taus has {k} entries but a has shape {a.shape}")
  # pad the reflectors with tau = 0 ones (the identity) to form the full m x m Q
  vs = a[..., :, :k]
  pad = m - k
  full = jnp.concatenate([vs, jnp.zeros(a.shape[:-2] + (m, pad), a.dtype)], axis=-1)
  full_taus = jnp.concatenate([taus, jnp.zeros(taus.shape[:-1] + (pad,), taus.dtype)], axis=-1)
  q = householder_product(full, full_taus)
  if transpose:
    q = jnp.conj(jnp.swapaxes(q, -1, -2))
  return q @ c if left else c @ q


# --- the primitives: their value is the composition above (so jvp and vmap follow it) -------


def _composite_primitive(name, fn, multiple_results):
  """A primitive computed by the jnp composition `fn(*arrays, **params)`: eager and compiled
  kernels run it, abstract evaluation traces it, and vmap moves the batch dimension to the
  front, which `fn` treats as a leading batch axis. As in JAX 0.10.2 there is no
  differentiation rule (NotImplementedError under jvp/grad)."""
  import numpy as np
  from jaxlite._src.transforms import api
  from jaxlite._src.base import core
  from jaxlite._src.interpreters import batching

  p = core.Primitive(name)
  p.multiple_results = multiple_results

  def impl(*args, **params):
    out = fn(*args, **params)
    return [np.asarray(o) for o in out] if multiple_results else np.asarray(out)

  def abstract_eval(*avals, **params):
    shapes = [api.ShapeDtypeStruct(a.shape, a.dtype) for a in avals]
    out = api.eval_shape(lambda *xs: fn(*xs, **params), *shapes)
    outs = out if multiple_results else [out]
    avals_out = [core.ShapedArray(o.shape, o.dtype) for o in outs]
    return avals_out if multiple_results else avals_out[0]

  def batch_rule(vals, dims, **params):
    size = batching.mapped_size(vals, dims)
    vals = [batching.bdim_at_front(v, d, size) for v, d in zip(vals, dims)]
    out = p.bind(*vals, **params)
    return out, ([0] * len(out) if multiple_results else 0)

  p.def_impl(impl)
  p.def_abstract_eval(abstract_eval)
  batching.primitive_batchers[p] = batch_rule
  return p


hessenberg_p = _composite_primitive("hessenberg", _hessenberg, True)
tridiagonal_p = _composite_primitive("tridiagonal", _tridiagonal, True)
ormqr_p = _composite_primitive("ormqr", _ormqr, False)
geqrf_p = _composite_primitive("geqrf", _geqrf, True)


# --- QDWH polar decomposition ------------------------------------------------------------------

def _qdwh_2d(x, is_hermitian, max_iterations, eps):
  """Nakatsukasa, Bai & Gygi (2010): dynamically weighted Halley iterations
  U <- U (a I + b U^H U)(I + c U^H U)^-1 (by a QR of [sqrt(c) U; I] while c is large, Cholesky
  once it is small), converging cubically to the unitary polar factor; H = U^H x."""
  jnp = _jnp()
  from jaxlite._src.lax import namespace as lax
  m, n = x.shape
  dtype = x.dtype
  eps = float(jnp.finfo(dtype).eps) if eps is None else eps
  tol_l = 5 * eps            # the singular-value bound l counts as 1 within this
  tol = tol_l ** (1 / 3)     # then stop once an iteration moves u by less than this
  alpha = jnp.sqrt(jnp.linalg.norm(x, ord=1) * jnp.linalg.norm(x, ord=jnp.inf))
  u0 = x / jnp.where(alpha == 0, 1., alpha)
  l0 = jnp.asarray(0.9 * eps, dtype)  # lower bound on the smallest singular value of u0
  eye = jnp.eye(n, dtype=dtype)

  def weights(l_):
    d = (4 * (1 - l_ * l_) / (l_ ** 4)) ** (1 / 3)
    h = jnp.sqrt(1 + d)
    a = h + 0.5 * jnp.sqrt(8 - 4 * d + 8 * (2 - l_ * l_) / (l_ * l_ * h))
    b = (a - 1) ** 2 / 4
    c = a + b - 1
    l_next = jnp.minimum(l_ * (a + b * l_ * l_) / (1 + c * l_ * l_), 1.)
    return a, b, c, l_next

  def step(state):
    u, l_, it, _ = state
    a, b, c, l_next = weights(l_)

    def by_qr(u):
      q, _ = jnp.linalg.qr(jnp.concatenate([jnp.sqrt(c) * u, eye]))
      q1, q2 = q[:m], q[m:]
      return (b / c) * u + (a - b / c) / jnp.sqrt(c) * (q1 @ jnp.conj(q2.T))

    def by_cholesky(u):
      z = eye + c * (jnp.conj(u.T) @ u)
      y = jnp.conj(jnp.linalg.solve(z, jnp.conj(u.T)).T)  # u z^-1, z Hermitian
      return (b / c) * u + (a - b / c) * y

    new = lax.cond(c > 100, by_qr, by_cholesky, u)
    change = jnp.linalg.norm(new - u)
    return new, l_next, it + 1, change

  def keep_going(state):
    # the weighted steps move u little while l is small: only stop once l has reached 1
    _, l_, it, change = state
    return (it < max_iterations) & ((l_ + tol_l < 1) | (change > tol))

  u, l_final, iters, change = lax.while_loop(keep_going, step,
                                       (u0, l0, 0, jnp.asarray(jnp.inf, dtype)))
  h = jnp.conj(u.T) @ x
  h = 0.5 * (h + jnp.conj(h.T))
  return u, h, iters, (change <= tol) & (l_final + tol_l >= 1)


def qdwh(x, *, is_hermitian: bool = False, max_iterations: int | None = None,
         eps: float | None = None, dynamic_shape: tuple[int, int] | None = None):
  """(u, h, num_iters, is_converged): the polar decomposition x = u h (u with orthonormal
  columns, h Hermitian positive semi-definite) of a tall or square x, by QDWH."""
  jnp = _jnp()
  if dynamic_shape is not None:
    raise NotImplementedError("qdwh: dynamic_shape is not supported by jaxlite")
  x = jnp.asarray(x)
  if x.ndim != 2:
    raise ValueError(f"qdwh: expected a matrix, got shape {x.shape}")
  if x.shape[0] < x.shape[1]:
    raise ValueError(f"qdwh: the input matrix of shape {x.shape} must have at least as many "
                     f"rows as columns")
  if not jnp.issubdtype(x.dtype, jnp.inexact):
    x = x.astype(jnp.result_type(float))
  max_iterations = 10 if max_iterations is None else max_iterations
  return _qdwh_2d(x, is_hermitian, max_iterations, eps)

# --- svd on the TPU ---------------------------------------------------------------------------
# The polar decomposition (QDWH) and a Hermitian eigendecomposition, as JAX
# computes it there (XLA has no SVD op or custom call; LAPACK's gesdd exists only on the CPU).
#
# For a square A: A = U_p H (QDWH, `lax.linalg.qdwh`), H = V diag(w) Vᴴ (eigh, XLA's `Eigh` on
# the TPU), so A = (U_p V) diag(w) Vᴴ: the singular values are w sorted descending (a tiny
# negative eigenvalue of a singular H flips its column of U). A tall A is first reduced to its
# square R by a QR (A = Q R), a wide one is handled as its adjoint.
#
# The rule traces that program (QDWH is written in jnp, above) for the equation's avals and
# lowers it inline, so its own primitives (qr, eigh, lu, cholesky, triangular_solve, while,
# cond) take the TPU's rules. Its products run at HIGHEST precision (the TPU's default rounds
# f32 operands to bfloat16). jnp.linalg imports this module, which registers the rule.

from jaxlite._src.base import config as _config  # noqa: E402
from jaxlite._src.base import core as _core  # noqa: E402
from jaxlite._src.compiler.xla import lowering as _xla  # noqa: E402
from jaxlite._src.interpreters import partial_eval as _pe  # noqa: E402
from jaxlite._src.lax import linalg as _lax_linalg  # noqa: E402
from jaxlite._src.lax import namespace as lax  # noqa: E402
import numpy as _np  # noqa: E402


def _matmul(a, b):
  return lax.dot(a, b, precision=lax.Precision.HIGHEST)


def _adjoint(a):
  t = lax.transpose(a, (1, 0))
  return lax.conj(t) if _np.issubdtype(a.dtype, _np.complexfloating) else t


def _square_svd(a, compute_uv):
  u_p, h, _, _ = qdwh(a)
  v, w = _lax_linalg.eigh(h)
  v, w = lax.rev(v, (1,)), lax.rev(w, (0,))  # descending
  s = lax.abs(w)
  if not compute_uv:
    return s, None, None
  negative = lax.broadcast_in_dim(w < 0, v.shape, (1,))
  u = _matmul(u_p, v)
  return s, lax.select(negative, -u, u), _adjoint(v)


def _svd_2d(a, full_matrices, compute_uv):
  """(s, u, vh) of one matrix (u, vh None unless `compute_uv`)."""
  m, n = a.shape
  if m < n:
    s, u, vh = _svd_2d(_adjoint(a), full_matrices, compute_uv)
    return (s, None, None) if not compute_uv else (s, _adjoint(vh), _adjoint(u))
  if m == n:
    return _square_svd(a, compute_uv)
  q, r = _lax_linalg.qr(a, full_matrices=full_matrices and compute_uv)
  s, u_r, vh = _square_svd(r[:n], compute_uv)
  if not compute_uv:
    return s, None, None
  u = _matmul(q[:, :n], u_r)
  if full_matrices:
    u = lax.concatenate([u, q[:, n:]], 1)
  return s, u, vh


def _svd_batched(a, full_matrices, compute_uv, subset_by_index):
  batch = a.shape[:-2]
  if batch:  # one matrix at a time (QDWH's loop runs to each matrix's own convergence)
    flat = a.reshape((-1, *a.shape[-2:]))
    outs = lax.map(lambda x: _svd_batched(x, full_matrices, compute_uv, subset_by_index),
                   flat)
    return [o.reshape((*batch, *o.shape[1:])) for o in outs]
  s, u, vh = _svd_2d(a, full_matrices, compute_uv)
  if subset_by_index is not None:
    lo, hi = subset_by_index
    s = s[lo:hi]
    if compute_uv:
      u, vh = u[:, lo:hi], vh[lo:hi]
  return [s, u, vh] if compute_uv else [s]


def _lower_program(ctx, fn, args):
  """`fn` (a program over lax and jnp) traced for the equation's input avals and lowered inline
  at HIGHEST matmul precision; its results converted to the equation's dtypes."""
  with _config.default_matmul_precision("highest"):
    with _core.set_current_trace(_core.eval_trace):
      closed = _pe.trace_to_jaxpr(lambda *xs: list(fn(*xs)), list(ctx.avals_in))
    outs = ctx.lower_jaxpr(closed, None, list(args))
  return [ctx.convert(o, a.dtype) for o, a in zip(outs, ctx.avals_out)]


def svd_polar_rule(ctx, x, *, full_matrices=True, compute_uv=True, subset_by_index=None,
                   algorithm=None):
  """svd_p's TPU rule (see above)."""
  if 0 in ctx.avals_in[0].shape:
    raise _xla.LoweringError("svd of an empty matrix has no TPU lowering in jaxlite")
  return _lower_program(
      ctx, lambda a: _svd_batched(a, full_matrices, compute_uv, subset_by_index), [x])


# --- tridiagonal_solve on the TPU: the Thomas algorithm (JAX's TPU lowering computes the same
# recurrence with a scan; LAPACK's gtsv exists only on the CPU) -----------------------------------

def _thomas(dl, d, du, b):
  """x with A x = b for the tridiagonal A (sub-, main and super-diagonals dl, d, du; dl[0] and
  du[-1] unused): one scan eliminates below the diagonal, one scan back substitutes."""
  nb = len(d.shape) - 1
  to_front = lambda v, extra: lax.transpose(  # noqa: E731 (the row axis first)
      v, (nb, *range(nb), *range(nb + 1, nb + 1 + extra)))
  rows = (to_front(dl, 0), to_front(d, 0), to_front(du, 0), to_front(b, 1))

  def eliminate(carry, row):
    cp, dp = carry
    lo, dd, up, bb = row
    denom = dd - lo * cp
    cp = up / denom
    dp = (bb - lo[..., None] * dp) / denom[..., None]
    return (cp, dp), (cp, dp)
  zero_c = lax.full(d.shape[:-1], 0, d.dtype)
  zero_x = lax.full((*b.shape[:-2], b.shape[-1]), 0, b.dtype)
  _, (cps, dps) = lax.scan(eliminate, (zero_c, zero_x), rows)

  def substitute(x_next, row):
    cp, dp = row
    x = dp - cp[..., None] * x_next
    return x, x
  _, xs = lax.scan(substitute, zero_x, (cps, dps), reverse=True)
  return [lax.transpose(xs, (*range(1, nb + 1), 0, nb + 1))]


def tridiagonal_solve_thomas_rule(ctx, dl, d, du, b, *, perturb_singular=False):
  return _lower_program(ctx, _thomas, [dl, d, du, b])[0]


_xla.register(_lax_linalg.svd_p, svd_polar_rule, platform="tpu")
_xla.register(_lax_linalg.tridiagonal_solve_p, tridiagonal_solve_thomas_rule, platform="tpu")


# --- the composite primitives on the XLA backend: their jnp program, lowered inline ---------------

def _composite_rule(fn, multiple_results):
  def rule(ctx, *args, **params):
    outs = _lower_program(
        ctx, lambda *xs: fn(*xs, **params) if multiple_results else [fn(*xs, **params)], args)
    return outs if multiple_results else outs[0]
  return rule


for _p, _fn in ((hessenberg_p, _hessenberg), (tridiagonal_p, _tridiagonal), (ormqr_p, _ormqr),
                (geqrf_p, _geqrf)):
  _xla.register(_p, _composite_rule(_fn, _p.multiple_results))
