"""Hostile: the constructor starts a non-daemon thread that never ends (it would block a clean
interpreter exit) and writes a heartbeat file, so the test can tell whether it still runs."""

import pathlib
import threading
import time

import torch
from torch import nn

HEARTBEAT = pathlib.Path(__file__).with_name("thread_heartbeat.txt")


def beat():
    n = 0
    while True:
        n += 1
        HEARTBEAT.write_text(str(n))
        time.sleep(0.05)


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class StrayThreads(nn.Module):
    def __init__(self):
        super().__init__()
        threading.Thread(target=beat, name="hostile-beat", daemon=False).start()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.fc(x))
