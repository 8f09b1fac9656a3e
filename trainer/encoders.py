"""Visual encoders for (C, H, W) image tensors: `cnn_small` (fast on CPU) and `resnet18_half` (VER paper).

`resnet18_half` follows the VER paper's skill architecture (appendix "Architecture"): ResNet18 at
half width with GroupNorm, a patchify stem, dedicated down-sample layers between stages (ConvNeXt
style), layer scale on every residual branch and dilated convolutions in the last stages; then,
like habitat-baselines' ResNetEncoder, a 3x3 compression conv down to about `compression_flat_size`
features, flatten and a linear layer to `out_dim`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import nn


def _conv_output_dim(module: nn.Module, in_channels: int, height: int, width: int) -> int:
    with torch.no_grad():
        return int(module(torch.zeros(1, in_channels, height, width)).flatten(1).shape[1])


class SmallCNN(nn.Module):
    """A few strided convolutions and a linear layer (Nature-DQN style)."""

    def __init__(self, in_channels: int, height: int, width: int, cfg: Mapping):
        super().__init__()
        channels: Sequence[int] = cfg["channels"]
        kernels: Sequence[int] = cfg["kernels"]
        strides: Sequence[int] = cfg["strides"]
        if not (len(channels) == len(kernels) == len(strides)):
            raise ValueError("policy.visual channels, kernels and strides must have the same length")
        layers: list[nn.Module] = []
        prev = in_channels
        for ch, k, s in zip(channels, kernels, strides, strict=True):
            layers += [nn.Conv2d(prev, int(ch), int(k), stride=int(s)), nn.ReLU()]
            prev = int(ch)
        self.convs = nn.Sequential(*layers)
        flat = _conv_output_dim(self.convs, in_channels, height, width)
        self.out_dim = int(cfg["out_dim"])
        self.fc = nn.Sequential(nn.Flatten(), nn.Linear(flat, self.out_dim), nn.ReLU())

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.fc(self.convs(images))


class LayerScale(nn.Module):
    """Per-channel learned scale of a residual branch (Touvron et al., 2021)."""

    def __init__(self, channels: int, init: float):
        super().__init__()
        self.gamma = nn.Parameter(torch.full((channels, 1, 1), float(init)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gamma


class BasicBlock(nn.Module):
    """ResNet basic block (two 3x3 convs) with GroupNorm, optional dilation and layer scale.

    Channel counts never change inside a block: down-sampling is done by separate layers.
    """

    def __init__(self, channels: int, groups: int, dilation: int, layer_scale_init: float):
        super().__init__()
        self.branch = nn.Sequential(
            nn.Conv2d(channels, channels, 3, padding=dilation, dilation=dilation, bias=False),
            nn.GroupNorm(groups, channels),
            nn.ReLU(),
            nn.Conv2d(channels, channels, 3, padding=dilation, dilation=dilation, bias=False),
            nn.GroupNorm(groups, channels),
            LayerScale(channels, layer_scale_init),
        )
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(x + self.branch(x))


class ResNet18Half(nn.Module):
    """ResNet18 at half width (32-64-128-256), GroupNorm, patchify stem, dilated last stages."""

    def __init__(self, in_channels: int, height: int, width: int, cfg: Mapping):
        super().__init__()
        widths = [int(w) for w in cfg["stage_widths"]]
        blocks = [int(b) for b in cfg["stage_blocks"]]
        strides = [int(s) for s in cfg["stage_strides"]]
        dilations = [int(d) for d in cfg["stage_dilations"]]
        if not (len(widths) == len(blocks) == len(strides) == len(dilations)):
            raise ValueError("policy.visual stage_widths/blocks/strides/dilations must have the same length")
        groups = int(cfg["groups"])
        patch = int(cfg["stem_patch"])
        layer_scale_init = float(cfg["layer_scale_init"])

        # Patchify stem: non-overlapping patch x patch convolution.
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, widths[0], patch, stride=patch, bias=False),
            nn.GroupNorm(groups, widths[0]),
        )
        stages: list[nn.Module] = []
        prev = widths[0]
        for width_i, n_blocks, stride, dilation in zip(widths, blocks, strides, dilations, strict=True):
            if stride != 1 or width_i != prev:
                # Dedicated down-sample layer: norm, then a stride x stride conv (ConvNeXt style).
                stages.append(
                    nn.Sequential(
                        nn.GroupNorm(groups, prev),
                        nn.Conv2d(prev, width_i, kernel_size=stride, stride=stride, bias=False),
                    )
                )
            stages += [BasicBlock(width_i, groups, dilation, layer_scale_init) for _ in range(n_blocks)]
            prev = width_i
        self.backbone = nn.Sequential(self.stem, *stages)

        with torch.no_grad():
            _, c, h, w = self.backbone(torch.zeros(1, in_channels, height, width)).shape
        compression_channels = max(1, round(int(cfg["compression_flat_size"]) / (h * w)))
        self.compression = nn.Sequential(
            nn.Conv2d(c, compression_channels, 3, padding=1, bias=False),
            nn.GroupNorm(1, compression_channels),
            nn.ReLU(),
        )
        self.out_dim = int(cfg["out_dim"])
        self.fc = nn.Sequential(
            nn.Flatten(), nn.Linear(compression_channels * h * w, self.out_dim), nn.ReLU()
        )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.fc(self.compression(self.backbone(images)))


VISUAL_ENCODERS = {"cnn_small": SmallCNN, "resnet18_half": ResNet18Half}


def make_visual_encoder(name: str, in_channels: int, height: int, width: int, cfg: Mapping) -> nn.Module:
    """Build the encoder called `name` (a key of VISUAL_ENCODERS) for (in_channels, height, width) images."""
    if name not in VISUAL_ENCODERS:
        raise ValueError(
            f"unknown policy.visual.encoder '{name}'; valid choices: {', '.join(VISUAL_ENCODERS)}"
        )
    return VISUAL_ENCODERS[name](in_channels, height, width, cfg)
