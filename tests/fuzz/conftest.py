"""Markers for the fuzzing and soak tests (registered here: pyproject.toml is owned elsewhere)."""


def pytest_configure(config):
  config.addinivalue_line("markers", "fuzz: differential fuzzing against real JAX")
  config.addinivalue_line("markers", "soak: long stress runs, skipped unless selected")
