"""Side effects at every level of a file, each leaving a sentinel file next to it.

Allowed to run (trusted sessions only): the assignment and the constructor.
Never allowed: the top-level call, the top-level loop, the `__main__` block.
"""

import pathlib

import torch
from torch import nn

HERE = pathlib.Path(__file__).resolve().parent
IMPORTED = (HERE / "sentinel_assignment").write_text("an assignment ran")


def touch(name):
    (HERE / name).write_text(name)


touch("sentinel_toplevel_call")

for _ in range(1):
    touch("sentinel_toplevel_loop")


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Sentinel(nn.Module):
    def __init__(self):
        super().__init__()
        touch("sentinel_init")
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        return torch.relu(y)


if __name__ == "__main__":
    touch("sentinel_main")
