"""Parallelism over devices: pmap and shard_map (its checks, eager path, varying axes).

See `_src/README.md` for the layout."""
