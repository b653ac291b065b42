"""Aggregates fuzzer summaries (`tools/fuzz.py --out DIR` writes DIR/summary_SEED.json) into the
tables of RELIABILITY.md: programs per mode and mismatches by root cause, mode and kind.

  python tools/fuzz_report.py DIR
"""
from __future__ import annotations

import collections
import glob
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "fuzz"))

from known_differences import KNOWN  # noqa: E402
from open_defects import OPEN  # noqa: E402


def label(m: dict) -> str:
  for entry in KNOWN:
    if entry.matches(m["mode"], m["kind"], m["detail"], m["program"]):
      return f"known:{entry.name}"
  for entry in OPEN:
    if entry.matches(m["mode"], m["kind"], m["detail"], m["program"]):
      return f"open:{entry.name}"
  return "unclassified"


def main(d: str):
  counts, n, secs = collections.Counter(), 0, 0
  by = collections.defaultdict(list)
  for f in sorted(glob.glob(os.path.join(d, "summary_*.json"))):
    s = json.load(open(f))
    n += s["n"]
    secs += s["seconds"]
    counts.update(s["counts"])
    for m in s["mismatches"]:
      by[label(m)].append(m)
  print(f"programs: {n} in {secs} s; per mode: {dict(counts)}")
  for lab, ms in sorted(by.items()):
    modes = collections.Counter(f"{m['mode']}/{m['kind']}" for m in ms)
    ex = min(ms, key=lambda m: len(m["program"]))
    print(f"\n{lab}: {len(ms)}  {dict(modes)}\n  e.g. {ex['program'][:200]}\n"
          f"  {ex['detail'][:200]}")


if __name__ == "__main__":
  main(sys.argv[1] if len(sys.argv) > 1 else "fuzz_out")
