"""inorm: single-pass InstanceNorm and GroupNorm, forward and backward, for NVIDIA Hopper (sm_90), as
PyTorch modules and ops.

    import inorm
    norm = inorm.InstanceNorm2d(64).cuda()      # same constructor and state_dict as torch.nn's
    y = norm(x)                                 # x: float32/float16/bfloat16/float64
    model = inorm.convert_instance_norm(model)  # every nn.InstanceNorm1d/2d/3d in a model, swapped
    fused = inorm.InstanceNormAct2d(64, affine=True, activation="leaky_relu", negative_slope=0.01)
    model = inorm.convert_instance_norm(model, fuse=True)  # and norm + ReLU/LeakyReLU/SiLU pairs fused
    gn = inorm.GroupNorm(32, 128).cuda()        # torch.nn.GroupNorm's constructor and state_dict
    gn_silu = inorm.GroupNormAct(32, 128)       # GroupNorm + SiLU, fused
    model = inorm.convert_group_norm(model, fuse=True)     # every nn.GroupNorm (+ activation) swapped

CUDA tensors run inorm's kernels (forward and backward); tensors on any other device run PyTorch's
own implementation, with torch.nn's results. The ops live in torch.ops.inorm (instance_norm,
instance_norm_forward, instance_norm_backward, group_norm, group_norm_forward, group_norm_backward)
and work under torch.compile(fullgraph=True) and CUDA graphs.
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
from .functional import group_norm, instance_norm  # noqa: E402
from .modules import (  # noqa: E402
    GroupNorm,
    GroupNormAct,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    InstanceNormAct1d,
    InstanceNormAct2d,
    InstanceNormAct3d,
    ModelNew,
    convert_group_norm,
    convert_instance_norm,
)

__all__ = ["instance_norm", "group_norm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "InstanceNormAct1d",
           "InstanceNormAct2d", "InstanceNormAct3d", "GroupNorm", "GroupNormAct", "ModelNew", "convert_instance_norm",
           "convert_group_norm"]
__version__ = "0.1.0"
