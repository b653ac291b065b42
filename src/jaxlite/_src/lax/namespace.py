"""The names `jaxlite.lax` exports, gathered from the primitive modules."""
import importlib as _importlib

from jaxlite._src.lax.elementwise_functions import (  # noqa: F401
    neg, sign, floor, ceil, is_finite, exp, exp2, log, log1p, expm1, tanh, logistic, sin, cos,
    tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, sqrt, rsqrt, cbrt, abs, bitwise_not,
    population_count, clz, real, imag, conj, square, round, RoundingMethod, integer_pow, add,
    sub, mul, div, rem, pow, max, min, atan2, nextafter, bitwise_and, bitwise_or, bitwise_xor,
    shift_left, shift_right_arithmetic, shift_right_logical, eq, ne, lt, le, gt, ge, complex,
    mulhi, convert_element_type, bitcast_convert_type, reduce_precision, select_n, select,
    clamp)
from jaxlite._src.lax.elementwise_functions import bitwise_not as not_  # noqa: F401
from jaxlite._src.lax.elementwise_functions import (  # noqa: F401
    bitwise_and as and_,
    bitwise_or as or_,
)
from jaxlite._src.lax.elementwise_functions import bitwise_xor as xor  # noqa: F401
from jaxlite._src.lax.shape import (  # noqa: F401
    broadcast_in_dim_p, reshape_p, squeeze_p, transpose_p)
from jaxlite._src.lax.elementwise import (  # noqa: F401
    add_p, sub_p, mul_p, div_p, neg_p, exp_p, log_p, sin_p, cos_p, select_n_p)
from jaxlite._src.lax.casts import (  # noqa: F401
    bitcast_convert_type_p, convert_element_type_p, reduce_precision_p)
from jaxlite._src.lax.reductions import (  # noqa: F401
    reduce, reduce_sum, reduce_prod, reduce_max, reduce_min, reduce_and, reduce_or, reduce_xor,
    argmax, argmin, cumsum, cumprod, cummax, cummin, cumlogsumexp, reduce_p, reduce_sum_p,
    reduce_prod_p, reduce_max_p, reduce_min_p, reduce_and_p, reduce_or_p, reduce_xor_p,
    argmax_p, argmin_p, cumsum_p, cumprod_p, cummax_p, cummin_p, cumlogsumexp_p)
from jaxlite._src.lax.dot import (  # noqa: F401
    Precision, dot, dot_general, batch_matmul, dot_general_p)
from jaxlite._src.lax.sort import sort, sort_key_val, top_k, sort_p, top_k_p  # noqa: F401
from jaxlite._src.rng import prng_lowering as _prng_lowering  # noqa: F401 - keys' XLA rules
from jaxlite._src.lax.creation import iota, broadcasted_iota, iota_p  # noqa: F401
from jaxlite._src.lax.special import (  # noqa: F401
    erf, erfc, erf_inv, lgamma, digamma, igamma, igammac, bessel_i0e, bessel_i1e, erf_p,
    erfc_p, erf_inv_p, lgamma_p, digamma_p, igamma_p, igammac_p, bessel_i0e_p, bessel_i1e_p,
    zeta, polygamma, igamma_grad_a, random_gamma_grad, betainc, zeta_p, polygamma_p,
    igamma_grad_a_p)
from jaxlite._src.lax.elementwise import (  # noqa: F401
    abs_p, acos_p, acosh_p, and_p, asin_p, asinh_p, atan2_p, atan_p, atanh_p,
    cbrt_p, ceil_p, clamp_p, clz_p, complex_p, conj_p, cosh_p, eq_p,
    exp2_p, expm1_p, floor_p, ge_p, gt_p, imag_p, integer_pow_p, is_finite_p, le_p, log1p_p,
    logistic_p, lt_p, max_p, min_p, mulhi_p, ne_p, nextafter_p, not_p, or_p,
    population_count_p, pow_p, real_p, rem_p, round_p, rsqrt_p, sign_p,
    shift_left_p, shift_right_arithmetic_p, shift_right_logical_p, sinh_p, sqrt_p, square_p,
    tan_p, tanh_p, xor_p)
from jaxlite._src.interpreters.ad import stop_gradient_p  # noqa: F401
from jaxlite._src.sharding import rules as _sharding_rules
from jaxlite._src.lax.convenience import (  # noqa: F401
    full, full_like, empty, dtype, broadcast_shapes, broadcast_to_rank, broadcast_like,
    reciprocal, approx_max_k, approx_min_k, platform_dependent, composite, index_take,
    RandomAlgorithm,
    AccuracyMode, Tolerance, DotAlgorithm, DotAlgorithmPreset, DotDimensionNumbers,
    ConvGeneralDilatedDimensionNumbers, PrecisionLike)
from jaxlite._src.lax.barrier import optimization_barrier, optimization_barrier_p  # noqa: F401
from jaxlite._src.lax.conv_shapes import (  # noqa: F401
    conv_general_permutations, conv_shape_tuple, conv_general_shape_tuple,
    conv_transpose_shape_tuple, reduce_window_shape_tuple)

from jaxlite._src.lax.shape import (  # noqa: F401
    rev_p, pad_p, concatenate_p, split_p, stack_p, unstack_p, tile_p, expand_dims, pad,
    concatenate, rev, split, broadcast, broadcast_in_dim, reshape, squeeze, transpose, collapse,
    stack, unstack, tile)
from jaxlite._src.lax.slicing import (  # noqa: F401
    slice, slice_in_dim, index_in_dim, dynamic_slice, dynamic_slice_in_dim, dynamic_index_in_dim,
    dynamic_update_slice, dynamic_update_slice_in_dim, dynamic_update_index_in_dim, gather, scatter,
    scatter_add, scatter_mul, scatter_min, scatter_max, scatter_sub, scatter_apply)
from jaxlite._src.lax.slicing_primitives import (  # noqa: F401
    slice_p, dynamic_slice_p, dynamic_update_slice_p, gather_p, scatter_p, scatter_add_p,
    scatter_mul_p, scatter_min_p, scatter_max_p, scatter_sub_p)
from jaxlite._src.lax.gather_dnums import (  # noqa: F401
    GatherDimensionNumbers, ScatterDimensionNumbers, GatherScatterMode)
from jaxlite._src.lax.parallel import (  # noqa: F401
    psum, pmax, pmin, pmean, all_gather, axis_index, psum_p, pmax_p, pmin_p, all_gather_p,
    axis_index_p, axis_size)
from jaxlite._src.transforms.ad_api import stop_gradient  # noqa: F401,E402
from jaxlite._src.lax.windowed import (  # noqa: F401,E402
    conv_general_dilated, conv, conv_with_general_padding, conv_transpose,
    conv_dimension_numbers, ConvDimensionNumbers, reduce_window, conv_general_dilated_p,
    reduce_window_sum_p, reduce_window_max_p, reduce_window_min_p, reduce_window_p,
    padtype_to_pads)

# Names whose modules load on first use (`jaxlite.lax.__getattr__`), keeping import cheap.
LAZY_NAMES = {
    **dict.fromkeys(("cond", "switch", "while_loop", "fori_loop", "scan", "map",
                     "associative_scan", "cond_p", "while_p", "scan_p"),
                    "jaxlite._src.lax.control_flow"),
    **dict.fromkeys(("fft", "fft_p", "FftType"), "jaxlite._src.lax.fft"),
    "regularized_incomplete_beta_p": "jaxlite._src.lax.special",
    **dict.fromkeys(("custom_linear_solve", "custom_root"), "jaxlite._src.lax.custom_solvers"),
    **dict.fromkeys(("conv_general_dilated_patches", "conv_general_dilated_local", "ragged_dot",
                     "RaggedDotDimensionNumbers"), "jaxlite._src.lax.conv_patches"),
    "linalg": None,  # the jax.lax.linalg submodule
    **dict.fromkeys(("ppermute", "pshuffle", "all_to_all", "pswapaxes", "psum_scatter",
                     "pbroadcast", "pcast", "ppermute_p", "all_to_all_p"),
                    "jaxlite._src.lax.parallel_comm"),
    **dict.fromkeys(("with_sharding_constraint", "sharding_constraint_p"),
                    "jaxlite._src.sharding.propagation"),
    **dict.fromkeys(("create_token", "after_all", "create_token_p", "after_all_p", "dce_sink",
                     "dce_sink_p"), "jaxlite._src.lax.tokens"),
    **dict.fromkeys(("copy_p", "device_put_p", "stage", "stage_p", "eq_to_p", "le_to_p",
                     "lt_to_p", "shape_as_value"), "jaxlite._src.lax.identity_ops"),
    "approx_top_k_p": "jaxlite._src.lax.ann",
    **dict.fromkeys(("rng_bit_generator", "rng_bit_generator_p"),
                    "jaxlite._src.lax.rng_bit_generator"),
}
__all__ = [n for n in dir() if not n.startswith("_") and n != "LAZY_NAMES"]


def _load_sharding_rules():
  from jaxlite._src.sharding import rules_lax  # noqa: F401  (deferred: import speed)


_sharding_rules.register_lax_rules_loader(_load_sharding_rules)


def __getattr__(name):
  """The lazy names, for jaxlite's own modules that use this namespace as `lax` (the public
  `jaxlite.lax` resolves them the same way): loaded on first use."""
  if name not in LAZY_NAMES:
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
  module = LAZY_NAMES[name] or f"jaxlite._src.lax.{name}"
  loaded = _importlib.import_module(module)
  return loaded if LAZY_NAMES[name] is None else getattr(loaded, name)
