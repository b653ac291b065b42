#!/usr/bin/env python3
"""Compares a library's suite on JAX and on jaxlite test by test, from the two JUnit XMLs that
tools/ecosystem_tests.sh writes (LOGDIR/<lib>-jax.xml and LOGDIR/<lib>-lite.xml).

usage: tools/ecosystem_compare.py [--summary] [--max N] LOGDIR LIB [LIB...]
       tools/ecosystem_compare.py [--summary] [--max N] --xml JAX.xml LITE.xml
       tools/ecosystem_compare.py --counts XML

Prints each column's counts (passed / failed / errors / skipped, as pytest's JUnit report has
them: a collection error is one `error` entry named after its file), then the tests whose
outcome differs: first those that fail on jaxlite and not on JAX, then those that fail on JAX
and not on jaxlite, then pass-against-skip, then the tests only one column ran (a time limit
or a file that did not collect in the other). --summary prints one line per library.
Exit status: 1 when some test fails on jaxlite only, else 0 (2 for a missing or broken XML).
Standard library only (it runs wherever the suites run).
"""
import argparse
import os
import sys
import xml.etree.ElementTree as ET

# What a test's outcome is, and which outcomes count as the same when the columns are compared:
# failed and error are both failing; skipped and xfail are both not-run.
OUTCOME_KIND = {"passed": "pass", "failed": "fail", "error": "fail", "skipped": "skip",
                "xfail": "skip"}
# When one name has several entries (a failure in the test and an error in its teardown), the
# worst one stands for it.
SEVERITY = {"passed": 0, "xfail": 1, "skipped": 2, "failed": 3, "error": 4}


def read_outcomes(path):
    """{test id: (outcome, first line of its message)} from one JUnit XML."""
    tree = ET.parse(path)
    outcomes = {}
    for case in tree.iter("testcase"):
        if not case.get("name"):  # a test that a worker had not finished when the run was stopped
            continue
        test_id = f"{case.get('classname', '')}::{case.get('name', '')}".lstrip(":")
        outcome, message = "passed", ""
        for child in case:
            if child.tag == "failure":
                kind = "failed"
            elif child.tag == "error":
                kind = "error"
            elif child.tag == "skipped":
                kind = "xfail" if child.get("type") == "pytest.xfail" else "skipped"
            else:
                continue
            if SEVERITY[kind] > SEVERITY[outcome]:
                outcome = kind
                message = (child.get("message") or child.text or "").strip().splitlines()
                message = message[0] if message else ""
        previous = outcomes.get(test_id)
        if previous is None or SEVERITY[outcome] > SEVERITY[previous[0]]:
            outcomes[test_id] = (outcome, message)
    return outcomes


def counts(outcomes):
    c = {"passed": 0, "failed": 0, "error": 0, "skipped": 0, "xfail": 0}
    for outcome, _ in outcomes.values():
        c[outcome] += 1
    return c


def format_counts(c):
    return (f"{c['passed']} passed / {c['failed']} failed / {c['error']} errors / "
            f"{c['skipped'] + c['xfail']} skipped")


def compare(name, jax_xml, lite_xml, summary, max_listed):
    """Prints the comparison of one library; returns its exit status."""
    try:
        jax, lite = read_outcomes(jax_xml), read_outcomes(lite_xml)
    except (OSError, ET.ParseError) as e:
        print(f"{name}: cannot compare: {e}")
        return 2
    both = jax.keys() & lite.keys()
    lite_only_failures, jax_only_failures, other = [], [], []
    for test_id in sorted(both):
        j, l = jax[test_id], lite[test_id]
        jk, lk = OUTCOME_KIND[j[0]], OUTCOME_KIND[l[0]]
        if jk == lk:
            continue
        if lk == "fail":
            lite_only_failures.append((test_id, j, l))
        elif jk == "fail":
            jax_only_failures.append((test_id, j, l))
        else:
            other.append((test_id, j, l))
    only_jax = sorted(jax.keys() - lite.keys())
    only_lite = sorted(lite.keys() - jax.keys())
    line = (f"{name}: JAX {format_counts(counts(jax))}; jaxlite {format_counts(counts(lite))}; "
            f"{len(both)} tests in both, {len(lite_only_failures)} fail on jaxlite only, "
            f"{len(jax_only_failures)} fail on JAX only, {len(other)} pass against skip; "
            f"{len(only_jax)} only in JAX's XML, {len(only_lite)} only in jaxlite's")
    print(line)
    if not summary:
        sections = [("fail on jaxlite only", lite_only_failures),
                    ("fail on JAX only", jax_only_failures),
                    ("pass on one column, skipped on the other", other)]
        for title, rows in sections:
            if not rows:
                continue
            print(f"  {title} ({len(rows)}):")
            for test_id, j, l in rows[:max_listed]:
                shown = l if OUTCOME_KIND[l[0]] == "fail" else j
                print(f"    {test_id}  [JAX {j[0]}, jaxlite {l[0]}]"
                      + (f"  {shown[1][:160]}" if shown[1] else ""))
            if len(rows) > max_listed:
                print(f"    ... and {len(rows) - max_listed} more")
        for title, ids, source in [("only in JAX's XML (not run on jaxlite)", only_jax, jax),
                                   ("only in jaxlite's XML (not run on JAX)", only_lite, lite)]:
            if not ids:
                continue
            print(f"  {title} ({len(ids)}):")
            for test_id in ids[:max_listed]:
                print(f"    {test_id}  [{source[test_id][0]}]")
            if len(ids) > max_listed:
                print(f"    ... and {len(ids) - max_listed} more")
    return 1 if lite_only_failures else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--summary", action="store_true", help="one line per library")
    parser.add_argument("--max", type=int, default=200, help="tests listed per section")
    parser.add_argument("--xml", nargs=2, metavar=("JAX_XML", "LITE_XML"),
                        help="compare these two files instead of LOGDIR's")
    parser.add_argument("--counts", metavar="XML",
                        help="print this XML's 'passed failed skipped' (errors count as failed)")
    parser.add_argument("logdir", nargs="?")
    parser.add_argument("libs", nargs="*")
    args = parser.parse_args(argv)
    if args.counts:
        c = counts(read_outcomes(args.counts))
        print(c["passed"], c["failed"] + c["error"], c["skipped"] + c["xfail"])
        return 0
    if args.xml:
        return compare(os.path.basename(args.xml[1]), *args.xml, args.summary, args.max)
    if not args.logdir or not args.libs:
        parser.error("give LOGDIR and at least one LIB, or --xml JAX.xml LITE.xml")
    status = 0
    for lib in args.libs:
        jax_xml = os.path.join(args.logdir, f"{lib}-jax.xml")
        lite_xml = os.path.join(args.logdir, f"{lib}-lite.xml")
        status = max(status, compare(lib, jax_xml, lite_xml, args.summary, args.max))
    return status


if __name__ == "__main__":
    sys.exit(main())
