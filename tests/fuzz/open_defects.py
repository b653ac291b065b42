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
  Known("jaxpr-randint", "random.randint's jaxpr differs (JAX clamps with `max`, jaxlite "
        "converts with weak_type=True)", modes=("jaxpr",), detail=r"= max b[a-z] b[a-z]"),
  Known("jaxpr-inner-dtype-x64", "under x64 jnp.cbrt's inner jaxpr types a bf16 constant as f64",
        modes=("jaxpr",), kinds=("jaxpr-text",), detail=r"jaxpr=\{ lambda"),
  Known("jaxpr-nansum", "jnp.nansum's jaxpr differs (JAX converts, jaxlite selects first)",
        modes=("jaxpr",), program="nansum", detail="convert_element_type"),
  Known("jaxpr-einsum", "jnp.einsum's jaxpr differs: jaxlite converts operands before "
        "dot_general, JAX passes preferred_element_type", modes=("jaxpr",),
        program="einsum", detail="dot_general"),
]
