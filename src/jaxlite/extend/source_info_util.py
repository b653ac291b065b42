"""`jax.extend.source_info_util`: where user code called an operation (frames, name stacks).

Thin re-exports of `jaxlite._src.base.source_info_util`.
"""
from jaxlite._src.base.source_info_util import (  # noqa: F401
    register_exclusion,
    NameStack,
    Frame,
    SourceInfo,
    FmaHint,
    new_source_info,
    current,
    current_name_stack,
    new_name_stack,
    summarize,
    extend_name_stack,
    set_name_stack,
    reset_name_stack,
    transform_name_stack,
    user_context,
)
