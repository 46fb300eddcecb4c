"""inorm.InstanceNorm1d/2d/3d and inorm.GroupNorm: torch.nn's classes with inorm's forward;
inorm.InstanceNormAct1d/2d/3d and inorm.GroupNormAct: the same followed by an activation, fused into
the norm's kernels.

Each subclasses its torch.nn counterpart and replaces only the call that normalizes, so the
constructor, parameters, buffers, state_dict (both ways), input checks, error messages, warnings
and unbatched-input handling are torch.nn's own."""
import torch
from torch import nn

from .functional import group_norm, instance_norm

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
    activation = None  # InstanceNormAct's: fused after the norm
    negative_slope = 0.01
    _batched_dim = None  # each class's batched input rank: (N, C, *spatial)

    def forward(self, input):
        # Batched input with num_features channels goes straight to the norm: torch.nn's forward
        # would find it valid after about 1 us of Python checks (issue 18's per-call host time).
        # Everything else takes torch.nn's forward, for its errors, warnings and unbatched input.
        if input.dim() == self._batched_dim and input.size(1) == self.num_features:
            return self._apply_instance_norm(input)
        return super().forward(input)

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
            self.activation,
            self.negative_slope,
        )


class InstanceNorm1d(_InormForward, nn.InstanceNorm1d):
    """torch.nn.InstanceNorm1d on inorm's kernels: input (N, C, L) or (C, L)."""

    _batched_dim = 3


class InstanceNorm2d(_InormForward, nn.InstanceNorm2d):
    """torch.nn.InstanceNorm2d on inorm's kernels: input (N, C, H, W) or (C, H, W)."""

    _batched_dim = 4


class InstanceNorm3d(_InormForward, nn.InstanceNorm3d):
    """torch.nn.InstanceNorm3d on inorm's kernels: input (N, C, D, H, W) or (C, D, H, W)."""

    _batched_dim = 5


_FUSED = {nn.ReLU: "relu", nn.LeakyReLU: "leaky_relu", nn.SiLU: "silu"}


class _Activated:
    # The fused modules' activation: checked and shown in repr.
    def _set_activation(self, activation, negative_slope):
        if activation not in _FUSED.values():
            raise ValueError(f"activation must be one of {', '.join(_FUSED.values())}, got {activation!r}")
        self.activation = activation
        self.negative_slope = negative_slope

    def extra_repr(self):
        slope = f", negative_slope={self.negative_slope}" if self.activation == "leaky_relu" else ""
        return f"{super().extra_repr()}, activation={self.activation!r}{slope}"


class _InstanceNormAct(_Activated):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False,
                 activation="relu", negative_slope=0.01, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device=device, dtype=dtype)
        self._set_activation(activation, negative_slope)


class InstanceNormAct1d(_InstanceNormAct, InstanceNorm1d):
    """InstanceNorm1d followed by an activation ("relu", "leaky_relu" with negative_slope, or "silu"),
    fused: one pass over memory forward and backward. torch.nn.InstanceNorm1d's arguments, state_dict
    and checks; the same values as the norm followed by nn.ReLU / nn.LeakyReLU / nn.SiLU."""


class InstanceNormAct2d(_InstanceNormAct, InstanceNorm2d):
    """InstanceNorm2d followed by an activation ("relu", "leaky_relu" with negative_slope, or "silu"),
    fused: one pass over memory forward and backward. torch.nn.InstanceNorm2d's arguments, state_dict
    and checks; the same values as the norm followed by nn.ReLU / nn.LeakyReLU / nn.SiLU."""


class InstanceNormAct3d(_InstanceNormAct, InstanceNorm3d):
    """InstanceNorm3d followed by an activation ("relu", "leaky_relu" with negative_slope, or "silu"),
    fused: one pass over memory forward and backward. torch.nn.InstanceNorm3d's arguments, state_dict
    and checks; the same values as the norm followed by nn.ReLU / nn.LeakyReLU / nn.SiLU."""


class GroupNorm(nn.GroupNorm):
    """torch.nn.GroupNorm on inorm's kernels: input (N, C, *). channels_last input gives
    channels_last output, without a copy (torch.nn.GroupNorm's is contiguous NCHW on CUDA)."""

    activation = None  # GroupNormAct's: fused after the norm
    negative_slope = 0.01

    def forward(self, input):
        parameters = self._parameters
        return group_norm(input, self.num_groups, _registered(self, parameters, "weight"),
                          _registered(self, parameters, "bias"), self.eps, self.activation, self.negative_slope)


class GroupNormAct(_Activated, GroupNorm):
    """GroupNorm followed by an activation ("silu", the default, "relu", or "leaky_relu" with
    negative_slope), fused: one pass over memory forward and backward. torch.nn.GroupNorm's
    arguments, state_dict and checks; the same values as the norm followed by nn.SiLU / nn.ReLU /
    nn.LeakyReLU (a diffusion UNet's and VAE's GroupNorm(32) + SiLU)."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, activation="silu", negative_slope=0.01,
                 device=None, dtype=None):
        super().__init__(num_groups, num_channels, eps, affine, device=device, dtype=dtype)
        self._set_activation(activation, negative_slope)


class ModelNew(nn.Module):
    """Drop-in for the seed harness's Model (nn.InstanceNorm2d(num_features) and a forward)."""

    def __init__(self, num_features: int):
        super().__init__()
        self.inorm = InstanceNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inorm(x)


class _Family:
    """A family of norms convert_* replaces: torch.nn's classes and inorm's, how each is built and
    which tensors it holds."""

    def __init__(self, replacements, fused_replacements, arguments, tensors):
        self.replacements = replacements  # torch.nn class -> inorm class
        self.fused_replacements = fused_replacements  # torch.nn or inorm class -> inorm's fused class
        self.arguments = arguments  # norm -> the constructor's arguments
        self.tensors = tensors  # the parameters' and buffers' names

    def replaced(self, norm, replacement, **activation):
        # `replacement` built on the meta device, then given the norm's own tensors and training flag.
        converted = replacement(**self.arguments(norm), device="meta", **activation)
        for name in self.tensors:
            setattr(converted, name, getattr(norm, name))
        converted.train(norm.training)
        return converted

    def fuse_activations(self, sequential: nn.Sequential) -> None:
        # Each norm directly followed by nn.ReLU / nn.LeakyReLU / nn.SiLU: the pair becomes one fused
        # module and an nn.Identity in the activation's place (indices and state_dict keys stay).
        children = list(sequential.named_children())
        for (name, norm), (next_name, activation) in zip(children, children[1:]):
            replacement = self.fused_replacements.get(type(norm))
            fused = _FUSED.get(type(activation))
            if replacement is None or fused is None:
                continue
            slope = {"negative_slope": activation.negative_slope} if fused == "leaky_relu" else {}
            sequential.add_module(name, self.replaced(norm, replacement, activation=fused, **slope))
            sequential.add_module(next_name, nn.Identity())

    def convert(self, module: nn.Module, fuse: bool) -> nn.Module:
        converted = module
        replacement = self.replacements.get(type(module))
        if replacement is not None:
            converted = self.replaced(module, replacement)
        if fuse and isinstance(module, nn.Sequential):
            self.fuse_activations(converted)
        for name, child in converted.named_children():
            converted.add_module(name, self.convert(child, fuse))
        return converted


_INSTANCE_NORMS = _Family(
    {nn.InstanceNorm1d: InstanceNorm1d, nn.InstanceNorm2d: InstanceNorm2d, nn.InstanceNorm3d: InstanceNorm3d},
    {nn.InstanceNorm1d: InstanceNormAct1d, nn.InstanceNorm2d: InstanceNormAct2d, nn.InstanceNorm3d: InstanceNormAct3d,
     InstanceNorm1d: InstanceNormAct1d, InstanceNorm2d: InstanceNormAct2d, InstanceNorm3d: InstanceNormAct3d},
    lambda norm: dict(num_features=norm.num_features, eps=norm.eps, momentum=norm.momentum, affine=norm.affine,
                      track_running_stats=norm.track_running_stats),
    ("weight", "bias", "running_mean", "running_var", "num_batches_tracked"))
_GROUP_NORMS = _Family(
    {nn.GroupNorm: GroupNorm}, {nn.GroupNorm: GroupNormAct, GroupNorm: GroupNormAct},
    lambda norm: dict(num_groups=norm.num_groups, num_channels=norm.num_channels, eps=norm.eps, affine=norm.affine),
    ("weight", "bias"))


def convert_instance_norm(module: nn.Module, fuse: bool = False) -> nn.Module:
    """Replaces every torch.nn.InstanceNorm1d/2d/3d in `module` (recursively) by inorm's, the way
    torch.nn.SyncBatchNorm.convert_sync_batchnorm converts batch norms, and returns the module
    (a new one where `module` itself is an InstanceNorm).

    Each replacement takes over the original's parameters and buffers (the same tensors, so an
    optimizer built before the conversion still updates them), its settings and its training flag;
    device and dtype are the tensors'. Hooks registered on a replaced module are not carried over.
    Subclasses of torch.nn's classes (inorm's among them) are left as they are.

    With fuse=True, an InstanceNorm (torch.nn's or inorm's) followed directly by nn.ReLU,
    nn.LeakyReLU or nn.SiLU inside an nn.Sequential becomes one InstanceNormAct module, and the
    activation an nn.Identity: one pass over memory instead of two, the same values.

        model = inorm.convert_instance_norm(model)             # norms only
        model = inorm.convert_instance_norm(model, fuse=True)  # and norm + activation pairs fused
    """
    return _INSTANCE_NORMS.convert(module, fuse)


def convert_group_norm(module: nn.Module, fuse: bool = False) -> nn.Module:
    """convert_instance_norm for torch.nn.GroupNorm: every one in `module` (recursively) becomes
    inorm.GroupNorm, with the same tensors, settings and training flag; with fuse=True a GroupNorm
    (torch.nn's or inorm's) followed directly by nn.SiLU, nn.ReLU or nn.LeakyReLU inside an
    nn.Sequential becomes one GroupNormAct, and the activation an nn.Identity.

        model = inorm.convert_group_norm(model, fuse=True)  # a diffusion UNet's GroupNorm + SiLU pairs
    """
    return _GROUP_NORMS.convert(module, fuse)
