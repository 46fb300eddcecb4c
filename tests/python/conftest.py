"""Collects the Python tests this machine can run: without PyTorch, or without inorm importable
(scripts/test.sh builds it into build/python), only the torch-free ones, and one line says why."""
import importlib.util

import pytest

TORCH_FREE = {"test_ab_compare.py", "test_packaging.py", "test_suite.py"}


def _missing():
    if importlib.util.find_spec("torch") is None:
        return "PyTorch is not installed"
    try:
        import inorm  # noqa: F401
    except ImportError as error:
        return f"inorm is not importable ({error}); scripts/test.sh builds it where PyTorch and nvcc are"
    return None


MISSING = _missing()


def pytest_ignore_collect(collection_path, config):
    name = collection_path.name
    if MISSING and name.startswith("test_") and name.endswith(".py") and name not in TORCH_FREE:
        return True
    return None


@pytest.fixture
def exact_convolutions():
    # Convolutions in TF32 round their inputs to 10 bits: a difference of one float32 ulp in what a
    # norm hands them can come out of the next convolution as 1e-3, more than the norms differ by.
    import torch

    saved = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32 = saved


def pytest_terminal_summary(terminalreporter):
    if MISSING:
        terminalreporter.write_line(f"SKIPPED every test that needs PyTorch and inorm: {MISSING}")
