"""Users' modules around library code: tiny `transformers` models (random weights, no download).

- `GPT2Wrapper`: a wrapper whose `forward` calls a whole `GPT2Model` on one line; its ops come
  from `modeling_gpt2.py` (attention, MLP, layer norms).
- `PatchEmbed`: wraps Idefics3's vision embeddings, whose `1.0 / nb_patches_h` (an integer
  reciprocal, `modeling_idefics3.py`) StableHLO cannot lower (torch-mlir 20261001).
"""

import torch  # noqa: F401  (the inputs comments use it)
from torch import nn
from transformers import GPT2Config, GPT2Model
from transformers.models.idefics3.configuration_idefics3 import Idefics3VisionConfig
from transformers.models.idefics3.modeling_idefics3 import Idefics3VisionEmbeddings


# torch-mlir-lens: inputs=(torch.randint(0, 64, (1, 8)),)
class GPT2Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        config = GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64, n_positions=16,
                            bos_token_id=0, eos_token_id=0)
        self.lm = GPT2Model(config)

    def forward(self, ids):
        out = self.lm(input_ids=ids)
        return out.last_hidden_state


# torch-mlir-lens: inputs=(torch.randn(1, 3, 32, 32), torch.ones(1, 4, 4, dtype=torch.bool))
class PatchEmbed(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = Idefics3VisionEmbeddings(
            Idefics3VisionConfig(hidden_size=16, image_size=32, patch_size=8))

    def forward(self, pixels, mask):
        return self.embed(pixels, mask)
