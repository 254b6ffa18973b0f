"""GRPO Lab: declarative GRPO recipes for verl, validated before launch, run as Ray jobs, watched from Jupyter.

Importing this package is cheap on purpose (no torch, ray or verl): `grpolab check` must answer in well
under a second. Heavy dependencies are imported inside the functions that need them.
"""

__version__ = "0.1.0"
