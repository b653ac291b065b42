"""`jax.profiler`: Chrome/Perfetto JSON traces of jit work and annotations (see _src/profiler)."""
from jaxlite._src.base.profiler import (  # noqa: F401
    ProfileOptions, StepTraceAnnotation, TraceAnnotation, annotate_function, start_trace,
    stop_trace, trace)
from jaxlite._src.transforms.memory_profile import (  # noqa: F401,E402
    device_memory_profile, save_device_memory_profile)
