"""jaxlite defects the fuzzer found that are reported for fixing (RELIABILITY.md) but not yet fixed.

Not documented differences: each entry is deleted when its fix lands. tests/fuzz/test_fuzz.py
xfails (never passes) a seeded run whose only mismatches match these entries.
"""
from __future__ import annotations

from known_differences import Known

OPEN: list[Known] = [
  # campaign 4 (RELIABILITY.md), found after its fixes; reported, not yet fixed
  Known("jaxpr-fill-get-empty-constant", "x.at[slice].get(mode='fill') stages an empty int32[0] "
        "index constant as a constvar where JAX's jaxpr has none", modes=("jaxpr",),
        kinds=("jaxpr-text",), program=r"\.get\(mode='fill'\)",
        detail=r"jaxlite: \{ lambda [a-z]+:i32\[0\]"),
  Known("stack-weak-bool", "jnp.stack/concatenate of weakly typed bools keep the weak type "
        "eagerly; JAX converts each operand to a strong bool first", kinds=("weak-type",),
        program=r"jnp\.(stack|concatenate|vstack|hstack)", detail=r"jax weak=False jaxlite weak=True"),
  Known("asarray-float-int-overflow", "jnp.asarray/array of a Python float outside an integer "
        "dtype's range saturates; JAX raises OverflowError ('Python integer 10000000000 out of "
        "bounds for int32'; inf: OverflowError, nan: ValueError)", kinds=("missing-error",),
        program=r"jnp\.(asarray|array)\(", detail=r"^JAX raised (OverflowError|ValueError)"),
]
