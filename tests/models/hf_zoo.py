"""Real `transformers` architectures as a user writes them: a small nn.Module wrapping the
library's model, built from a tiny config with random weights (nothing is downloaded).

Used by the model-zoo tests and by benchmark figure 8 (its fourteen architectures; Gemma, OPT,
GPT-NeoX and ELECTRA, at the end, complete the text models that `hf_zoo_dynamic.py` and figure
11 verify with dynamic batch and sequence). Each wrapper returns plain tensors (the
library's output classes and caches are not what a compiler takes). Sizes are tiny on purpose:
what is exercised is the library's code (attention, RoPE, norms, convolutions), not its scale.
"""

import torch  # noqa: F401  (the inputs comments use it)
import transformers as tf
from torch import nn

VOCAB = 96
SEQ = 8
TEXT = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, max_position_embeddings=64)
DECODER = dict(TEXT, num_key_value_heads=2, use_cache=False)


# torch-mlir-lens: inputs=(torch.randint(0, 96, (1, 8)),)
class TinyGPT2(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = tf.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                            use_cache=False)
        self.lm = tf.GPT2Model(cfg).eval()

    def forward(self, ids):
        return self.lm(input_ids=ids).last_hidden_state


# torch-mlir-lens: inputs=(torch.randint(0, 96, (1, 8)),)
class TinyLlama(nn.Module):
    def __init__(self):
        super().__init__()
        self.lm = tf.LlamaModel(tf.LlamaConfig(**DECODER)).eval()

    def forward(self, ids):
        return self.lm(input_ids=ids).last_hidden_state


# torch-mlir-lens: inputs=(torch.randint(0, 96, (1, 8)),)
class TinyQwen2(nn.Module):
    def __init__(self):
        super().__init__()
        self.lm = tf.Qwen2Model(tf.Qwen2Config(**DECODER)).eval()

    def forward(self, ids):
        return self.lm(input_ids=ids).last_hidden_state


# torch-mlir-lens: inputs=(torch.randint(0, 96, (1, 8)),)
class TinyMistral(nn.Module):
    def __init__(self):
        super().__init__()
        self.lm = tf.MistralModel(tf.MistralConfig(**DECODER)).eval()

    def forward(self, ids):
        return self.lm(input_ids=ids).last_hidden_state


# torch-mlir-lens: inputs=(torch.randint(0, 96, (1, 8)),)
class TinyPhi3(nn.Module):
    def __init__(self):
        super().__init__()
        self.lm = tf.Phi3Model(tf.Phi3Config(**DECODER, pad_token_id=0)).eval()

    def forward(self, ids):
        return self.lm(input_ids=ids).last_hidden_state


# torch-mlir-lens: inputs=(torch.randint(0, 96, (1, 8)),)
class TinyBert(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = tf.BertModel(tf.BertConfig(**TEXT), add_pooling_layer=False).eval()

    def forward(self, ids):
        return self.enc(input_ids=ids).last_hidden_state


# torch-mlir-lens: inputs=(torch.randint(0, 96, (1, 8)),)
class TinyDistilBert(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = tf.DistilBertConfig(vocab_size=VOCAB, dim=32, hidden_dim=64, n_layers=2, n_heads=4,
                                  max_position_embeddings=64)
        self.enc = tf.DistilBertModel(cfg).eval()

    def forward(self, ids):
        return self.enc(input_ids=ids).last_hidden_state


# torch-mlir-lens: inputs=(torch.randint(3, 96, (1, 8)),)
class TinyRoberta(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = tf.RobertaModel(tf.RobertaConfig(**TEXT), add_pooling_layer=False).eval()

    def forward(self, ids):
        return self.enc(input_ids=ids).last_hidden_state


# torch-mlir-lens: inputs=(torch.randint(0, 96, (1, 8)),)
class TinyT5Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = tf.T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                          num_heads=4)
        self.enc = tf.T5EncoderModel(cfg).eval()

    def forward(self, ids):
        return self.enc(input_ids=ids).last_hidden_state


# torch-mlir-lens: inputs=(torch.randn(1, 3, 32, 32),)
class TinyViT(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = tf.ViTConfig(image_size=32, patch_size=8, hidden_size=32, intermediate_size=64,
                           num_hidden_layers=2, num_attention_heads=4)
        self.enc = tf.ViTModel(cfg, add_pooling_layer=False).eval()

    def forward(self, pixels):
        return self.enc(pixel_values=pixels).last_hidden_state


# torch-mlir-lens: inputs=(torch.randn(1, 3, 32, 32),)
class TinyResNet(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = tf.ResNetConfig(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1])
        self.net = tf.ResNetModel(cfg).eval()

    def forward(self, pixels):
        return self.net(pixel_values=pixels).pooler_output


# torch-mlir-lens: inputs=(torch.randn(1, 3, 32, 32),)
class TinyConvNext(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = tf.ConvNextConfig(hidden_sizes=[8, 16], depths=[1, 1], num_stages=2)
        self.net = tf.ConvNextModel(cfg).eval()

    def forward(self, pixels):
        return self.net(pixel_values=pixels).pooler_output


# torch-mlir-lens: inputs=(torch.randn(1, 16, 60),)
class TinyWhisperEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = tf.WhisperConfig(vocab_size=VOCAB, num_mel_bins=16, d_model=32, encoder_layers=2,
                               encoder_attention_heads=4, encoder_ffn_dim=64, decoder_layers=1,
                               decoder_attention_heads=4, decoder_ffn_dim=64,
                               max_source_positions=30, max_target_positions=16,
                               pad_token_id=0, bos_token_id=1, eos_token_id=2,
                               decoder_start_token_id=1)
        self.enc = tf.WhisperModel(cfg).get_encoder().eval()

    def forward(self, features):
        return self.enc(input_features=features).last_hidden_state


# torch-mlir-lens: inputs=(torch.randn(1, 400),)
class TinyWav2Vec2(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = tf.Wav2Vec2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                intermediate_size=64, conv_dim=(16, 16), conv_stride=(5, 2),
                                conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                                num_conv_pos_embedding_groups=4, vocab_size=VOCAB)
        self.enc = tf.Wav2Vec2Model(cfg).eval()

    def forward(self, audio):
        return self.enc(input_values=audio).last_hidden_state


# torch-mlir-lens: inputs=(torch.randint(0, 96, (1, 8)),)
class TinyGemma(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = tf.GemmaConfig(**DECODER, head_dim=8)
        self.lm = tf.GemmaModel(cfg).eval()

    def forward(self, ids):
        return self.lm(input_ids=ids).last_hidden_state


# torch-mlir-lens: inputs=(torch.randint(0, 96, (1, 8)),)
class TinyOPT(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = tf.OPTConfig(vocab_size=VOCAB, hidden_size=32, ffn_dim=64, num_hidden_layers=2,
                           num_attention_heads=4, max_position_embeddings=64, use_cache=False)
        self.lm = tf.OPTModel(cfg).eval()

    def forward(self, ids):
        return self.lm(input_ids=ids).last_hidden_state


# torch-mlir-lens: inputs=(torch.randint(0, 96, (1, 8)),)
class TinyGPTNeoX(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = tf.GPTNeoXConfig(**TEXT, use_cache=False)
        self.lm = tf.GPTNeoXModel(cfg).eval()

    def forward(self, ids):
        return self.lm(input_ids=ids).last_hidden_state


# torch-mlir-lens: inputs=(torch.randint(0, 96, (1, 8)),)
class TinyElectra(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = tf.ElectraConfig(vocab_size=VOCAB, embedding_size=32, hidden_size=32,
                               intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                               max_position_embeddings=64)
        self.enc = tf.ElectraModel(cfg).eval()

    def forward(self, ids):
        return self.enc(input_ids=ids).last_hidden_state
