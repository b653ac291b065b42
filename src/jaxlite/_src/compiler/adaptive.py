"""Tier 1's timed choices: which of a few ways to run something is fastest on this machine now.

Tiled kernels choose whole, tiled or pooled (tiled_executor), scan loops hoisted or plain and
pipelined or not (scan_hoist.AdaptiveLoop), programs with big matrix products their BLAS thread
count (blas.AdaptiveThreads). The answer depends on the caches and on whether a second core is
free, which the program cannot know when it compiles; so each times its calls.
"""
from __future__ import annotations

import os

# Env JAXLITE_TIER1_ADAPT=0 turns the timing off: each then runs its first mode (tiled kernels:
# tiles, pooled where threads exist). Otherwise a chooser runs the first PROBES calls of each
# mode in turn, then the mode with the fastest median probe, trying another mode after REPROBE
# calls and switching when it is faster than the median of the current mode's latest PROBES
# calls; each try that loses doubles the wait before the next (up to REPROBE_MAX calls), so a
# mode that is much slower (4x, a starved pool) costs a few percent at first and then next to
# nothing.
# Medians, not minima: the pooled mode's calls vary the most (its second thread gets a core or
# not), so its best of two probes beat the one-thread modes while its typical call lost to them.
# That made tier 1 slower than tier 0 on the 10M elementwise chains (quiet machine: tier 0
# 15.3 ms, tier 1 23.6 ms at cpu/wall 1.43, i.e. pooled), and a benchmark's ~15 calls ended
# before the first re-try (REPROBE) could undo the choice.
ADAPTIVE = os.environ.get("JAXLITE_TIER1_ADAPT", "1").strip().lower() not in ("0", "false",
                                                                             "no", "off")
PROBES = 3
REPROBE = 32
REPROBE_MAX = 2048


class ModeChooser:
  """Which of `modes` the next call runs in, by timing calls as above: `pick()` before a call,
  `record(mode, seconds)` after it. `mode` is the choice once probing is done (None before),
  `tries` how many times another mode was tried since. Tier 1's tiled kernels, its scan loops
  (scan_hoist.AdaptiveLoop) and its BLAS thread count (blas.AdaptiveThreads) choose with it."""
  __slots__ = ("modes", "mode", "calls", "tries", "recent", "interval", "next_try")

  def __init__(self, modes):
    self.modes = tuple(modes)
    self.mode = None
    self.calls = self.tries = 0
    self.recent = {}  # mode -> seconds of its latest calls (PROBES at most)
    self.interval = REPROBE  # calls from one try of another mode to the next
    self.next_try = 0

  def pick(self):
    c, modes = self.calls, self.modes
    self.calls = c + 1
    if c < PROBES * len(modes):
      return modes[c % len(modes)]
    if c >= self.next_try:  # now and then, another mode: the machine's load changes
      self.next_try = c + REPROBE_MAX  # until this try is timed (`record` sets the next)
      self.tries += 1
      others = [m for m in modes if m != self.mode]
      return others[self.tries % len(others)]
    return self.mode

  def record(self, mode, seconds: float) -> None:
    recent = self.recent
    times = recent.setdefault(mode, [])
    times.append(seconds)
    if len(times) > PROBES:
      del times[0]
    if self.mode is None:  # probing
      if self.calls >= PROBES * len(self.modes):
        self.mode = min(self.modes, key=lambda m: median(recent.get(m)))
        self.next_try = self.calls + self.interval
    elif mode != self.mode:
      if seconds < 0.9 * median(recent.get(self.mode)):
        self.mode, self.interval = mode, REPROBE
        recent[mode] = [seconds]  # its probes are old news: the load changed
      else:
        self.interval = min(2 * self.interval, REPROBE_MAX)
      self.next_try = self.calls - 1 + self.interval  # counted from the try's own call


def median(times) -> float:
  """The median of a short list of seconds (the upper one of an even count), inf if none."""
  if not times:
    return float("inf")
  return sorted(times)[len(times) // 2]
