"""The XLA backend: jaxprs lowered to StableHLO (`lowering.py`, no jaxlib) and compiled and run
through jaxlib's PJRT clients (`client.py`, `backend.py`: imported only when an XLA device or
the xla backend is asked for). See README.md in this folder."""
