"""`jax.debug`: printing and callbacks that run when the program runs, and a breakpoint.

`visualize_array_sharding`/`inspect_array_sharding` live in the sharding modules (visualize.py).
"""
from jaxlite._src.transforms.callbacks import debug_callback as callback  # noqa: F401
from jaxlite._src.transforms.callbacks import debug_log as log  # noqa: F401
from jaxlite._src.transforms.callbacks import debug_print as print  # noqa: F401,A001
from jaxlite._src.transforms.debugging import breakpoint  # noqa: F401,A001
from jaxlite._src.base.effects import DebugEffect, OrderedDebugEffect  # noqa: F401
from jaxlite._src.sharding.visualize import (  # noqa: F401
    inspect_array_sharding, visualize_array_sharding, visualize_sharding)

__all__ = ["DebugEffect", "OrderedDebugEffect", "breakpoint", "callback", "inspect_array_sharding",
           "log", "print", "visualize_array_sharding", "visualize_sharding"]
