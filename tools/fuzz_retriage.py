"""Re-run a campaign's mismatches with the current code: every mismatch of the given summaries
that was not documented is regenerated from its seed and index (the whole program, not the
minimised one), run again in fresh JAX and jaxlite workers in its mode, and classified:

  fixed       the current code agrees with JAX on it
  documented  it now matches a tests/fuzz/known_differences.py entry
  open        it matches a tests/fuzz/open_defects.py entry
  new         none of these: a defect to triage

  python tools/fuzz_retriage.py DIR/summary_*.json [--json OUT]
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fuzz import WorkerPair, classify_known, classify_open, compare  # noqa: E402
from fuzz_gen import Gen, one_line  # noqa: E402

_STRIDE = 1_000_003  # fuzz_gen.generate: program i of seed s is Gen(s * _STRIDE + i).program(i)


def regenerate(program_seed: int, campaign_seed: int, float_inputs: bool, wide: bool,
               max_ops: int = 4) -> dict:
  index = program_seed - campaign_seed * _STRIDE
  return Gen(program_seed, max_ops=max_ops, float_inputs=float_inputs, wide=wide).program(index)


def _numbered(progs):
  """The programs with distinct ids (the workers key results by id; indices of different seeds
  repeat)."""
  return [dict(p, id=k) for k, p in enumerate(progs)]


def pending(summaries):
  """(program, {modes}, [(mode, kind, detail)]) for each undocumented mismatch's program."""
  found = collections.OrderedDict()
  for path in summaries:
    with open(path) as fh:
      s = json.load(fh)
    for m in s["mismatches"]:
      if m["known"]:
        continue
      key = (m["seed"], s["float_inputs"], s["wide"])
      if key not in found:
        found[key] = (regenerate(m["seed"], s["seed"], s["float_inputs"], s["wide"]), set(), [])
      found[key][1].add(m["mode"])
      found[key][2].append((m["mode"], m["kind"], m["detail"]))
  return list(found.values())


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("summaries", nargs="+")
  ap.add_argument("--json", help="write each mismatch's fate here")
  ap.add_argument("--batch", type=int, default=40)
  a = ap.parse_args(argv)
  work = pending(a.summaries)
  pair = WorkerPair()
  fates, rows = collections.Counter(), []
  try:
    for i in range(0, len(work), a.batch):
      chunk = work[i:i + a.batch]
      chunk = [(p, wanted, before) for p, (_, wanted, before) in
               zip(_numbered([w[0] for w in chunk]), chunk)]
      modes = tuple(sorted(set().union(*(w[1] for w in chunk))))
      rj, rl = pair.run([w[0] for w in chunk], modes=modes)
      for prog, wanted, before in chunk:
        now = {m.mode: m for m in compare(prog, rj[prog["id"]], rl[prog["id"]], modes)}
        for mode, kind, detail in before:
          m = now.get(mode)
          if m is None and kind == "grad-skip" and "eager" in now:
            # compare() drops a grad-skip behind an eager mismatch (the chunk ran eager for
            # another program): that eager mismatch is this one's fate, not "fixed"
            m = now["eager"]
          if m is None:
            fate, name = "fixed", ""
          else:
            m.known = classify_known(m)
            opened = classify_open(m)
            fate = "documented" if m.known else "open" if opened else "new"
            name = m.known or opened or ""
          fates[fate] += 1
          rows.append(dict(seed=prog["seed"], mode=mode, kind=kind, fate=fate, row=name,
                           before=detail[:300], now=(m.detail[:300] if m else ""),
                           program=one_line(prog)))
          if fate == "new":
            print(f"NEW {prog['seed']} {mode} {m.kind}: {m.detail[:200]}\n    {one_line(prog)}")
  finally:
    pair.close()
  print(dict(fates))
  if a.json:
    with open(a.json, "w") as fh:
      json.dump(rows, fh, indent=1)
  return 0 if not fates["new"] else 1


if __name__ == "__main__":
  sys.exit(main())
