"""`jax.experimental.checkify`: functionalized run-time checks (see `_src/transforms/checkify.py`)."""
from jaxlite._src.transforms.checkify import (  # noqa: F401
    Error, ErrorCategory, all_checks, automatic_checks, check, check_error, checkify,
    JaxRuntimeError, debug_check, div_checks, float_checks, index_checks, init_error, nan_checks,
    user_checks)

__all__ = ["Error", "ErrorCategory", "JaxRuntimeError", "all_checks", "automatic_checks",
           "check", "check_error", "checkify", "debug_check", "div_checks", "float_checks",
           "index_checks", "init_error", "nan_checks", "user_checks"]
