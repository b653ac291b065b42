"""Transformations and their API: jit and its call path, grad/vjp/jvp, vmap, custom rules,
checkpointing, call primitives, callbacks and checkify.

See `_src/README.md` for the layout."""
