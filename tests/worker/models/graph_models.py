"""Models for the graph view's tests: a ResNet-50's depth at toy widths (the structure of the
biggest convolutional model people open, with bottleneck blocks in four stages), and a small
model with ops some backends reject."""

import torch
import transformers as tf
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(1, 3, 32, 32),)
class ResNet50Shape(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = tf.ResNetConfig(embedding_size=8, hidden_sizes=[16, 32, 64, 128],
                              depths=[3, 4, 6, 3], layer_type="bottleneck")
        self.net = tf.ResNetModel(cfg).eval()

    def forward(self, pixels):
        return self.net(pixel_values=pixels).pooler_output  # graph: resnet call


# torch-mlir-lens: inputs=(torch.rand(4, 16),)
class Rejected(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, p):
        p = torch.sigmoid(self.proj(p))  # graph: proj
        z = torch.erfinv(2.0 * p - 1.0)  # graph: erfinv
        return torch.roll(z, 1, 1) + z  # graph: roll
