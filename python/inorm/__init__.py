"""inorm: single-pass InstanceNorm forward and backward for NVIDIA Hopper (sm_90), as PyTorch modules and ops.

    import inorm
    norm = inorm.InstanceNorm2d(64).cuda()      # same constructor and state_dict as torch.nn's
    y = norm(x)                                 # x: CUDA tensor, float32/float16/bfloat16/float64

The ops live in torch.ops.inorm (instance_norm, instance_norm_forward, instance_norm_backward) and
work under torch.compile(fullgraph=True) and CUDA graphs; training runs inorm's backward kernels.
"""
import torch

try:
    from . import _C  # noqa: F401  (loading it registers torch.ops.inorm.*)
except ImportError as error:  # pragma: no cover - depends on the installation
    raise ImportError(
        "inorm's compiled extension (inorm._C) could not be loaded; build it with "
        "`pip install --no-build-isolation .` on a machine with PyTorch and nvcc"
    ) from error

from . import _ops  # noqa: F401,E402  (fake and autograd registrations)
from .functional import instance_norm  # noqa: E402
from .modules import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, ModelNew  # noqa: E402

__all__ = ["instance_norm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "ModelNew"]
__version__ = "0.1.0"
