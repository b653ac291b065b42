"""`jax._src.traceback_util`: the API-boundary decorator and frame exclusions libraries register.

jaxlite does not rewrite tracebacks, so `api_boundary` returns the function unchanged and the
exclusions are only recorded (and used by `jax.extend.source_info_util` to find user frames).
"""
from __future__ import annotations

_exclude_paths: list = []
# Told of each path registered: `jax.extend.source_info_util` keeps its own list and adds itself
# here at its import (this bottom module never imports the public one).
exclusion_listeners: list = []


def register_exclusion(path: str) -> None:
  _exclude_paths.append(path)
  for listener in exclusion_listeners:
    listener(path)


def include_frame(frame) -> bool:
  return not any(frame.f_code.co_filename.startswith(p) for p in _exclude_paths)


def api_boundary(fun=None, *, repro_api_name=None, repro_user_func=False):
  """Marks `fun` as a public entry point; tracebacks through it are left as they are."""
  if fun is None:
    return lambda f: f
  return fun
