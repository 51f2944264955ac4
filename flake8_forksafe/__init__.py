"""flake8-forksafe: find and fix the multiprocessing hazards of PyTorch data loading."""

__version__ = "0.2.0"  # the one place the version is set (pyproject.toml reads it)
