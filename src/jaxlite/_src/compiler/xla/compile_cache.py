"""The XLA backend's persistent compilation cache (`jax_compilation_cache_dir`).

An entry is keyed by the SHA-256 of the StableHLO text, jaxlib's version, the platform, the
device kind and the serialized compile options; its file holds a header, the SHA-256 of the
serialized executable and the executable. An entry whose digest or header does not match, or
that jaxlib fails to load, is compiled again (and rewritten), never run.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
import time

import numpy as np

from jaxlite._src.base import config
from jaxlite._src.base import dtypes
from jaxlite._src.compiler.xla import client as client_lib
from jaxlite._src.compiler.xla import lowering
from jaxlite._src.base.errors import JaxRuntimeError

_MAGIC = b"JAXLITE-XLA-CACHE-1\n"
stats = {"hits": 0, "misses": 0, "rejected": 0, "compiles": 0, "compile_secs": 0.0}


def cache_key(text: str, platform: str, device_kind: str, options_bytes: bytes) -> str:
  h = hashlib.sha256()
  for part in (text.encode(), client_lib.jaxlib_version().encode(), platform.encode(),
               device_kind.encode(), options_bytes):
    h.update(len(part).to_bytes(8, "little"))
    h.update(part)
  return h.hexdigest()


def _dir():
  d = config.config.jax_compilation_cache_dir
  if not d or not config.config.jax_enable_compilation_cache:
    return None
  return d


def compile_or_load(client, text: str, device, options, platform: str):
  """`device`: one XlaDevice, or a list of them (a sharded program's device assignment)."""
  xc = client_lib.xla_client()
  many = isinstance(device, (list, tuple))
  devices = xc.DeviceList(tuple(d.pjrt for d in device) if many else (device.pjrt,))
  if many:
    device = device[0] if len(device) == 1 else _Devices(device)
  callbacks = getattr(text, "host_callbacks", ())
  if callbacks:  # Python callbacks cannot be serialized: compiled every time, never cached
    return _compile_with_callbacks(client, text, devices, options, callbacks, device)
  d = _dir()
  path = None
  if d is not None:
    key = cache_key(text, platform, device.device_kind, options.SerializeAsString())
    path = os.path.join(d, f"jaxlite-{key}")
    loaded = _load(client, path, devices, options)
    if loaded is not None:
      stats["hits"] += 1
      return loaded
    stats["misses"] += 1
  t0 = time.perf_counter()
  try:
    loaded = client.compile_and_load(text.encode(), devices, options)
  except Exception as err:
    raise JaxRuntimeError(f"XLA compilation failed on {device!r}: {err}") from err
  dt = time.perf_counter() - t0
  stats["compiles"] += 1
  stats["compile_secs"] += dt
  if path is not None and dt >= config.config.jax_persistent_cache_min_compile_time_secs:
    _store(client, loaded, path)
  return loaded


class _Devices(list):
  """A sharded program's devices: their kind keys the cache; printed in error messages."""
  device_kind = property(lambda self: f"{self[0].device_kind} x{len(self)}")


def _compile_with_callbacks(client, text, devices, options, callbacks, device):
  """jaxlib takes host callbacks only with a parsed MLIR module, not module text. A callback
  reached by send/recv (`lowering.HostTransferCallback`, the TPU's) is handed over as jaxlib's
  send/recv callback object; the CPU and GPU custom calls' as the Python functions they index."""
  try:
    module = client_lib.parse_module(text)
    callbacks = [host_transfer_callback(client, c)
                 if isinstance(c, lowering.HostTransferCallback) else c for c in callbacks]
    loaded = client.compile_and_load(module, devices, options, host_callbacks=callbacks)
  except Exception as err:
    raise JaxRuntimeError(f"XLA compilation failed on {device!r}: {err}") from err
  stats["compiles"] += 1
  return loaded


def host_transfer_callback(client, callback):
  """jaxlib's callback object for `callback` (a `lowering.HostTransferCallback`): it runs the
  function when the program's sends arrive and answers on the receive channels."""
  xc = client_lib.xla_client()

  def shape(aval):
    dtype = np.dtype(aval.dtype)
    return xc.Shape.array_shape(np.dtype(np.bool_) if dtype == dtypes.float0 else dtype,
                                tuple(aval.shape))
  # (the serializer pickles the function only if the executable is serialized; jaxlite never
  # caches a module with callbacks, and jaxlib requires one)
  return client.make_python_callback_from_host_send_and_recv(
      callback.fn, [shape(a) for a in callback.operand_avals],
      [shape(a) for a in callback.result_avals], list(callback.send_channels),
      list(callback.recv_channels), pickle.dumps)


def _load(client, path, devices, options):
  try:
    with open(path, "rb") as f:
      blob = f.read()
  except OSError:
    return None
  head, digest, payload = blob[:len(_MAGIC)], blob[len(_MAGIC):len(_MAGIC) + 32], \
      blob[len(_MAGIC) + 32:]
  if head != _MAGIC or hashlib.sha256(payload).digest() != digest:
    stats["rejected"] += 1
    return None
  try:
    return client.deserialize_executable(payload, devices, options)
  except Exception:
    stats["rejected"] += 1
    return None


def _store(client, loaded, path) -> None:
  try:
    payload = client.serialize_executable(loaded)
  except Exception:  # a platform that cannot serialize: nothing cached
    return
  if len(payload) < config.config.jax_persistent_cache_min_entry_size_bytes:
    return
  d = os.path.dirname(path)
  os.makedirs(d, exist_ok=True)
  fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
  with os.fdopen(fd, "wb") as f:
    f.write(_MAGIC + hashlib.sha256(payload).digest() + payload)
  os.replace(tmp, path)  # atomic: a reader sees the old entry or the whole new one
