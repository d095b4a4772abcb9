"""A corpus beyond transformers: real classes of eight libraries of other fields, tiny configs,
random weights, nothing downloaded.

| library | field | models |
|---|---|---|
| `torch_geometric` | graph networks | GCN, GAT, GraphSAGE (mean), GIN with a global pool |
| `e3nn` | equivariant networks | a fully connected tensor product, an equivariant linear map |
| `torchdiffeq` | neural ODEs | a fixed-step RK4 solve, an adaptive dopri5 solve |
| `mambapy` | state-space models | Mamba (selective scan) |
| `rtdl_revisiting_models` | tabular | MLP, ResNet, FT-Transformer |
| `tab_transformer_pytorch` | tabular | TabTransformer |
| `vector_quantize_pytorch` | audio codecs | a vector quantizer, finite scalar quantization |
| `asteroid_filterbanks` | audio | an STFT encoder, a learnable sinc filterbank |

As a user writes it, each model sits in a small module of this file, so the product lowers it
like any user file (`ModuleJob(path=this file, module="BeyondModel", init='("gcn",)',
inputs='beyond_inputs("gcn")')`) and plain torch-mlir gets the same module and inputs:

    BeyondModel("gcn")      # the library model; its output's first tensor returned
    beyond_inputs("gcn")    # its example inputs (a tuple), the same on every call

`build(name)` raises `NotBuilt` when the library is not installed (the bench extra installs
them: `pip install -e .[bench]`). Benchmark figure 16 (bench/beyond_sweep.py) sweeps them all
against plain torch-mlir on each backend; the tests use small self-written code shaped like
these libraries instead (tests/worker/test_memo_caches.py, test_spectral_culprits.py,
test_export_reasons.py, test_refusal_reasons.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from torch import nn


class NotBuilt(Exception):
    """The model cannot be built here (its library is missing, or it fails eagerly)."""


def _graph() -> tuple[torch.Tensor, torch.Tensor]:
    """Six nodes of 8 features and ten directed edges (one self-loop)."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 8, generator=g)
    edges = torch.tensor([[0, 1, 1, 2, 3, 4, 5, 5, 2, 0],
                          [1, 0, 2, 1, 4, 3, 0, 5, 3, 5]])
    return x, edges


class _Graph(nn.Module):
    """Two message-passing layers around a `torch_geometric` conv class."""

    def __init__(self, make: Callable[[int, int], nn.Module], pool: bool = False) -> None:
        super().__init__()
        self.conv1, self.conv2 = make(8, 16), make(16, 4)
        self.pool = pool

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        from torch_geometric.nn import global_add_pool

        h = torch.relu(self.conv1(x, edge_index))
        h = self.conv2(h, edge_index)
        if self.pool:
            return global_add_pool(h, torch.zeros(h.shape[0], dtype=torch.long))
        return h


def _gcn() -> tuple[nn.Module, tuple[Any, ...]]:
    from torch_geometric.nn import GCNConv

    return _Graph(GCNConv), _graph()


def _gat() -> tuple[nn.Module, tuple[Any, ...]]:
    from torch_geometric.nn import GATConv

    return _Graph(lambda i, o: GATConv(i, o, heads=1)), _graph()


def _sage() -> tuple[nn.Module, tuple[Any, ...]]:
    from torch_geometric.nn import SAGEConv

    return _Graph(lambda i, o: SAGEConv(i, o, aggr="mean")), _graph()


def _gin() -> tuple[nn.Module, tuple[Any, ...]]:
    from torch_geometric.nn import GINConv

    return _Graph(lambda i, o: GINConv(nn.Sequential(nn.Linear(i, o), nn.ReLU())),
                  pool=True), _graph()


def _e3nn_tensor_product() -> tuple[nn.Module, tuple[Any, ...]]:
    from e3nn import o3

    tp = o3.FullyConnectedTensorProduct("2x0e + 1x1o", "1x0e + 1x1o", "2x0e + 1x1o")
    return tp, (torch.randn(4, 5), torch.randn(4, 4))


def _e3nn_linear() -> tuple[nn.Module, tuple[Any, ...]]:
    from e3nn import o3

    return o3.Linear("4x0e + 2x1o + 1x2e", "2x0e + 2x1o + 1x2e"), (torch.randn(3, 15),)


class _Dynamics(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 4))

    def forward(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.net(y)


class _Ode(nn.Module):
    """`torchdiffeq.odeint` over a time grid, as a neural ODE's forward calls it."""

    def __init__(self, method: str) -> None:
        super().__init__()
        self.func, self.method = _Dynamics(), method

    def forward(self, y0: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        from torchdiffeq import odeint

        options = {"step_size": 0.25} if self.method == "rk4" else None
        return odeint(self.func, y0, t, method=self.method, options=options)[-1]


def _ode_rk4() -> tuple[nn.Module, tuple[Any, ...]]:
    import torchdiffeq  # noqa: F401  (NotBuilt when missing)

    return _Ode("rk4"), (torch.randn(2, 4), torch.linspace(0.0, 1.0, 3))


def _ode_dopri5() -> tuple[nn.Module, tuple[Any, ...]]:
    import torchdiffeq  # noqa: F401

    return _Ode("dopri5"), (torch.randn(2, 4), torch.linspace(0.0, 1.0, 3))


def _mamba() -> tuple[nn.Module, tuple[Any, ...]]:
    from mambapy.mamba import Mamba, MambaConfig

    return Mamba(MambaConfig(d_model=16, n_layers=2, d_state=4, expand_factor=2)), \
        (torch.randn(1, 8, 16),)


def _rtdl_mlp() -> tuple[nn.Module, tuple[Any, ...]]:
    from rtdl_revisiting_models import MLP

    return MLP(d_in=6, d_out=1, n_blocks=2, d_block=16, dropout=0.0), (torch.randn(4, 6),)


def _rtdl_resnet() -> tuple[nn.Module, tuple[Any, ...]]:
    from rtdl_revisiting_models import ResNet

    return ResNet(d_in=6, d_out=1, n_blocks=2, d_block=16, d_hidden=None,
                  d_hidden_multiplier=2.0, dropout1=0.0, dropout2=0.0), (torch.randn(4, 6),)


def _rtdl_ft_transformer() -> tuple[nn.Module, tuple[Any, ...]]:
    from rtdl_revisiting_models import FTTransformer

    model = FTTransformer(n_cont_features=3, cat_cardinalities=[3, 4], d_out=1, n_blocks=1,
                          d_block=16, attention_n_heads=2, attention_dropout=0.0,
                          ffn_d_hidden=None, ffn_d_hidden_multiplier=2.0, ffn_dropout=0.0,
                          residual_dropout=0.0)
    return model, (torch.randn(4, 3), torch.tensor([[0, 1], [2, 3], [1, 0], [0, 2]]))


def _tab_transformer() -> tuple[nn.Module, tuple[Any, ...]]:
    from tab_transformer_pytorch import TabTransformer

    model = TabTransformer(categories=(3, 4), num_continuous=2, dim=8, dim_out=1, depth=1,
                           heads=2, attn_dropout=0.0, ff_dropout=0.0, mlp_act=nn.ReLU())
    return model, (torch.tensor([[0, 1], [2, 3], [1, 0]]), torch.randn(3, 2))


def _vector_quantize() -> tuple[nn.Module, tuple[Any, ...]]:
    from vector_quantize_pytorch import VectorQuantize

    return VectorQuantize(dim=8, codebook_size=16), (torch.randn(1, 6, 8),)


def _fsq() -> tuple[nn.Module, tuple[Any, ...]]:
    from vector_quantize_pytorch import FSQ

    return FSQ(levels=[5, 5, 4]), (torch.randn(1, 6, 3),)


def _stft_encoder() -> tuple[nn.Module, tuple[Any, ...]]:
    from asteroid_filterbanks import STFTFB, Encoder

    return Encoder(STFTFB(n_filters=32, kernel_size=32, stride=16)), (torch.randn(1, 1, 256),)


def _sinc_encoder() -> tuple[nn.Module, tuple[Any, ...]]:
    from asteroid_filterbanks import Encoder, ParamSincFB

    return Encoder(ParamSincFB(n_filters=16, kernel_size=65, stride=16)), \
        (torch.randn(1, 1, 256),)


MODELS: dict[str, Callable[[], tuple[nn.Module, tuple[Any, ...]]]] = {
    "gcn": _gcn, "gat": _gat, "sage": _sage, "gin": _gin,
    "e3nn_tensor_product": _e3nn_tensor_product, "e3nn_linear": _e3nn_linear,
    "ode_rk4": _ode_rk4, "ode_dopri5": _ode_dopri5,
    "mamba": _mamba,
    "rtdl_mlp": _rtdl_mlp, "rtdl_resnet": _rtdl_resnet,
    "rtdl_ft_transformer": _rtdl_ft_transformer,
    "tab_transformer": _tab_transformer,
    "vector_quantize": _vector_quantize, "fsq": _fsq,
    "stft_encoder": _stft_encoder, "sinc_encoder": _sinc_encoder,
}
LIBRARY_OF = {
    "gcn": "torch_geometric", "gat": "torch_geometric", "sage": "torch_geometric",
    "gin": "torch_geometric", "e3nn_tensor_product": "e3nn", "e3nn_linear": "e3nn",
    "ode_rk4": "torchdiffeq", "ode_dopri5": "torchdiffeq", "mamba": "mambapy",
    "rtdl_mlp": "rtdl_revisiting_models", "rtdl_resnet": "rtdl_revisiting_models",
    "rtdl_ft_transformer": "rtdl_revisiting_models", "tab_transformer": "tab_transformer_pytorch",
    "vector_quantize": "vector_quantize_pytorch", "fsq": "vector_quantize_pytorch",
    "stft_encoder": "asteroid_filterbanks", "sinc_encoder": "asteroid_filterbanks",
}


def architectures() -> list[str]:
    """Every model of the corpus, by name."""
    return list(MODELS)


def _first_tensor(out: Any) -> torch.Tensor | None:
    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, tuple | list):
        for item in out:
            found = _first_tensor(item)
            if found is not None:
                return found
    return None


@functools.cache
def _inputs(name: str) -> tuple[Any, ...]:
    return build(name)[1]


def build(name: str) -> tuple[nn.Module, tuple[Any, ...]]:
    """The model (eval mode, seeded) and its inputs; NotBuilt with the reason if it fails."""
    make = MODELS.get(name)
    if make is None:
        raise NotBuilt(f"no model {name!r}")
    torch.manual_seed(0)
    try:
        model, inputs = make()
        model.eval()
        with torch.no_grad():
            model(*inputs)
    except ImportError as exc:
        raise NotBuilt(f"{LIBRARY_OF[name]} is not installed: {exc}") from exc
    except Exception as exc:  # the library's own eager failure on this input
        raise NotBuilt(f"eager: {type(exc).__name__}: {str(exc)[:160]}") from exc
    return model, inputs


def beyond_inputs(name: str) -> tuple[Any, ...]:
    """The example inputs of `name` (the same values every call)."""
    return tuple(t.clone() if isinstance(t, torch.Tensor) else t for t in _inputs(name))


class BeyondModel(nn.Module):
    """A user's module around one model of the corpus: the first tensor of its output."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.model = build(name)[0]

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor | None:
        return _first_tensor(self.model(*inputs))
