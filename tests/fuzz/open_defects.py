"""jaxlite defects the fuzzer found that are reported for fixing (RELIABILITY.md) but not yet fixed.

Not documented differences: each entry is deleted when its fix lands. tests/fuzz/test_fuzz.py
xfails (never passes) a seeded run whose only mismatches match these entries.
"""
from __future__ import annotations

from known_differences import Known

OPEN: list[Known] = [
  # campaign 4's three open rows (jaxpr-fill-get-empty-constant, stack-weak-bool,
  # asarray-float-int-overflow) are fixed: tests/test_fuzz_regressions_campaign5.py
  # Campaign 6 (issue 33's wide families, tools/fuzz_wide.py, seeds 200-): open rows.
  Known("jnp-accepts-lists", "jaxlite's jnp shape functions (reshape, transpose, stack and "
        "concatenate elements, ...) convert a Python list where JAX's ensure_arraylike raises "
        "TypeError ('reshape requires ndarray or scalar arguments, got <class 'list'>'); with "
        "a None inside the list jaxlite then raises jnp.array's ValueError",
        kinds=("error-class", "missing-error"),
        detail=r"requires ndarray or scalar arguments, got <class 'list'>"),
  Known("einsum-non-array-operand", "jnp.einsum with a tuple operand: JAX first reads its shape "
        "(ValueError on the subscripts), jaxlite checks it is an array (TypeError)",
        kinds=("error-class",), program=r"jnp\.einsum\(.*\(1, 'b'\)"),
  Known("asarray-str-dtype", "jnp.asarray('a', dtype=float32): JAX hands the string to NumPy "
        "(ValueError: could not convert string to float), jaxlite refuses it (TypeError)",
        kinds=("error-class",), program=r"jnp\.asarray\('a', dtype="),
  Known("tuple-times-tracer", "`(1, 'b') * tracer`: JAX's tracer declines the operator "
        "(TypeError: unsupported operand), jaxlite's is asked for __index__ by the sequence "
        "repeat and raises TracerIntegerConversionError",
        kinds=("error-class",), program=r"\(1, 'b'\) \* "),
  Known("wrapper-staging", "jnp/nn wrappers whose jaxpr differs from JAX's while values agree: "
        "ldexp (jaxlite stages a floor_divide jit), frexp/modf/spacing/i0 (JAX's own jits or "
        "custom_jvp), isclose/allclose of operands of different ranks (JAX broadcasts before it "
        "converts), diagonal, "
        "trace, interp, nan_to_num with an array fill, average's weak type, nanmean/nanstd, "
        "softmax/log_softmax/log_sigmoid/log1mexp of integers",
        modes=("jaxpr",), kinds=("jaxpr-text",),
        program=r"jnp\.(ldexp|frexp|modf|spacing|i0|isclose|allclose|diagonal|trace|interp|"
                r"nan_to_num|average|nanmean|nanstd|nanvar|median)\(|"
                r"nn\.(softmax|log_softmax|log_sigmoid|log1mexp)\("),
  Known("nan-to-num-array-fill", "jnp.nan_to_num(x, nan=array): JAX broadcasts an array fill "
        "(and raises its broadcasting ValueError where shapes disagree); jaxlite asks the fill "
        "for a Python float",
        program=r"jnp\.nan_to_num\([^)]*nan=[vx]\d"),
  Known("median-empty-keepdims", "jnp.median(x, axis, keepdims=True) of an array with a size-0 "
        "axis: jaxlite's reshape to (..., -1) fails on size 0 (TypeError) where JAX returns "
        "the empty result", kinds=("unexpected-error",),
        program=r"jnp\.median\(", detail=r"cannot reshape array of shape"),
  Known("str-in-array-data", "a string inside array data (`x.at[0].set((1, 'b'))`, "
        "`jnp.asarray((1, 'b'), dtype=float32)`): JAX hands it to NumPy's conversion "
        "(ValueError: invalid literal / could not convert string), jaxlite refuses the value "
        "(TypeError)", kinds=("error-class",), program=r"\(1, 'b'\)",
        detail=r"^JAX ValueError: (invalid literal|could not convert string)"),
  Known("x64-int-wrapper-dtypes", "under x64: jnp.searchsorted's index dtype (JAX int32), "
        "jnp.linalg.vector_norm and nn.standardize of unsigned integers (JAX float32 / "
        "float64 as it promotes) differ from jaxlite's",
        kinds=("dtype", "jaxpr-text"),
        program=r"(jnp\.(searchsorted|linalg\.vector_norm)\(|nn\.standardize\().*\[x64\]$"),
  Known("nn-integer-inputs", "nn.log_softmax/softmax/log1mexp of integer arrays: JAX applies "
        "its first ops in the integer dtype (x - max, -x: int16 -(-32768) wraps) before "
        "promoting, and keeps float32 under x64; jaxlite promotes first",
        kinds=("dtype", "value"), program=r"nn\.(log_softmax|softmax|log1mexp)\(x\d"),
]
