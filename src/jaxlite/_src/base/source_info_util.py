"""Where user code called an operation (frames, name stacks): `jax.extend.source_info_util`
(re-exported there) and JAX's `jax._src.source_info_util`.

Eqns record frames only while `core.recording_source_info` is on (`print_saved_residuals`);
name stacks (`jax.named_scope`, `jax.named_call`) are recorded on every eqn staged inside one,
as JAX's `eqn.source_info.name_stack` (haiku's `jaxpr_info` groups eqns by it).
"""
from __future__ import annotations

import contextlib
import itertools
import os
import sys
from typing import NamedTuple

from jaxlite._src.base import core
from jaxlite._src.compat import traceback_util

_exclusions: list = []


def register_exclusion(path: str) -> None:
  """Frames from files under `path` are skipped when finding the user's frame."""
  _exclusions.append(path)


class Scope(NamedTuple):
  """A name on the stack (`named_scope`, `named_call`)."""
  name: str

  def wrap(self, names: list) -> None:
    names.append(self.name)


class Transform(NamedTuple):
  """A transformation on the stack (`jvp`, `transpose`): it wraps the name that follows it."""
  name: str

  def wrap(self, names: list) -> None:
    if names:
      names[-1] = f"{self.name}({names[-1]})"
    else:
      names.append(f"{self.name}()")


class NameStack:
  """The scopes and transformations an eqn was staged under; prints as JAX's:
  `transpose(jvp(model))/layer`."""
  __slots__ = ("stack",)

  def __init__(self, stack: tuple = ()):
    self.stack = tuple(Scope(e) if isinstance(e, str) else e for e in stack)

  def extend(self, name) -> "NameStack":
    names = (name,) if isinstance(name, str) else tuple(name)
    return NameStack(self.stack + tuple(Scope(n) for n in names))

  def transform(self, name: str) -> "NameStack":
    return NameStack(self.stack + (Transform(name),))

  def wrap_name(self, name: str) -> str:
    return f"{self}/{name}" if self.stack else name

  def __add__(self, other: "NameStack") -> "NameStack":
    return NameStack(self.stack + other.stack)

  def __getitem__(self, index: slice) -> "NameStack":
    return NameStack(self.stack[index])

  def __len__(self):
    return len(self.stack)

  def __eq__(self, other):
    return type(other) is NameStack and other.stack == self.stack

  def __hash__(self):
    return hash(self.stack)

  def __repr__(self):
    return f"NameStack(stack={self.stack!r})"

  def __str__(self):
    names: list = []
    for elem in reversed(self.stack):
      elem.wrap(names)
    return "/".join(reversed(names))


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


EMPTY_SOURCE_INFO = SourceInfo()
_EMPTY_STACK = NameStack()


def _stacks() -> list:
  # Per thread, as the scope that staging reads (core.source_info_state is thread-local).
  st = core.source_info_state
  stacks = st.name_stacks
  if stacks is None:
    stacks = st.name_stacks = [_EMPTY_STACK]
  return stacks


def push_name_stack(name_stack: NameStack):
  # Eqns staged from now on carry the stack (core.staged_source_info); none when it is empty.
  _stacks().append(name_stack)
  core.source_info_state.scope = SourceInfo((), name_stack) if name_stack.stack else None


def pop_name_stack():
  stacks = _stacks()
  stacks.pop()
  top = stacks[-1]
  core.source_info_state.scope = SourceInfo((), top) if top.stack else None


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
  return SourceInfo(_user_frame(), _stacks()[-1])


def current_name_stack() -> NameStack:
  return _stacks()[-1]


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
  push_name_stack(_stacks()[-1].extend(name))
  try:
    yield _stacks()[-1]
  finally:
    pop_name_stack()


@contextlib.contextmanager
def set_name_stack(name_stack: NameStack):
  push_name_stack(name_stack)
  try:
    yield
  finally:
    pop_name_stack()


@contextlib.contextmanager
def reset_name_stack():
  with set_name_stack(NameStack()):
    yield


@contextlib.contextmanager
def transform_name_stack(name: str):
  """Eqns staged inside carry `name(...)` around the names pushed after it (JAX's jvp,
  transpose)."""
  push_name_stack(_stacks()[-1].transform(name))
  try:
    yield
  finally:
    pop_name_stack()


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
