"""`jaxlite.dlpack` (JAX's `jax.dlpack`): Arrays from other libraries' DLPack tensors."""
from jaxlite._src.base.dlpack import from_dlpack, is_supported_dtype
