"""A user's wrapper around a tiny `transformers` Llama (random weights, no download): its ops come
from `modeling_llama.py` (attention, MLP, RMS norm)."""

import torch  # noqa: F401  (the inputs comments use it)
from torch import nn
from transformers import LlamaConfig, LlamaModel


# torch-mlir-lens: inputs=(torch.randint(0, 64, (1, 8)),)
class LlamaWrapper(nn.Module):
    def __init__(self):
        super().__init__()
        config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64,
                             num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                             max_position_embeddings=32, bos_token_id=0, eos_token_id=0)
        self.lm = LlamaModel(config)

    def forward(self, ids):
        out = self.lm(input_ids=ids)
        return out.last_hidden_state
