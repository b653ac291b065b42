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
  Known("wrapper-staging", "jnp wrappers whose jaxpr differs from JAX's while values agree "
        "(still open after campaign 9's fixes): ldexp (JAX: frexp's custom_jvp, pow and "
        "where; jaxlite: a floor_divide jit and exp2), frexp/i0 (JAX's own jits or "
        "custom_jvp), diagonal (JAX: a gather of iota indices, and a platform_dependent cond "
        "for square matrices; jaxlite: a strided slice), searchsorted and interp (JAX: a "
        "binary-search scan; jaxlite: compare-all counts), median/quantile (JAX: sorted "
        "gathers; jaxlite: one-hot sums), average of a weakly typed operand (JAX promotes a "
        "and weights together, weak, then casts; campaign 9 seed 302)",
        modes=("jaxpr",), kinds=("jaxpr-text",),
        program=r"jnp\.(ldexp|frexp|i0|diagonal|average|interp|searchsorted|"
                r"median|nanmedian|quantile|nanquantile|percentile|nanpercentile)\("),
]
