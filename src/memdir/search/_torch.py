"""The BERT forward pass in PyTorch, for embedding many passages at once (indexing).

numpy runs the model at ~150 passages/s on this project's 2-core machines: its float32 matrix products are
near what OpenBLAS gives, and the rest (attention per head, GELU, layer norms) adds passes over memory. PyTorch
with bfloat16 matrix products (oneDNN, on CPUs with native bfloat16: AVX512-BF16 or AMX) and fused attention
runs the same weights about 2-3x faster, with embeddings within ~1e-3 per component of float32 (cosine
> 0.9999). Importing torch takes ~1 s, so only large batches come here (`BULK`); queries and small updates
stay on numpy. torch is a dependency of the ``[semantic]`` extra already (through the packaged model); where it
cannot be imported, or the CPU has no native bfloat16 (where torch is no faster than numpy), `TorchBert.load`
returns None and numpy does everything.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["BULK", "TorchBert"]

BULK = 256  # texts from which an encode call goes through torch
_lock = threading.Lock()
_torch: Any = None  # the module, once imported (typed Any: mypy need not analyse torch to check this file)


def _import() -> Any:
    global _torch
    with _lock:
        if _torch is None and importlib.util.find_spec("torch") is not None:
            _torch = importlib.import_module("torch")
        return _torch


class TorchBert:
    """A loaded model's weights as torch tensors (sharing the numpy arrays' memory) and its forward pass."""

    def __init__(self, torch: Any, weights: dict[str, NDArray[Any]], *, heads: int, layers: int, eps: float) -> None:
        self.torch = torch
        self.w = {name: torch.from_numpy(array) for name, array in weights.items()}
        for name, tensor in self.w.items():  # matrix weights cast once, not at every product (~10% faster)
            if tensor.ndim == 2 and not name.startswith("embeddings."):
                self.w[name] = tensor.to(torch.bfloat16)
        self.heads, self.layers, self.eps = heads, layers, eps

    @classmethod
    def load(cls, weights: dict[str, NDArray[Any]], *, heads: int, layers: int, eps: float) -> TorchBert | None:
        torch = _import()
        if torch is None or not _native_bf16(torch):
            return None
        return cls(torch, weights, heads=heads, layers=layers, eps=eps)

    def forward(self, ids_list: list[list[int]], cls_pooling: bool) -> NDArray[np.float32]:
        """L2-normalised sentence embeddings for one batch of token id lists."""
        torch = self.torch
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
            ids, mask = self._pad(ids_list)
            x = self._embed(ids)
            keep = mask[:, None, None, :]  # attention to padding is masked out
            for layer in range(self.layers):
                x = self._layer(x, keep, f"encoder.layer.{layer}.")
            x = x.float()
            if cls_pooling:
                pooled = x[:, 0]
            else:
                weights = mask[:, :, None].float()
                pooled = (x * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            result: NDArray[np.float32] = torch.nn.functional.normalize(pooled, dim=1).numpy().astype(np.float32)
        return result

    def _pad(self, ids_list: list[list[int]]) -> tuple[Any, Any]:
        torch = self.torch
        width = max(len(ids) for ids in ids_list)
        ids = torch.zeros((len(ids_list), width), dtype=torch.long)
        mask = torch.zeros((len(ids_list), width), dtype=torch.bool)
        for row, seq in enumerate(ids_list):
            ids[row, : len(seq)] = torch.tensor(seq)
            mask[row, : len(seq)] = True
        return ids, mask

    def _embed(self, ids: Any) -> Any:
        w = self.w
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][: ids.shape[1]]
        return self._norm(x + w["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")

    def _norm(self, x: Any, name: str) -> Any:
        return self.torch.nn.functional.layer_norm(
            x, (x.shape[-1],), self.w[name + ".weight"], self.w[name + ".bias"], self.eps
        )

    def _linear(self, x: Any, name: str) -> Any:
        return x @ self.w[name + ".weight"] + self.w[name + ".bias"]  # weights stored (in, out)

    def _layer(self, x: Any, keep: Any, p: str) -> Any:
        functional = self.torch.nn.functional
        n, t, d = x.shape

        def heads(name: str) -> Any:
            return self._linear(x, p + name).view(n, t, self.heads, d // self.heads).transpose(1, 2)

        q, k, v = heads("attention.self.query"), heads("attention.self.key"), heads("attention.self.value")
        context = functional.scaled_dot_product_attention(q, k, v, attn_mask=keep).transpose(1, 2).reshape(n, t, d)
        x = self._norm(x + self._linear(context, p + "attention.output.dense"), p + "attention.output.LayerNorm")
        hidden = functional.gelu(self._linear(x, p + "intermediate.dense"))  # exact (erf) GELU, as BERT's
        return self._norm(x + self._linear(hidden, p + "output.dense"), p + "output.LayerNorm")


def _native_bf16(torch: Any) -> bool:
    """Whether oneDNN computes bfloat16 natively here (elsewhere it emulates it, slower than float32)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False
