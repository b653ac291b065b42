"""Documented fuzzer differences between jaxlite and JAX: only JAX bugs and backend-dependent
behaviour, each with its reason. tools/fuzz.py marks a mismatch matching an entry as known."""
from __future__ import annotations

import dataclasses
import re


@dataclasses.dataclass(frozen=True)
class Known:
  name: str
  reason: str
  modes: tuple = ()          # empty: any mode
  kinds: tuple = ()          # empty: any mismatch kind
  program: str = ""          # regex searched in the one-line program
  detail: str = ""           # regex searched in the mismatch description

  def matches(self, mode: str, kind: str, detail: str, program: str) -> bool:
    return ((not self.modes or mode in self.modes) and (not self.kinds or kind in self.kinds)
            and re.search(self.program, program) is not None
            and re.search(self.detail, detail) is not None)


KNOWN: list[Known] = [
  Known("xla-cpu-flushes-subnormals", "backend-dependent: XLA's CPU backend runs with "
        "subnormal floats flushed to zero (JAX 0.10.2 on CPU: jnp.float32(1e-40) * 1 == 0, "
        "jnp.sqrt of bfloat16/float32 1e-40 is 0, true value 1e-20); jaxlite computes with "
        "NumPy's IEEE subnormals. Only programs with the generator's subnormal input 1e-40 "
        "match (for a vmap mismatch, in either batch row: tools/fuzz.py matches vmap against "
        "both), or with nextafter, whose step from 0 is the least subnormal (JAX: "
        "`jnp.nextafter(jnp.float32(0), 1) > 0` is False); a boolean mask of such a value "
        "changes the shape too",
        kinds=("value", "shape"), program=r"\b1e-40\b|\bnextafter\("),
  Known("xla-nan-sign", "backend-dependent: the sign bit of a NaN an op produces is the "
        "implementation's (XLA:CPU's float64 log gives +NaN, its float32 log and NumPy's give "
        "-NaN), and lax.top_k orders floats by their bits' total order (-NaN lowest, +NaN "
        "highest), so where NaNs made by log/log2/sqrt/power/arcsin... reach top_k the order "
        "can differ; jaxlite's top_k orders the same bits as XLA's does "
        "(test_top_k_orders_floats_by_their_bits_total_order)",
        kinds=("value",),
        program=r"\b(log\w*|sqrt|power|arc\w+|sin|cos|tan)\(.*lax\.top_k"),
  Known("jax-scatter-extremal-clip-grad", "JAX bug: the JVP of `.at[].min/.max(..., "
        "mode='clip')` with an out-of-range index ignores the clipping: JAX's value applies "
        "the update to the clipped position (x=[-3.], x.at[[3, 3]].max(2.5, mode='clip') is "
        "[2.5]) but its gradient with respect to x is 1 and its JVP tangent NaN, as if nothing "
        "had been updated; in bounds (index 0) JAX's gradient is 0, as jaxlite's is with clip",
        modes=("grad",), kinds=("value",),
        program=r"\.at\[.*?\]\.(min|max)\([^;]*mode='clip'"),
  Known("jax-vmap-assertion", "JAX bug: some invalid programs (lax.cumsum with a negative axis) "
        "under vmap fail an internal `AssertionError` instead of raising the user-facing error "
        "they raise eagerly; jaxlite's class is compared in the eager and jit modes instead",
        modes=("vmap",), kinds=("error-class",), detail="^JAX AssertionError"),
  Known("jax-axis-tuple-index", "JAX accident: argmax/argmin/nanargmax (and mean/var/std "
        "without `where`) size the reduction with a.shape[axis] before checking the axis, so an "
        "out-of-range axis (any axis of a 0-d array) leaks `IndexError: tuple index out of "
        "range`; jaxlite raises the ValueError naming the axis that JAX's other reductions raise "
        "(the policy of tests/test_bad_input.py's JAX_DIFFERS, row standardize-axis)",
        kinds=("error-class",), program=r"(\.(nan)?(arg(max|min)|mean|var|std)|standardize)\(",
        detail=r"^JAX IndexError: tuple index out of range \| jaxlite ValueError"),
  Known("xla-jit-precision", "backend-dependent: XLA rewrites a jitted program's float "
        "arithmetic (it drops bfloat16/float16 round trips between float32 ops, keeping excess "
        "precision, and contracts multiply-adds), so JAX's jit result leaves JAX's own eager "
        "result (`jax.random.normal(k, (3, 1), jnp.bfloat16) + float16(1.5)` is 2.9361572 under "
        "jit, 2.9375 eagerly). Only matched when jaxlite's jit equals JAX's eager answer",
        modes=("jit",), kinds=("value",), detail=r"^JAX's jit differs from JAX's eager"),
  Known("jax-exp2-precision", "JAX bug: jnp.exp2 is lowered as exp(x * log(2)) with the product "
        "rounded in the operand's dtype, so large arguments lose precision (bfloat16 exp2(100) "
        "is 9.26e29, 2**100 = 1.27e30; float32 exp2(127.) is 14 ulp high); jaxlite computes "
        "2**x within an ulp (tests/test_differential.py::test_jax_bug_exp2_loses_precision)",
        kinds=("value",), program=r"exp2\("),
  Known("xla-mul-by-bool-select", "backend-dependent: XLA's algebraic simplifier rewrites a "
        "product with a converted boolean, `x * convert(b)`, into `select(b, x, 0)`, so NaN or "
        "inf times False is 0 where it survives (every eager op; jitted programs where the "
        "predicate is not folded to a constant first): JAX eager `float('nan') * "
        "jnp.asarray(False)` is 0.0, JAX's jit of `nan * (x != x)` for an integer x NaN (XLA "
        "folds the comparison first); jaxlite computes the select in every mode "
        "(test_mul_by_bool_documented_difference)",
        kinds=("value",), program=r"float\('(nan|inf)'\) \* v\d|v\d \* float\('(nan|inf)'\)",
        detail=r"jax np\.float64\((0\.0|nan)\) jaxlite np\.float64\((nan|0\.0)\)|"
               r"values differ \(exact\)$"),
  Known("jax-reshape-unchecked-size", "JAX bug: lax.reshape to a different total size is not "
        "checked when traced (make_jaxpr of `lax.reshape(f32[3], (4,))` succeeds) and fails only "
        "when XLA lowers it (`ValueError: Cannot lower jaxpr with verifier errors`); jaxlite "
        "raises JAX's documented TypeError ('reshape total size must be unchanged') as it traces",
        kinds=("error-class", "unexpected-error"), program=r"lax\.reshape\(",
        detail=r"Cannot lower jaxpr with verifier errors|jaxlite raised TypeError: reshape total"),
  Known("xla-cpu-no-half-linalg", "backend-dependent: JAX's CPU linear algebra (LAPACK) has no "
        "float16/bfloat16 kernels, so svd-based norms (ord=2, -2, 'nuc'), eigh and friends "
        "raise NotImplementedError('Unsupported dtype float16'); jaxlite computes them in "
        "float32 and rounds to the input's dtype. In a grad-only run the same eager error "
        "shows as a grad-skip (tools/fuzz.py names the eager error in its detail); where a "
        "later op of the program fails in jaxlite, as an error-class difference",
        kinds=("missing-error", "grad-skip", "error-class"),
        detail=r"Unsupported dtype (float16|bfloat16)"),
  Known("jax-digamma-precision", "JAX bug: lax.digamma loses precision in float32 near its "
        "root at 1.4616 (digamma(1.5) is 0.036490083 in JAX, 0.036489975 in jaxlite; mpmath "
        "0.0364899740): ~23 ulp, beyond the transcendental tolerance",
        kinds=("value",), program=r"digamma\("),
  Known("jax-lgamma-precision", "JAX bug: lax.lgamma loses precision in float32 between its "
        "roots at 1 and 2 (campaign 9, seed 321: lgamma(1.5) is -0.1207819 in JAX, -0.12078224 in "
        "jaxlite; mpmath -0.1207822376): 45 ulp, beyond the transcendental tolerance; "
        "jaxlite's is within half an ulp",
        kinds=("value",), program=r"(lgamma|gammaln)\("),
  Known("jax-platform-dependent-diagonal", "backend-dependent staging: JAX stages jnp.diagonal "
        "of a square 2-D non-bool matrix at offset 0 as lax.platform_dependent (a "
        "platform_index and a cond whose branches_platforms are (('mosaic',), None): Mosaic's "
        "eye-mask sum or the default gather); jaxlite has one CPU backend and stages the "
        "default branch, the gather XLA:CPU keeps (values agree; "
        "test_square_diagonal_is_the_default_branch_of_jax_platform_dependent)",
        modes=("jaxpr",), kinds=("jaxpr-text",), program=r"jnp\.diagonal\(",
        detail=r"^jax: let jaxpr = \{ lambda ; \w+:\w+\[(\d+),\1\] \w+:\w+\[\1,\1\]"),
  Known("jax-float-cast-at-trace", "JAX bug: a float fill that does not fit an integer dtype "
        "(jnp.full_like(uint32, -1.5), full_like(int32, inf), full_like(uint8, 300.5)) is cast "
        "by NumPy when traced, so make_jaxpr shows NumPy's value (4294967295, -2147483648, 44) "
        "and JAX's jit returns it, while JAX's eager result is XLA's saturating conversion (0, "
        "2147483647, 255); jaxlite gives the eager value in every mode "
        "(test_out_of_range_float_fill_documented_difference). The same cast of a reduction's "
        "`initial` (jnp.max(uint16[0], initial=-1.0): JAX eager 0, jit 65535) is NumPy's in "
        "jaxlite, so there it is JAX's eager result that differs (local seed 412)",
        modes=("jaxpr", "jit"), kinds=("jaxpr-text", "value"),
        program=r"jnp\.full(_like)?\(",
        detail=r"^jax: .*\b-?\d+:[iu]\d+\[\]|^JAX's jit differs from JAX's eager"),
  Known("jax-float-cast-at-trace-initial", "JAX bug (as jax-float-cast-at-trace): a negative "
        "float `initial` of an unsigned reduction (max/min, sum, prod; JAX's nan reductions "
        "take it as a jit operand, saturated in both of its modes, as jaxlite's since campaign "
        "14) is NumPy's wrapped value in JAX's jit and in jaxlite, XLA's saturated 0 in JAX's "
        "eager run (campaign 14, seed 2663: jnp.prod(uint8[0, 3], axis=0, initial=-1.0) is "
        "[0, 0, 0] in JAX's eager run and [4294967295, ...] under its jit; "
        "test_reduction_initial_cast_documented_difference)",
        modes=("eager", "vmap"), kinds=("value",),
        program=r"\.(max|min|amax|amin|sum|prod)\(.*initial=-\d.*uint"),
  Known("xla-half-logistic-rounding", "backend-dependent: XLA:CPU's bfloat16/float16 logistic "
        "is not correctly rounded (bfloat16 sigmoid(2.0) is 0.8828125, sigmoid(4.0) 0.984375; "
        "the correctly rounded values of 0.88079708 and 0.98201379 are 0.87890625 and "
        "0.98046875); jaxlite computes it in float32 and rounds once, so a half-precision "
        "sigmoid/silu can differ by an ulp, more after a gradient scales it "
        "(test_half_logistic_documented_difference)",
        kinds=("value",), program=r"(nn\.(sigmoid|silu|swish|log_sigmoid|glu|hard_swish)|"
        r"lax\.logistic)\(.*(bfloat16|float16)|(bfloat16|float16).*(nn\.(sigmoid|silu|swish|"
        r"log_sigmoid|glu)|lax\.logistic)\("),
  Known("jax-frexp-jvp-exp2", "JAX bug (as jax-exp2-precision): the JVP of jnp.frexp, and so "
        "of jnp.ldexp, which JAX builds on frexp, scales the tangent by exp2(-exponent), and "
        "JAX's exp2 is inexact in half precision even at integers (float16 exp2(3.0) is "
        "8.0078125, exp2(10.0) 1026); the gradient of ldexp(float16(0.1), 3) is 8.0078125 in "
        "JAX, exactly 8 in jaxlite (campaign 11, grad seed 687; "
        "test_frexp_jvp_exp2_documented_difference)",
        modes=("grad",), kinds=("value",), program=r"\b(ldexp|frexp)\("),
  Known("jax-clamp-scalar-bound-grad", "JAX bug: lax.clamp accepts scalar bounds around an "
        "array operand, but the JVP of a scalar bound selects between the scalar's tangent and "
        "the operand-shaped zeros, so the gradient with respect to a bound fails (`TypeError: "
        "select cases must have the same shapes, got [(1, 1), ()]`); jaxlite returns it (the "
        "sum over the positions the bound clamps: campaign 11, grad seed 707; "
        "test_clamp_scalar_bound_grad_documented_difference)",
        modes=("grad",), kinds=("missing-error",), program=r"lax\.clamp\(",
        detail=r"^JAX raised TypeError: select cases must have the same shapes"),
]
