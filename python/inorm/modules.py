"""inorm.InstanceNorm1d/2d/3d: torch.nn's classes with inorm's forward.

Each subclasses its torch.nn counterpart and replaces only the call that normalizes, so the
constructor, parameters, buffers, state_dict (both ways), input checks, error messages, warnings
and unbatched-input handling are torch.nn's own."""
import torch
from torch import nn

from .functional import instance_norm

if not hasattr(nn.modules.instancenorm._InstanceNorm, "_apply_instance_norm"):  # pragma: no cover
    raise ImportError(
        f"inorm's modules need torch.nn's _InstanceNorm._apply_instance_norm (torch >= 1.11); "
        f"torch {torch.__version__} has none"
    )


_MISSING = object()


def _registered(module, store, name):
    # A parameter or buffer read from the dict nn.Module keeps it in: `module.weight` falls back to
    # nn.Module.__getattr__, Python that costs about 0.4 us a lookup (four a call). Where something
    # moved it out (a parametrization, weight_norm), the attribute is read as usual.
    value = store.get(name, _MISSING)
    return getattr(module, name) if value is _MISSING else value


class _InormForward:
    def _apply_instance_norm(self, input):
        parameters, buffers = self._parameters, self._buffers
        return instance_norm(
            input,
            _registered(self, buffers, "running_mean"),
            _registered(self, buffers, "running_var"),
            _registered(self, parameters, "weight"),
            _registered(self, parameters, "bias"),
            self.training or not self.track_running_stats,
            self.momentum if self.momentum is not None else 0.0,
            self.eps,
        )


class InstanceNorm1d(_InormForward, nn.InstanceNorm1d):
    """torch.nn.InstanceNorm1d on inorm's kernels: input (N, C, L) or (C, L)."""


class InstanceNorm2d(_InormForward, nn.InstanceNorm2d):
    """torch.nn.InstanceNorm2d on inorm's kernels: input (N, C, H, W) or (C, H, W)."""


class InstanceNorm3d(_InormForward, nn.InstanceNorm3d):
    """torch.nn.InstanceNorm3d on inorm's kernels: input (N, C, D, H, W) or (C, D, H, W)."""


class ModelNew(nn.Module):
    """Drop-in for the seed harness's Model (nn.InstanceNorm2d(num_features) and a forward)."""

    def __init__(self, num_features: int):
        super().__init__()
        self.inorm = InstanceNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inorm(x)


_REPLACEMENTS = {nn.InstanceNorm1d: InstanceNorm1d, nn.InstanceNorm2d: InstanceNorm2d, nn.InstanceNorm3d: InstanceNorm3d}


def convert_instance_norm(module: nn.Module) -> nn.Module:
    """Replaces every torch.nn.InstanceNorm1d/2d/3d in `module` (recursively) by inorm's, the way
    torch.nn.SyncBatchNorm.convert_sync_batchnorm converts batch norms, and returns the module
    (a new one where `module` itself is an InstanceNorm).

    Each replacement takes over the original's parameters and buffers (the same tensors, so an
    optimizer built before the conversion still updates them), its settings and its training flag;
    device and dtype are the tensors'. Hooks registered on a replaced module are not carried over.
    Subclasses of torch.nn's classes (inorm's among them) are left as they are.

        model = inorm.convert_instance_norm(model)
    """
    converted = module
    replacement = _REPLACEMENTS.get(type(module))
    if replacement is not None:
        converted = replacement(module.num_features, eps=module.eps, momentum=module.momentum, affine=module.affine,
                                track_running_stats=module.track_running_stats, device="meta")
        for name in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked"):
            setattr(converted, name, getattr(module, name))
        converted.train(module.training)
    for name, child in module.named_children():
        converted.add_module(name, convert_instance_norm(child))
    return converted
