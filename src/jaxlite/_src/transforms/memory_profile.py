"""`jax.profiler.device_memory_profile`: the live arrays as a gzipped pprof profile (the
format `pprof` and JAX write), encoded here with a minimal protobuf writer."""
from __future__ import annotations

import gzip


def _varint(n: int) -> bytes:
  out = bytearray()
  n &= (1 << 64) - 1  # int64 fields are written as their two's complement
  while True:
    byte = n & 0x7F
    n >>= 7
    if n:
      out.append(byte | 0x80)
    else:
      out.append(byte)
      return bytes(out)


def _field(num: int, value) -> bytes:
  """One protobuf field: an int as a varint (wire type 0), bytes/str length-delimited (2)."""
  if isinstance(value, int):
    return _varint(num << 3) + _varint(value)
  if isinstance(value, str):
    value = value.encode()
  return _varint(num << 3 | 2) + _varint(len(value)) + value


def _packed(num: int, values) -> bytes:
  return _field(num, b"".join(_varint(v) for v in values))


class _Strings:
  """pprof's string table: index 0 is the empty string."""

  def __init__(self):
    self.table, self.index = [""], {"": 0}

  def __call__(self, s: str) -> int:
    if s not in self.index:
      self.index[s] = len(self.table)
      self.table.append(s)
    return self.index[s]


def device_memory_profile(backend: str | None = None) -> bytes:
  """A gzipped pprof `Profile` of the live arrays: sample types (allocations, count) and
  (space, bytes), one sample per array labelled kind=buffer and device=cpu:0. jaxlite keeps no
  allocation stacks, so each sample's one-frame "stack" names the array's type (f32[3,4]):
  `pprof -top` then totals memory by shape and dtype."""
  from jaxlite._src.transforms.api_extras import live_arrays
  if backend not in (None, "cpu"):
    raise ValueError(f"device_memory_profile: unknown backend {backend!r}; jaxlite has 'cpu'")
  s = _Strings()
  sample_types = [(s("allocations"), s("count")), (s("space"), s("bytes"))]
  kind, buffer, device, cpu0 = s("kind"), s("buffer"), s("device"), s("cpu:0")
  functions: dict[str, int] = {}
  samples = []
  for arr in live_arrays():
    name = arr.aval.str_short(short_dtypes=True)
    fid = functions.setdefault(name, len(functions) + 1)
    samples.append((fid, int(arr.nbytes)))
  body = b"".join(_field(1, _field(1, t) + _field(2, u)) for t, u in sample_types)
  for fid, nbytes in samples:
    labels = _field(3, _field(1, kind) + _field(2, buffer)) + \
        _field(3, _field(1, device) + _field(2, cpu0))
    body += _field(2, _packed(1, [fid]) + _packed(2, [1, nbytes]) + labels)
  for name, fid in functions.items():
    # location id = function id: one line in one function per distinct array type
    body += _field(4, _field(1, fid) + _field(4, _field(1, fid)))
    body += _field(5, _field(1, fid) + _field(2, s(name)) + _field(3, s(name)))
  body += b"".join(_field(6, t) for t in s.table)
  return gzip.compress(body)


def save_device_memory_profile(filename, backend: str | None = None) -> None:
  """Writes `device_memory_profile(backend)` to `filename` (open it with `pprof`)."""
  data = device_memory_profile(backend)
  with open(filename, "wb") as f:
    f.write(data)
