"""flake8-forksafe: find and fix the multiprocessing hazards of PyTorch data loading."""

__version__ = "0.1.0"
