"""jnp's functional helpers (apply_along_axis, apply_over_axes, vectorize, ufunc, frompyfunc) and
the constructors from functions, buffers, iterables, strings and files.
"""
from __future__ import annotations

import functools

import numpy as np

from jaxlite._src.numpy import creation, scalar_types, shape_ops
from jaxlite._src.numpy import where_reshape as lnp
from jaxlite._src.numpy.grids_and_io import _arr


def _vmap():
  from jaxlite._src.transforms.vmap_api import vmap
  return vmap


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
    try:
      loop = np.broadcast_shapes(*loop_shapes) if loop_shapes else ()
    except ValueError:
      raise ValueError("Incompatible shapes for broadcasting: "
                       f"shapes={[tuple(s) for s in loop_shapes]}") from None
    # As JAX: no argument is broadcast to the loop shape. Size-1 loop dims are squeezed out and
    # each loop dim is a vmap over the arguments that have it (in_axes None for the others), so
    # a vector dotted with a stack of vectors stays one product (jnp.vecdot); a loop dim no
    # argument has is put back on the result.
    squeezed, padded = [], []
    for a, shape in zip(mapped, loop_shapes):
      ones = tuple(i for i, n in enumerate(shape) if n == 1)
      squeezed.append(lnp.squeeze(a, ones) if ones else a)
      padded.append((1,) * (len(loop) - len(shape)) + shape)
    f, expand = call, []
    for dim in range(len(loop) - 1, -1, -1):
      in_axes = tuple(None if shape[dim] == 1 else 0 for shape in padded)
      if all(ax is None for ax in in_axes):
        expand.append(dim)
      else:
        f = vmap(f, in_axes=in_axes)
    out = f(*squeezed)
    if not expand:
      return out
    grow = lambda r: lnp.expand_dims(r, tuple(sorted(expand)))
    return tuple(grow(r) for r in out) if isinstance(out, tuple) else grow(out)


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
    if out is not None:  # JAX's: results are new arrays
      raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
    if self._reduce is not None:
      return self._reduce(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial,
                          **({} if where is None else {"where": where}))
    a = _arr(a) if dtype is None else _arr(a).astype(dtype)
    keep = None if where is None else lnp.broadcast_to(_arr(where), a.shape)
    if axis is None:
      a, axis = lnp.ravel(a), 0
      keep = None if keep is None else lnp.ravel(keep)
    axis = axis % a.ndim
    moved = shape_ops.moveaxis(a, axis, 0)
    keep = None if keep is None else shape_ops.moveaxis(keep, axis, 0)
    if initial is None:
      initial = self.identity
    if moved.shape[0] == 0:
      if initial is None:
        raise ValueError(f"zero-size array to reduction operation {self.__name__} which has "
                         "no identity")
      acc = creation.full(moved.shape[1:], initial, a.dtype)
    else:
      # As JAX's: without an initial value the first element starts the fold, masked or not.
      first = 1 if initial is None else 0
      acc = moved[0] if initial is None else lnp.broadcast_to(
          _arr(initial).astype(a.dtype), moved.shape[1:])
      for i in range(first, moved.shape[0]):
        acc = self(acc, moved[i]) if keep is None else lnp.where(keep[i], self(acc, moved[i]),
                                                                 acc)
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
    """Segment j reduces a[indices[j]:indices[j+1]] along `axis` (just a[indices[j]] where
    that is empty), as NumPy's: each position i of the axis folds into the segments whose
    start < i < end, unrolled over the static axis length (indices may be traced)."""
    self._binary_scalar("reduceat")
    if self._reduceat is not None:
      return self._reduceat(a, indices, axis=axis, dtype=dtype)
    from jaxlite._src.numpy import indexing, ufuncs
    a, indices = _arr(a), _arr(indices)
    if a.ndim == 0:
      raise ValueError(f"reduceat: a must have 1 or more dimension, got {a.shape=}")
    if indices.ndim != 1:
      raise ValueError(f"reduceat: indices must be one-dimensional, got {indices.shape=}")
    if axis is None or isinstance(axis, (tuple, list)):
      raise ValueError("reduceat requires a single integer axis.")
    axis = int(axis) % a.ndim
    if dtype is not None:
      a = a.astype(dtype)
    out = indexing.take(a, indices, axis=axis)
    others = [d for d in range(out.ndim) if d != axis]
    bounds = lnp.expand_dims(shape_ops.append(indices, a.shape[axis]), others)
    start = shape_ops.moveaxis(bounds, axis, 0)[:-1]
    end = shape_ops.moveaxis(bounds, axis, 0)[1:]
    start, end = shape_ops.moveaxis(start, 0, axis), shape_ops.moveaxis(end, 0, axis)
    for i in range(a.shape[axis]):
      inside = ufuncs.logical_and(start < i, end > i)
      out = lnp.where(inside, self(out, indexing.take(a, creation.asarray([i]), axis=axis)),
                      out)
    return out


def frompyfunc(func, /, nin, nout, *, identity=None):
  return ufunc(func, nin, nout, identity=identity)
