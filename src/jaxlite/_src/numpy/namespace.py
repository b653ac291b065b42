"""The names `jaxlite.numpy` exports, gathered from the jnp modules."""
import importlib as _importlib

import numpy as _np

from jaxlite._src.base import dtypes as _dtypes
from jaxlite._src.numpy import array_methods as _array_methods  # noqa: F401 - sets operators
from jaxlite._src.numpy.creation import user_array as array  # noqa: F401
from jaxlite._src.numpy.creation import user_asarray as asarray  # noqa: F401
from jaxlite._src.numpy.creation import (  # noqa: F401
    zeros, ones, full, empty, zeros_like, ones_like, full_like, empty_like)
from jaxlite._src.numpy.where_reshape import (  # noqa: F401
    where, reshape, ravel, transpose, permute_dims, matrix_transpose, squeeze, expand_dims,
    broadcast_to, broadcast_arrays, shape, ndim, size, result_type)
from jaxlite._src.numpy.ufuncs import (  # noqa: F401
    negative, positive, floor, ceil, exp, exp2, log, log1p, expm1, tanh, sin, cos, tan, arcsin,
    arccos, arctan, sinh, cosh, arcsinh, arccosh, arctanh, sqrt, cbrt, conjugate, conj, add,
    subtract, multiply, true_divide, divide, floor_divide, remainder, mod, fmod, divmod, power,
    pow, float_power, maximum, minimum, arctan2, nextafter, equal, not_equal, less, less_equal,
    greater, greater_equal, bitwise_and, bitwise_or, bitwise_xor, bitwise_not, bitwise_invert,
    invert, left_shift, right_shift, bitwise_left_shift, bitwise_right_shift, logical_and,
    logical_or, logical_xor, logical_not, absolute, abs, sign, square, reciprocal, isfinite,
    isnan, isinf, isposinf, isneginf, log2, log10, logaddexp, logaddexp2, deg2rad, rad2deg,
    radians, degrees, round, around, rint, trunc, real, imag, signbit, copysign, hypot,
    heaviside, fmax, fmin, sinc)
from jaxlite._src.numpy.scalar_types import (  # noqa: F401
    bool_, bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32,
    float64, complex64, complex128, int_, uint, float_, complex_, generic, number, integer,
    signedinteger, unsignedinteger, inexact, floating, complexfloating, dtype, finfo, iinfo,
    issubdtype, promote_types, can_cast, isdtype)
from jaxlite._src.numpy.reductions import (  # noqa: F401
    sum, prod, max, min, amax, amin, all, any, mean, var, std, argmax, argmin, cumsum, cumprod,
    cumulative_sum, cumulative_prod, nansum, nanprod, nanmax, nanmin, nanmean, nanvar, nanstd,
    nanargmax, nanargmin, count_nonzero, ptp, average)
from jaxlite._src.numpy.quantiles import (  # noqa: F401
    quantile, percentile, nanquantile, nanpercentile, median, nanmedian)
from jaxlite._src.numpy.creation import (  # noqa: F401
    arange, linspace, logspace, geomspace, eye, identity, tri, tril, triu, meshgrid, indices)
from jaxlite._src.numpy.sorting import (  # noqa: F401
    sort, argsort, lexsort, searchsorted, partition, argpartition, clip, isclose, allclose,
    array_equal, array_equiv)
from jaxlite._src.numpy.matmul import (  # noqa: F401
    matmul, dot, vdot, vecdot, inner, outer, tensordot, einsum, matvec, vecmat, kron, trace,
    diagonal, diag)

from jaxlite._src.numpy.indexing import take, take_along_axis  # noqa: F401
from jaxlite._src.numpy.shape_ops import (  # noqa: F401
    concatenate, concat, stack, hstack, vstack, dstack, column_stack, split, array_split, hsplit,
    vsplit, dsplit, unstack, tile, repeat, flip, fliplr, flipud, roll, rot90, pad, moveaxis,
    swapaxes, rollaxis, atleast_1d, atleast_2d, atleast_3d, append, insert, delete, resize, block)
from jaxlite._src.numpy.selection import (  # noqa: F401
    diag_indices, diag_indices_from, tril_indices, triu_indices, tril_indices_from,
    triu_indices_from, unravel_index, ravel_multi_index, select, piecewise, choose, compress,
    extract, put, put_along_axis, place, ix_, r_, c_)
from jaxlite._src.numpy.setops import (  # noqa: F401
    nonzero, flatnonzero, argwhere, unique, unique_values, unique_counts, unique_inverse,
    unique_all, union1d, intersect1d, setdiff1d, setxor1d, isin)

pi = _np.pi
e = _np.e
inf = _np.inf
nan = _np.nan
euler_gamma = _np.euler_gamma
newaxis = None
ndarray = __import__("jaxlite._src.base.core", fromlist=["Array"]).Array

# The jnp.fft and jnp.linalg submodules load on first use (`jaxlite.numpy.__getattr__`).
LAZY_SUBMODULES = ("fft", "linalg")
__all__ = [n for n in dir() if not n.startswith("_") and n != "LAZY_SUBMODULES"]
from jaxlite._src.numpy.elementwise_extra import (  # noqa: F401,E402
    acos, acosh, asin, asinh, atan, atan2, atanh, ComplexWarning, astype, copy, from_dlpack,
    broadcast_shapes, frexp, ldexp, modf, gcd, lcm, fabs, spacing, nan_to_num,
    nancumsum, nancumprod, angle, i0, iscomplex, isreal, iscomplexobj, isrealobj, isscalar,
    iterable)
from jaxlite._src.numpy.bits import packbits, unpackbits, bitwise_count  # noqa: F401,E402
from jaxlite._src.numpy.differences import (  # noqa: F401,E402
    diff, ediff1d, gradient, trapezoid, cross)
__all__ = [n for n in dir() if not n.startswith("_") and n != "LAZY_SUBMODULES"]
from jaxlite._src.numpy.polynomial import (  # noqa: F401,E402
    convolve, correlate, vander, polyval, polyadd, polysub, polymul, polydiv, polyder, polyint,
    poly, roots, polyfit)
__all__ = [n for n in dir() if not n.startswith("_") and n != "LAZY_SUBMODULES"]
from jaxlite._src.numpy.statistics import (  # noqa: F401,E402
    cov, corrcoef, bincount, digitize, interp, unwrap, histogram_bin_edges, histogram,
    histogramdd, histogram2d, bartlett, blackman, hamming, hanning, kaiser)
__all__ = [n for n in dir() if not n.startswith("_") and n != "LAZY_SUBMODULES"]
from jaxlite._src.numpy.grids_and_io import (  # noqa: F401,E402
    diagflat, fill_diagonal, mask_indices, trim_zeros, sort_complex, mgrid, ogrid, s_, index_exp,
    einsum_path, array_repr, array_str, get_printoptions, set_printoptions, printoptions, save,
    savez, load, single, double, csingle, cdouble, character, flexible, object_)
from jaxlite._src.numpy.functional import (  # noqa: F401,E402
    apply_along_axis, apply_over_axes, vectorize, ufunc, frompyfunc, fromfunction, frombuffer,
    fromiter, fromstring, fromfile)
__all__ = [n for n in dir() if not n.startswith("_") and n != "LAZY_SUBMODULES"]
from jaxlite._src.numpy.array_api_metadata import (  # noqa: F401,E402
    __array_api_version__, __array_namespace_info__)
__all__ = [n for n in dir() if not n.startswith("_") and n != "LAZY_SUBMODULES"]
__all__ += ["__array_api_version__", "__array_namespace_info__"]  # the standard's dunders


def __getattr__(name):
  """`linalg` and `fft`, for jaxlite's own modules that use this namespace as `jnp` (the public
  `jaxlite.numpy` loads its submodules the same way): loaded on first use."""
  if name in LAZY_SUBMODULES:
    return _importlib.import_module(f"jaxlite._src.numpy.{name}")
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
