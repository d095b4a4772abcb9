"""The text models of `hf_zoo.py` exported for serving: batch and sequence length dynamic.

Each class is its zoo model with an example of batch 2 (torch.export specializes sizes 0 and 1)
and a `dynamic=` comment, as a user writes it. BERT, DistilBERT and ELECTRA carry the bound
torch.export asks for (their position embeddings hold 64 positions: "seq<=64", the quick fix of
the `Constraints violated (seq)` error); GPT-2 does not export (torch's decompositions meet a
view of a non-contiguous tensor inside `transformers`' `Conv1D`), which the tests expect.
Used by tests/test_hf_dynamic.py and benchmark figure 11.
"""

import torch  # noqa: F401  (the inputs comments use it)
from hf_zoo import (
    TinyBert,
    TinyDistilBert,
    TinyElectra,
    TinyGemma,
    TinyGPT2,
    TinyGPTNeoX,
    TinyLlama,
    TinyMistral,
    TinyOPT,
    TinyPhi3,
    TinyQwen2,
    TinyRoberta,
    TinyT5Encoder,
)


# torch-mlir-lens: inputs=(torch.randint(0, 96, (2, 8)),); dynamic={"ids": {0: "batch", 1: "seq"}}
class DynamicGPT2(TinyGPT2):
    pass


# torch-mlir-lens: inputs=(torch.randint(0, 96, (2, 8)),); dynamic={"ids": {0: "batch", 1: "seq"}}
class DynamicLlama(TinyLlama):
    pass


# torch-mlir-lens: inputs=(torch.randint(0, 96, (2, 8)),); dynamic={"ids": {0: "batch", 1: "seq"}}
class DynamicQwen2(TinyQwen2):
    pass


# torch-mlir-lens: inputs=(torch.randint(0, 96, (2, 8)),); dynamic={"ids": {0: "batch", 1: "seq"}}
class DynamicMistral(TinyMistral):
    pass


# torch-mlir-lens: inputs=(torch.randint(0, 96, (2, 8)),); dynamic={"ids": {0: "batch", 1: "seq"}}
class DynamicPhi3(TinyPhi3):
    pass


# torch-mlir-lens: inputs=(torch.randint(0, 96, (2, 8)),)
# torch-mlir-lens: dynamic={"ids": {0: "batch", 1: "seq<=64"}}
class DynamicBert(TinyBert):
    pass


# torch-mlir-lens: inputs=(torch.randint(0, 96, (2, 8)),)
# torch-mlir-lens: dynamic={"ids": {0: "batch", 1: "seq<=64"}}
class DynamicDistilBert(TinyDistilBert):
    pass


# torch-mlir-lens: inputs=(torch.randint(3, 96, (2, 8)),); dynamic={"ids": {0: "batch", 1: "seq"}}
class DynamicRoberta(TinyRoberta):
    pass


# torch-mlir-lens: inputs=(torch.randint(0, 96, (2, 8)),); dynamic={"ids": {0: "batch", 1: "seq"}}
class DynamicT5Encoder(TinyT5Encoder):
    pass


# torch-mlir-lens: inputs=(torch.randint(0, 96, (2, 8)),); dynamic={"ids": {0: "batch", 1: "seq"}}
class DynamicGemma(TinyGemma):
    pass


# torch-mlir-lens: inputs=(torch.randint(0, 96, (2, 8)),); dynamic={"ids": {0: "batch", 1: "seq"}}
class DynamicOPT(TinyOPT):
    pass


# torch-mlir-lens: inputs=(torch.randint(0, 96, (2, 8)),); dynamic={"ids": {0: "batch", 1: "seq"}}
class DynamicGPTNeoX(TinyGPTNeoX):
    pass


# torch-mlir-lens: inputs=(torch.randint(0, 96, (2, 8)),)
# torch-mlir-lens: dynamic={"ids": {0: "batch", 1: "seq<=64"}}
class DynamicElectra(TinyElectra):
    pass
