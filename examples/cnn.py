"""A small convolutional classifier for 32x32 RGB images (CIFAR-sized).

Padding, pooling and a flatten: the ops that make `tensor.pad` and pooling windows show up in
the Linalg IR.
"""

import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(1, 3, 32, 32),)
class SmallCNN(nn.Module):
    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3, padding=1)
        self.avg = nn.AdaptiveAvgPool2d((4, 4))
        self.fc = nn.Linear(16 * 4 * 4, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(torch.relu(self.conv1(x)))  # 32x32 -> 16x16
        x = torch.relu(self.conv2(x))
        x = self.avg(x)  # 16x16 -> 4x4
        x = torch.flatten(x, 1)
        return self.fc(x)
