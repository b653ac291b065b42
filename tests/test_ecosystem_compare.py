"""tools/ecosystem_compare.py on real JUnit XMLs: pytest runs one small suite twice, as two
columns whose outcomes differ in known ways, and the comparison must list exactly those tests,
the ones failing on the jaxlite column only first."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPARE = os.path.join(ROOT, "tools", "ecosystem_compare.py")

# COLUMN is "jax" or "lite"; each test's outcome in each column is written in its name.
SUITE = '''
import os
import pytest
COLUMN = os.environ["COLUMN"]

def test_passes_on_both():
    pass

def test_fails_on_lite_only():
    assert COLUMN == "jax", "lite differs"

def test_fails_on_jax_only():
    assert COLUMN == "lite"

def test_fails_on_both():
    assert False

@pytest.mark.parametrize("n", [1, 2])
def test_skipped_on_lite(n):
    if COLUMN == "lite":
        pytest.skip("not here")

@pytest.mark.xfail(reason="known")
def test_xfail_on_both():
    assert False

@pytest.fixture
def setup_fails_on_lite():
    if COLUMN == "lite":
        raise RuntimeError("setup")

class TestGroup:
    def test_errors_on_lite(self, setup_fails_on_lite):
        pass

if COLUMN == "jax":
    def test_only_on_jax():
        pass
'''


def run_column(tmp_path, column):
    xml = tmp_path / f"demo-{column}.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
         "--rootdir", str(tmp_path / "suite"), "--junitxml", str(xml), "-o",
         "junit_family=xunit1", str(tmp_path / "suite")],
        env={**os.environ, "COLUMN": column}, cwd=tmp_path, capture_output=True, timeout=120)
    assert xml.exists()
    return xml


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("eco")
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "test_demo.py").write_text(SUITE)
    run_column(tmp_path, "jax")
    run_column(tmp_path, "lite")
    return tmp_path


def compare(*args):
    result = subprocess.run([sys.executable, COMPARE, *args], capture_output=True, text=True,
                            timeout=60)
    return result.returncode, result.stdout


def test_lists_each_difference_in_its_section(logdir):
    status, out = compare(str(logdir), "demo")
    assert status == 1, out  # a test fails on jaxlite only
    lines = out.splitlines()
    assert lines[0] == (
        "demo: JAX 6 passed / 2 failed / 0 errors / 1 skipped; "
        "jaxlite 2 passed / 2 failed / 1 errors / 3 skipped; 8 tests in both, "
        "2 fail on jaxlite only, 1 fail on JAX only, 2 pass against skip; "
        "1 only in JAX's XML, 0 only in jaxlite's")
    sections = [i for i, line in enumerate(lines) if line.startswith("  ") and
                not line.startswith("    ")]
    titles = [lines[i].strip() for i in sections]
    assert titles == ["fail on jaxlite only (2):", "fail on JAX only (1):",
                      "pass on one column, skipped on the other (2):",
                      "only in JAX's XML (not run on jaxlite) (1):"]
    first = lines[sections[0] + 1:sections[1]]
    assert [line.split()[0] for line in first] == [
        "test_demo.TestGroup::test_errors_on_lite", "test_demo::test_fails_on_lite_only"]
    assert "[JAX passed, jaxlite error]" in first[0]
    assert "[JAX passed, jaxlite failed]  AssertionError: lite differs" in first[1]
    assert lines[sections[1] + 1].split()[0] == "test_demo::test_fails_on_jax_only"
    skipped = [line.split()[0] for line in lines[sections[2] + 1:sections[3]]]
    assert skipped == ["test_demo::test_skipped_on_lite[1]", "test_demo::test_skipped_on_lite[2]"]
    assert lines[sections[3] + 1].split()[0] == "test_demo::test_only_on_jax"


def test_summary_is_one_line_and_counts_match_the_xml(logdir):
    status, out = compare("--summary", str(logdir), "demo")
    assert status == 1 and len(out.splitlines()) == 1
    assert compare("--counts", str(logdir / "demo-jax.xml")) == (0, "6 2 1\n")
    assert compare("--counts", str(logdir / "demo-lite.xml")) == (0, "2 3 3\n")


def test_same_outcomes_exit_zero(logdir):
    xml = str(logdir / "demo-jax.xml")
    status, out = compare("--xml", xml, xml)
    assert status == 0
    assert "0 fail on jaxlite only, 0 fail on JAX only, 0 pass against skip" in out


def test_missing_xml_is_status_two(logdir):
    status, out = compare(str(logdir), "nosuchlib")
    assert status == 2 and "cannot compare" in out
