"""Structured control flow: `cond`, `while` and `scan` primitives and the lax functions
(cond, switch, while_loop, fori_loop, scan, map, associative_scan) that trace Python into them.
"""
from jaxlite._src.lax.control_flow.conditionals import cond, cond_p, switch  # noqa: F401
from jaxlite._src.lax.control_flow.loops import (  # noqa: F401
    associative_scan,
    fori_loop,
    map,
    scan,
    scan_p,
    while_loop,
    while_p,
)
