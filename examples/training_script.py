"""A typical training script: a model, then a training loop at top level.

Torch-MLIR Lens runs only the imports, definitions and assignments of this file. The loop and the
`__main__` block below must never run on a hover: each would leave a sentinel file behind (next to
this file, or where TORCH_MLIR_LENS_SENTINEL_DIR points, as the tests do).
"""

import os
from pathlib import Path

import torch
import torch.nn as nn

SENTINEL_DIR = Path(os.environ.get("TORCH_MLIR_LENS_SENTINEL_DIR", Path(__file__).parent))
EPOCHS = 3


# torch-mlir-lens: inputs=(torch.randn(8, 10),)
class Regressor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


torch.manual_seed(0)
model = Regressor()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.randn(64, 10)
target = data.sum(dim=1)

for epoch in range(EPOCHS):  # top-level loop: skipped by the loader
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(data), target)
    loss.backward()
    optimizer.step()
    (SENTINEL_DIR / "training_loop_ran.txt").write_text(f"epoch {epoch}\n")
    print(f"epoch {epoch}: loss {loss.item():.4f}")

print("training done")  # top-level call: skipped too

if __name__ == "__main__":  # never run by the loader
    (SENTINEL_DIR / "main_block_ran.txt").write_text("main\n")
    torch.save(model.state_dict(), SENTINEL_DIR / "regressor.pt")
