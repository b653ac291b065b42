"""jnp's functional helpers (vectorize, apply_along_axis), constructors from buffers and functions,
index tricks (mgrid, ogrid, s_), printing and NumPy file I/O wrappers, and scalar type aliases."""
from __future__ import annotations

import functools

import numpy as np

from jaxlite._src import dtypes
from jaxlite._src.jit import internal_jit
from jaxlite._src.numpy import creation, scalar_types, shape_ops, sorting
from jaxlite._src.numpy import where_reshape as lnp
from jaxlite._src.numpy.util import check_arraylike, promote_dtypes


def _arr(x):
  return creation.asarray(x)


def _vmap():
  import jaxlite
  return jaxlite.vmap


# ---- functional -----------------------------------------------------------------------------

def apply_along_axis(func1d, axis, arr, *args, **kwargs):
  """vmap of `func1d` over every axis but `axis`, as JAX."""
  vmap = _vmap()
  arr = _arr(arr)
  axis = axis % arr.ndim
  func = lambda a: func1d(a, *args, **kwargs)
  for i in range(1, arr.ndim - axis):
    func = vmap(func, in_axes=i, out_axes=-1)
  for _ in range(axis):
    func = vmap(func, in_axes=0, out_axes=0)
  return func(arr)


def apply_over_axes(func, a, axes):
  a = _arr(a)
  for axis in axes:
    b = func(a, axis)
    if b.ndim == a.ndim:
      a = b
    elif b.ndim == a.ndim - 1:
      a = lnp.expand_dims(b, axis)
    else:
      raise ValueError("function is not returning an array of the correct shape")
  return a


def _parse_signature(signature):
  ins, outs = signature.replace(" ", "").split("->")

  def groups(s):
    import re
    return [tuple(d for d in g.split(",") if d) for g in re.findall(r"\(([^)]*)\)", s)]
  return groups(ins), groups(outs)


class vectorize:
  """Broadcasts the loop dimensions of the arguments and maps `pyfunc` over them with vmap."""

  def __init__(self, pyfunc, *, excluded=frozenset(), signature=None):
    self.pyfunc = pyfunc
    self.excluded = frozenset(excluded)
    self.signature = signature
    functools.update_wrapper(self, pyfunc)

  def __call__(self, *args, **kwargs):
    vmap = _vmap()
    excluded = {i for i in self.excluded if isinstance(i, int)}
    kw_excluded = {k: v for k, v in kwargs.items() if k in self.excluded}
    kwargs = {k: v for k, v in kwargs.items() if k not in self.excluded}
    fixed = {i: args[i] for i in excluded if i < len(args)}
    names = list(kwargs)
    mapped = [_arr(a) for i, a in enumerate(args) if i not in excluded] + \
        [_arr(kwargs[k]) for k in names]
    n_pos = len(mapped) - len(names)
    if self.signature is None:
      core_dims = [()] * len(mapped)
    else:
      core_dims, _ = _parse_signature(self.signature)
      core_dims = core_dims + [()] * (len(mapped) - len(core_dims))

    def call(*vals):
      it = iter(vals[:n_pos])
      full = [fixed[i] if i in fixed else next(it) for i in range(len(args))]
      kw = dict(zip(names, vals[n_pos:]), **kw_excluded)
      return self.pyfunc(*full, **kw)

    loop_shapes = [a.shape[:a.ndim - len(cd)] for a, cd in zip(mapped, core_dims)]
    loop = np.broadcast_shapes(*loop_shapes) if loop_shapes else ()
    mapped = [lnp.broadcast_to(a, loop + a.shape[a.ndim - len(cd):])
              for a, cd in zip(mapped, core_dims)]
    f = call
    for _ in loop:
      f = vmap(f)
    return f(*mapped)


def fromfunction(function, shape, *, dtype=float, **kwargs):
  shape = tuple(int(s) for s in shape)
  vmap = _vmap()
  f = lambda *idx: function(*idx, **kwargs)
  for i in range(len(shape) - 1, -1, -1):
    f = vmap(f, in_axes=tuple(None if j != i else 0 for j in range(len(shape))))
  return f(*(creation.arange(n, dtype=dtype) for n in shape))


def frombuffer(buffer, dtype=float, count=-1, offset=0):
  return creation.asarray(np.frombuffer(buffer, scalar_types.dtype(dtype), count, offset))


def fromiter(iterable, dtype, count=-1):
  return creation.asarray(np.fromiter(iterable, scalar_types.dtype(dtype), count))


def fromstring(string, dtype=float, count=-1, *, sep):
  return creation.asarray(np.fromstring(string, scalar_types.dtype(dtype), count, sep=sep))


def fromfile(*args, **kwargs):
  raise NotImplementedError(
      "jnp.fromfile() is not implemented because it may be non-pure and thus unsafe for use "
      "with JIT and other JAX transformations. Consider using jnp.asarray(np.fromfile(...)) "
      "instead, although care should be taken if np.fromfile is used within jax "
      "transformations because of its potential side-effect of consuming the file object; for "
      "more information see `Common Gotchas: Pure Functions "
      "<https://docs.jax.dev/en/latest/notebooks/Common_Gotchas_in_JAX.html#pure-functions>`_.")


class ufunc:
  """A user ufunc (jnp.frompyfunc): broadcasting call, and reduce/accumulate/outer/at unrolled
  over the static axis length, so they trace under jit."""

  def __init__(self, func, /, nin, nout, *, name=None, nargs=None, identity=None, call=None,
               reduce=None, accumulate=None, at=None, reduceat=None):
    self.__name__ = name or getattr(func, "__name__", "ufunc")
    self._func, self.nin, self.nout = func, int(nin), int(nout)
    self.nargs = int(nargs if nargs is not None else nin)
    self.identity = identity
    self._call, self._reduce, self._accumulate, self._at = call, reduce, accumulate, at
    if reduceat is not None:
      self._reduceat = reduceat

  def __repr__(self):
    return f"<jnp.ufunc '{self.__name__}'>"

  def __call__(self, *args):
    if len(args) != self.nin:
      raise TypeError(f"{self.__name__}() takes {self.nin} positional argument(s) but "
                      f"{len(args)} were given")
    if self._call is not None:
      return self._call(*args)
    return vectorize(self._func)(*args)

  def _binary_scalar(self, name):
    if self.nin != 2 or self.nout != 1:
      raise ValueError(f"{name} only supported for binary ufuncs with a single output; "
                       f"got nin={self.nin} nout={self.nout}")

  def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=None):
    self._binary_scalar("reduce")
    if out is not None or where is not None:
      raise NotImplementedError(f"out/where arguments of {self.__name__}.reduce")
    if self._reduce is not None:
      return self._reduce(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial)
    a = _arr(a) if dtype is None else _arr(a).astype(dtype)
    if axis is None:
      a, axis = lnp.ravel(a), 0
    axis = axis % a.ndim
    moved = shape_ops.moveaxis(a, axis, 0)
    if initial is None:
      initial = self.identity
    if moved.shape[0] == 0:
      if initial is None:
        raise ValueError(f"zero-size array to reduction operation {self.__name__} which has "
                         "no identity")
      acc = creation.full(moved.shape[1:], initial, a.dtype)
    else:
      acc = moved[0] if initial is None else self(_arr(initial).astype(a.dtype), moved[0])
      for i in range(1, moved.shape[0]):
        acc = self(acc, moved[i])
    return lnp.expand_dims(acc, axis) if keepdims else acc

  def accumulate(self, a, axis=0, dtype=None, out=None):
    self._binary_scalar("accumulate")
    if self._accumulate is not None:
      return self._accumulate(a, axis=axis, dtype=dtype)
    a = _arr(a) if dtype is None else _arr(a).astype(dtype)
    moved = shape_ops.moveaxis(a, axis, 0)
    outs = [moved[0]] if moved.shape[0] else []
    for i in range(1, moved.shape[0]):
      outs.append(self(outs[-1], moved[i]))
    return shape_ops.moveaxis(shape_ops.stack(outs), 0, axis) if outs else a

  def outer(self, A, B, /):
    self._binary_scalar("outer")
    A, B = _arr(A), _arr(B)
    return self(A.reshape(A.shape + (1,) * B.ndim), B)

  def at(self, a, indices, b=None, /, *, inplace=True):
    if inplace:
      raise NotImplementedError("jax.numpy.ufunc.at: inplace=True is not supported; "
                                "use inplace=False")
    if self._at is not None:
      return self._at(a, indices, b)
    a = _arr(a)
    cur = a[indices]
    new = self(cur) if b is None else self(cur, b)
    return a.at[indices].set(new)

  def reduceat(self, a, indices, axis=0, dtype=None, out=None):
    if hasattr(self, "_reduceat"):
      return self._reduceat(a, indices, axis=axis, dtype=dtype)
    raise NotImplementedError(f"{self.__name__}.reduceat")


def frompyfunc(func, /, nin, nout, *, identity=None):
  return ufunc(func, nin, nout, identity=identity)


# ---- arrays and indices ---------------------------------------------------------------------

def diagflat(v, k=0):
  """One scatter into the flattened square, as JAX (no `_diag` jit)."""
  check_arraylike("diagflat", v)
  v = lnp.ravel(_arr(v))
  n = v.shape[0] + abs(k)
  offset = k if k >= 0 else -k * n
  idx = creation.arange(v.shape[0]) * (n + 1) + offset
  return creation.zeros(n * n, v.dtype).at[idx].set(v).reshape(n, n)


def fill_diagonal(a, val, wrap=False, *, inplace=True):
  if inplace:
    raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
  if wrap:
    raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
  check_arraylike("fill_diagonal", a, val)
  a = _arr(a)
  if a.ndim < 2:
    raise ValueError("array must be at least 2-d")
  if a.ndim > 2 and not all(n == a.shape[0] for n in a.shape[1:]):
    raise ValueError("All dimensions of input must be of equal length")
  n = min(a.shape)
  idx = creation.arange(n)
  val = lnp.ravel(_arr(val).astype(a.dtype))
  val = shape_ops.tile(val, -(-n // max(val.shape[0], 1)))[:n] if val.shape[0] else val
  return a.at[(idx,) * a.ndim].set(val)


def mask_indices(n, mask_func, k=0, *, size=None):
  from jaxlite._src.numpy.setops import nonzero
  return nonzero(mask_func(creation.ones((n, n)), k), size=size)


def trim_zeros(filt, trim="fb"):
  check_arraylike("trim_zeros", filt)
  filt = _arr(filt)
  if filt.ndim != 1:
    raise TypeError(f"trim_zeros requires 1D input; got {filt.ndim=}")
  nz = np.flatnonzero(np.asarray(filt) != 0)  # concrete, like JAX
  if nz.size == 0:
    return filt[:0]
  start = nz[0] if "f" in trim.lower() else 0
  end = nz[-1] + 1 if "b" in trim.lower() else filt.shape[0]
  return filt[int(start):int(end)]


def sort_complex(a):
  check_arraylike("sort_complex", a)
  return _sort_complex(_arr(a))


@internal_jit(name="sort_complex")
def _sort_complex(a):
  a = sorting.sort(a)
  dt = dtypes.canonicalize_dtype(np.result_type(a.dtype, np.complex64))
  return a.astype(dt)


class _IndexGrid:
  def __init__(self, sparse):
    self.sparse = sparse

  def __getitem__(self, key):
    single = isinstance(key, slice)
    keys = (key,) if single else tuple(key)
    axes = []
    for s in keys:
      start = 0 if s.start is None else s.start
      step = 1 if s.step is None else s.step
      if isinstance(step, complex):
        axes.append(creation.linspace(start, s.stop, int(abs(step))))
      else:
        axes.append(creation.arange(start, s.stop, step))
    if single:
      return axes[0]
    axes = promote_dtypes(*axes)
    grids = creation.meshgrid(*axes, indexing="ij", sparse=self.sparse)
    return list(grids) if self.sparse else shape_ops.stack(grids, 0)


mgrid = _IndexGrid(sparse=False)
ogrid = _IndexGrid(sparse=True)
s_ = np.s_
index_exp = np.index_exp


def einsum_path(subscripts, *operands, optimize="auto"):
  """NumPy's contraction path on stand-in arrays of the operands' shapes (JAX uses opt_einsum)."""
  stand_ins = [np.empty(np.shape(o), np.float32) for o in operands]
  if optimize is True or optimize == "auto":
    optimize = "greedy"
  return np.einsum_path(subscripts, *stand_ins, optimize=optimize)


# ---- printing and files -----------------------------------------------------------------------

def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
  return np.array_repr(arr, max_line_width, precision, suppress_small)


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
  return np.array_str(np.asarray(a), max_line_width, precision, suppress_small)


get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
printoptions = np.printoptions
save = np.save
savez = np.savez


def load(file, *args, **kwargs):
  out = np.load(file, *args, **kwargs)
  if isinstance(out, np.ndarray):
    if out.dtype == np.object_:
      raise ValueError("object arrays cannot be loaded when allow_pickle=False")
    return creation.asarray(out)
  return out


# ---- scalar type aliases ----------------------------------------------------------------------

single = scalar_types.float32
double = scalar_types.float64
csingle = scalar_types.complex64
cdouble = scalar_types.complex128
character = np.character
flexible = np.flexible
object_ = np.object_
