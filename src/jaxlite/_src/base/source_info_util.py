"""Where user code called an operation (frames, name stacks): `jax.extend.source_info_util`
(re-exported there) and JAX's `jax._src.source_info_util`.

jaxlite records no per-eqn source info yet; these report the calling user frame and keep
name stacks as plain tuples so that libraries (flax, equinox) that register exclusions run.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import sys
from typing import NamedTuple

from jaxlite._src.compat import traceback_util

_exclusions: list = []


def register_exclusion(path: str) -> None:
  """Frames from files under `path` are skipped when finding the user's frame."""
  _exclusions.append(path)


class NameStack(NamedTuple):
  stack: tuple = ()

  def extend(self, name) -> "NameStack":
    return NameStack(self.stack + ((name,) if isinstance(name, str) else tuple(name)))

  def wrap_name(self, name: str) -> str:
    return "/".join((*self.stack, name)) if self.stack else name

  def __str__(self):
    return "/".join(self.stack)


class Frame(NamedTuple):
  file_name: str
  function_name: str
  start_line: int
  start_column: int = 0
  end_line: int = 0
  end_column: int = 0


class SourceInfo(NamedTuple):
  traceback: tuple = ()
  name_stack: NameStack = NameStack()

  def replace(self, *, traceback=None, name_stack=None) -> "SourceInfo":
    return SourceInfo(self.traceback if traceback is None else traceback,
                      self.name_stack if name_stack is None else name_stack)


class FmaHint(SourceInfo):
  """The source info of an `add` whose `mul` operand the compiler contracts into one FMA, as
  XLA does (see `compiler/passes.fuse_marked_fma`); otherwise an ordinary SourceInfo."""


_name_stack = [NameStack()]


_stdlib = os.path.dirname(os.__file__)


def _user_frame():
  # The innermost frame outside jaxlite, the standard library and registered exclusions, with
  # the position of the call it is executing (as JAX's Frame: qualified function name, line,
  # column).
  pkg = sys.modules[__name__.partition(".")[0]].__path__[0]  # jaxlite's own files
  f = sys._getframe(2)
  while f is not None and (f.f_code.co_filename.startswith((pkg, _stdlib)) or
                           any(f.f_code.co_filename.startswith(p) for p in _exclusions)):
    f = f.f_back
  if f is None:
    return ()
  code = f.f_code
  line, end_line, col, end_col = f.f_lineno, 0, 0, 0
  if f.f_lasti >= 0 and hasattr(code, "co_positions"):
    pos = next(itertools.islice(code.co_positions(), f.f_lasti // 2, None), None)
    if pos is not None and pos[0] is not None:
      line, end_line, col, end_col = (v or 0 for v in pos)
  return (Frame(code.co_filename, getattr(code, "co_qualname", code.co_name), line, col,
                end_line, end_col),)


def new_source_info() -> SourceInfo:
  return SourceInfo((), NameStack())


def current() -> SourceInfo:
  return SourceInfo(_user_frame(), _name_stack[-1])


def current_name_stack() -> NameStack:
  return _name_stack[-1]


def new_name_stack(name: str = "") -> NameStack:
  return NameStack((name,) if name else ())


def _summarize_frame(f) -> str:
  col = f":{f.start_column}" if f.start_column else ""  # as JAX: no column 0
  return f"{f.file_name}:{f.start_line}{col} ({f.function_name})"


def summarize(source_info: SourceInfo, num_frames=1) -> str:
  frames = source_info.traceback[:num_frames]
  return "\n".join(_summarize_frame(f) for f in frames) or "unknown"


@contextlib.contextmanager
def extend_name_stack(name: str):
  _name_stack.append(_name_stack[-1].extend(name))
  try:
    yield _name_stack[-1]
  finally:
    _name_stack.pop()


@contextlib.contextmanager
def set_name_stack(name_stack: NameStack):
  _name_stack.append(name_stack)
  try:
    yield
  finally:
    _name_stack.pop()


@contextlib.contextmanager
def reset_name_stack():
  with set_name_stack(NameStack()):
    yield


@contextlib.contextmanager
def transform_name_stack(name: str):
  with extend_name_stack(f"{name}"):
    yield


@contextlib.contextmanager
def user_context(c, *, name_stack=None):
  if name_stack is None:
    yield
  else:
    with set_name_stack(name_stack):
      yield


for _path in traceback_util._exclude_paths:  # registered before this module was loaded
  register_exclusion(_path)
traceback_util.exclusion_listeners.append(register_exclusion)
