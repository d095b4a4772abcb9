"""Library models for the precision suite: a tiny `diffusers` UNet and VAE decoder.

Each is wrapped in a user's module, as people use them: every op of the model is at the one
user line that calls it, so the line-level reference (line_isolation.py) says only whether
the model fails; which ops fail is checked op by op (culprits_lowering_alone, in
bench/culprit_precision.py).
Tiny configs (two blocks, a few channels, 8x8 latents), random weights: nothing is downloaded.
Both fail on TOSA and StableHLO only at `F.interpolate` in `diffusers/models/upsampling.py`.
"""

import torch
from diffusers import AutoencoderKL, UNet2DConditionModel
from torch import nn


class TinyUNet(nn.Module):
    """A text-conditioned denoising UNet: timestep embedding, cross-attention, down and up
    blocks with skip connections (no middle block, to keep the suite fast)."""

    def __init__(self):
        super().__init__()
        self.unet = UNet2DConditionModel(
            sample_size=8, in_channels=4, out_channels=4, layers_per_block=1,
            block_out_channels=(8, 16), down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
            up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=8,
            attention_head_dim=2, norm_num_groups=4, mid_block_type=None)

    def forward(self, sample, timestep, text):
        out = self.unet(sample, timestep, encoder_hidden_states=text)  # rejects: tosa stablehlo
        return out.sample


class TinyVaeDecoder(nn.Module):
    """The decoder half of a VAE: latents to an image."""

    def __init__(self):
        super().__init__()
        self.vae = AutoencoderKL(
            in_channels=3, out_channels=3, latent_channels=4,
            down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
            up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
            block_out_channels=(8, 16), layers_per_block=1, norm_num_groups=4, sample_size=16)

    def forward(self, z):
        return self.vae.decode(z).sample  # rejects: tosa stablehlo


INPUTS = {
    "TinyUNet": lambda: (torch.randn(1, 4, 8, 8), torch.tensor([3]), torch.randn(1, 5, 8)),
    "TinyVaeDecoder": lambda: (torch.randn(1, 4, 8, 8),),
}
