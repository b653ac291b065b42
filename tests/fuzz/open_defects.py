"""jaxlite defects the fuzzer found that are reported for fixing (RELIABILITY.md) but not yet fixed.

Not documented differences: each entry is deleted when its fix lands. tests/fuzz/test_fuzz.py
xfails (never passes) a seeded run whose only mismatches match these entries.
"""
from __future__ import annotations

from known_differences import Known

OPEN: list[Known] = [
  # campaign 4's three open rows (jaxpr-fill-get-empty-constant, stack-weak-bool,
  # asarray-float-int-overflow) are fixed: tests/test_fuzz_regressions_campaign5.py
  # Campaign 6's rows: fixed in campaign 9, the last (wrapper-staging) in campaign 10
  # (tests/test_fuzz_regressions_campaign9.py, tests/test_fuzz_regressions_campaign10.py).
]
