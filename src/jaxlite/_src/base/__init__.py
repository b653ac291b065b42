"""The bottom layer: the data model every other layer stands on (tracers, avals, jaxprs and
primitives; Arrays and their dtypes; devices, configuration, pytrees, errors).

See `_src/README.md` for the layout."""
