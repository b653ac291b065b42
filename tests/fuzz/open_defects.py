"""jaxlite defects the fuzzer found that are reported for fixing (RELIABILITY.md) but not yet fixed.

Not documented differences: each entry is deleted when its fix lands. tests/fuzz/test_fuzz.py
xfails (never passes) a seeded run whose only mismatches match these entries.
"""
from __future__ import annotations

from known_differences import Known

OPEN: list[Known] = [
  Known("lax-cumulative-negative-axis", "lax.cumsum/cumprod/cummax/cummin accept a negative axis "
        "where JAX raises ValueError (XLA operations do not allow negative axes)",
        kinds=("missing-error",), detail="negative axes"),
  Known("late-ml_dtypes", "bfloat16 arrays are rejected (`neg/pow/reduce_sum does not accept "
        "dtype bfloat16`) when ml_dtypes is imported after jaxlite's dtype lattice was built",
        detail="does not accept dtype bfloat16"),
  Known("jaxpr-array-constants", "make_jaxpr inlines array constants (jnp.array([...]) inside "
        "the function) where JAX lifts them to constvars (`{ lambda a:i32[2]; ...`)",
        modes=("jaxpr",), kinds=("jaxpr-text",), detail=r"jax: \{ lambda [a-z]+:"),
  Known("jaxpr-custom-jvp", "jnp.logaddexp is not a custom_jvp_call in jaxlite's jaxpr",
        modes=("jaxpr",), kinds=("jaxpr-text",), detail="custom_jvp_call"),
]
