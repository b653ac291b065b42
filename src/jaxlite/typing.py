"""`jaxlite.typing`: annotations for array arguments (ArrayLike, DTypeLike)."""
from typing import Any, Union

import numpy as np

from jaxlite._src.base.core import Array

ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]
DTypeLike = Union[str, type, np.dtype, Any]

__all__ = ["Array", "ArrayLike", "DTypeLike"]
