"""SPMD execution on one host: the per-device worker runtime (runtime.py) that shard_map, pmap
and partitioned jit run their per-device programs on."""
