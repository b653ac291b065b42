"""`jaxlite.image` (`jax.image`): image resizing and scale-and-translate resampling."""
from jaxlite._src.libs.image import ResizeMethod, resize, scale_and_translate  # noqa: F401

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]
