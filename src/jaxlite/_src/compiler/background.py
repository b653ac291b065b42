"""The background compile thread that the tiers compiling hot code share (the native tier's numba
kernels, the XLA tier's programs): one daemon thread running jobs in order, so that at most one
compile at a time competes with the caller for the cores and the GIL.

A leaf module (no jaxlite imports). `COMPILER.pending` counts jobs queued or running: callers
that time their own calls skip timing while it is non-zero (compiling holds the GIL in long
stretches). A forked child gets an idle compiler of its own (reset in place: modules hold it).
"""
from __future__ import annotations

import os
import threading


class Compiler:
  """One daemon thread running compile jobs in order; `wait` blocks until it is idle."""

  def __init__(self):
    self.jobs = None  # a queue.Queue, made with the thread (queue loads only when needed)
    self.thread = None
    self.lock = threading.Lock()
    self.idle = threading.Condition(self.lock)
    self.pending = 0

  def submit(self, job) -> None:
    with self.lock:
      self.pending += 1
      if self.thread is None or not self.thread.is_alive():
        if self.jobs is None:
          import queue
          self.jobs = queue.Queue()
        self.thread = threading.Thread(target=self._loop, name="jaxlite-background-compile",
                                       daemon=True)
        self.thread.start()
    self.jobs.put(job)

  def _loop(self) -> None:
    while True:
      job = self.jobs.get()
      try:
        job()
      finally:
        with self.lock:
          self.pending -= 1
          self.idle.notify_all()

  def wait(self, timeout: float | None = None) -> bool:
    with self.lock:
      return self.idle.wait_for(lambda: self.pending == 0, timeout)


COMPILER = Compiler()


def wait(timeout: float | None = None) -> bool:
  """Blocks until every submitted background compile has finished; False on timeout."""
  return COMPILER.wait(timeout)


def _reset_in_child() -> None:
  # A forked child has no compile thread (and its parent's queue and locks may be mid-use); it
  # starts its own on its first hot program.
  COMPILER.__init__()


if hasattr(os, "register_at_fork"):
  os.register_at_fork(after_in_child=_reset_in_child)
