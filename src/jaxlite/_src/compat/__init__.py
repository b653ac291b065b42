"""Modules that exist for JAX libraries (they import these JAX-private names): thin adapters over
jaxlite's own machinery.

See `_src/README.md` for the layout."""
