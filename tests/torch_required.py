"""`from torch_required import torch` in a test module that needs PyTorch.

Where CI is set (CI runs with CI=true), a missing torch fails the module:
tools/bootstrap.sh installs it, so its absence is a broken install, never a
reason to skip. Elsewhere the module is skipped with the command that
installs it."""

import os

import pytest

try:
    import torch
except ImportError as exc:
    if os.environ.get("CI"):
        raise ImportError(f"CI is set and torch is missing ({exc}): tools/bootstrap.sh installs it") from exc
    pytest.skip("needs torch: pip install torch==2.13.0 (the CPU build; tools/bootstrap.sh does it)",
                allow_module_level=True)

__all__ = ["torch"]
