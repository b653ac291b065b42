"""jaxlite defects the fuzzer found that are reported for fixing (RELIABILITY.md) but not yet fixed.

Not documented differences: each entry is deleted when its fix lands. tests/fuzz/test_fuzz.py
xfails (never passes) a seeded run whose only mismatches match these entries.
"""
from __future__ import annotations

from known_differences import Known

OPEN: list[Known] = [
  Known("jaxpr-array-constants", "make_jaxpr inlines array constants (jnp.array([...]) inside "
        "the function) where JAX lifts them to constvars (`{ lambda a:i32[2]; ...`)",
        modes=("jaxpr",), kinds=("jaxpr-text",), detail=r"jax: \{ lambda [a-z]+:"),
]
