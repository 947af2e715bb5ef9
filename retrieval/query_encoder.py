"""One query's vector without torch: a numpy forward pass of a BERT sentence encoder.

A query from a fresh process paid 5-6 s for importing torch and sentence-transformers to embed a
dozen words; the encoder itself is six small matrix layers. For a model that is a plain BERT with
mean pooling and normalisation (the bundled all-MiniLM-L6-v2 is), this module reads the same
weights (safetensors) and tokenizer (tokenizer.json) and computes the same vector with numpy, in
milliseconds after a fraction of a second of loading. Any other model returns None from
`load_query_encoder`, and queries go through sentence-transformers as before.

Every query vector comes from here when the model allows it, warm or cold, so a query's ranking
does not depend on which process answered it. Documents are embedded here too when a refresh has
only a few (retrieval.embed.NUMPY_MAX_TEXTS), otherwise in batches by torch; the two agree to
float32 rounding (a test holds them within 1e-5).
"""
from __future__ import annotations

import json
import math
import os

REQUIRED_FILES = ("config.json", "modules.json", "sentence_bert_config.json", "tokenizer.json", "model.safetensors")
_MEAN_POOLING = {
    "pooling_mode_cls_token": False,
    "pooling_mode_mean_tokens": True,
    "pooling_mode_max_tokens": False,
    "pooling_mode_mean_sqrt_len_tokens": False,
}
# A text longer than this many characters per token kept is tokenized up to a whitespace within
# them first (see QueryEncoder._ids): ordinary text takes 1-6 characters a token.
PREFIX_CHARS_PER_TOKEN = 32
_PIPELINE = ["sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling",
             "sentence_transformers.models.Normalize"]


def _read_json(path: str):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def supported(directory: str) -> dict | None:
    """The BERT config when the model at `directory` is one this encoder computes exactly: a BERT
    encoder with absolute positions and exact GELU, mean pooling, then normalisation."""
    try:
        if not all(os.path.isfile(os.path.join(directory, f)) for f in REQUIRED_FILES):
            return None
        config = _read_json(os.path.join(directory, "config.json"))
        modules = _read_json(os.path.join(directory, "modules.json"))
        pipeline = [m.get("type") for m in sorted(modules, key=lambda m: m.get("idx", 0))]
        pooling = _read_json(os.path.join(directory, modules[1]["path"], "config.json"))
        sbert = _read_json(os.path.join(directory, "sentence_bert_config.json"))
        config = dict(config, max_seq_length=int(sbert["max_seq_length"]))
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None
    if sbert.get("do_lower_case"):
        return None  # sentence-transformers lowercases before its tokenizer: not done here
    if pipeline != _PIPELINE or any(pooling.get(k, False) != v for k, v in _MEAN_POOLING.items()):
        return None
    if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
        return None
    if config.get("position_embedding_type", "absolute") != "absolute":
        return None
    shape = [config.get(k) for k in ("hidden_size", "num_attention_heads", "num_hidden_layers")]
    if not all(isinstance(v, int) and v > 0 for v in shape) or shape[0] % shape[1]:
        return None
    return config


def _erf(x):
    """Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7, under float32's resolution of
    the activations): numpy has no erf, and scipy would cost more to import than the encoder."""
    import numpy as np

    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


class QueryEncoder:
    """Text -> the unit float32 vector sentence-transformers would give, for supported models."""

    def __init__(self, directory: str, config: dict, max_tokens: int):
        import numpy as np
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.dim = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.layers = int(config["num_hidden_layers"])
        # The length sentence-transformers reads with (its config's, capped by ours and the model's).
        limit = min(max_tokens, config["max_seq_length"], int(config.get("max_position_embeddings", max_tokens)))
        self.tokenizer = Tokenizer.from_file(os.path.join(directory, "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=limit)
        self.limit = limit
        # BERT's normalizer works character by character and its pre-tokenizer splits at whitespace:
        # a text cut at a whitespace keeps the tokens of the words before the cut (see _ids).
        self.prefix_chars = (limit * PREFIX_CHARS_PER_TOKEN
                             if type(self.tokenizer.normalizer).__name__ == "BertNormalizer"
                             and type(self.tokenizer.pre_tokenizer).__name__ == "BertPreTokenizer" else None)
        weights = load_file(os.path.join(directory, "model.safetensors"))
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""
        w = {k[len(prefix):]: np.asarray(v, dtype=np.float32) for k, v in weights.items() if k.startswith(prefix)}
        self.w = w

        def linear(*names):
            # Kept (out, in), as torch stores them: `weight @ x.T` reads each output's weights as
            # one contiguous row, which for a query's handful of tokens measured 12 ms a query
            # against 19 ms for `x @ weight.T` made contiguous. Query, key and value share one
            # product; the originals are dropped (one copy of the weights in memory).
            return (np.ascontiguousarray(np.concatenate([w.pop(n + ".weight") for n in names])),
                    np.concatenate([w.pop(n + ".bias") for n in names]))

        self.blocks = []
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            self.blocks.append({
                "qkv": linear(p + "attention.self.query", p + "attention.self.key", p + "attention.self.value"),
                "attention": linear(p + "attention.output.dense"),
                "intermediate": linear(p + "intermediate.dense"),
                "output": linear(p + "output.dense"),
                "norm1": p + "attention.output.LayerNorm",
                "norm2": p + "output.LayerNorm",
            })

    def _norm(self, x, name: str):
        import numpy as np

        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.w[name + ".weight"] + self.w[name + ".bias"]

    @staticmethod
    def _dense(x, linear):
        weight, bias = linear
        return (weight @ x.T).T + bias

    def _ids(self, text: str) -> list[int]:
        """text's token ids, truncated to the model's length. The tokenizer reads the whole text
        before truncating (0.8 s for a 1 MB query of which 256 tokens count), so a long text is
        tokenized up to a whitespace within its first prefix_chars: when those tokens alone fill the
        length they are the whole text's first ones; otherwise (whitespace runs, words past 100
        characters read as one unknown token) the whole text is read, as before."""
        if self.prefix_chars is not None and len(text) > self.prefix_chars:
            cut = max(text.rfind(space, 0, self.prefix_chars) for space in " \t\n\r")
            if cut > 0:
                ids = self.tokenizer.encode(text[:cut]).ids
                if len(ids) >= self.limit:
                    return ids
        return self.tokenizer.encode(text).ids

    def encode(self, text: str):
        import numpy as np

        ids = np.asarray(self._ids(text), dtype=np.int64)
        n = len(ids)
        w = self.w
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n] \
            + w["embeddings.token_type_embeddings.weight"][0]
        x = self._norm(x, "embeddings.LayerNorm")
        head = self.dim // self.heads
        scale = np.float32(1.0 / math.sqrt(head))
        for block in self.blocks:
            # (n, 3 * dim) -> three (heads, n, head) arrays
            q, k, v = self._dense(x, block["qkv"]).reshape(n, 3, self.heads, head).transpose(1, 2, 0, 3)
            scores = (q @ k.transpose(0, 2, 1)) * scale
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(1, 0, 2).reshape(n, self.dim)
            x = self._norm(x + self._dense(context, block["attention"]), block["norm1"])
            inner = self._dense(x, block["intermediate"])
            inner = 0.5 * inner * (1.0 + _erf(inner / np.float32(math.sqrt(2.0))))
            x = self._norm(x + self._dense(inner, block["output"]), block["norm2"])
        pooled = x.mean(axis=0)
        norm = float(np.linalg.norm(pooled))
        return (pooled / max(norm, 1e-12)).astype(np.float32)


def load_query_encoder(directory: str, max_tokens: int) -> QueryEncoder | None:
    """The numpy encoder for the model at `directory`, or None when it is not a supported BERT or
    a package it needs (tokenizers, safetensors: installed with sentence-transformers) is missing;
    sentence-transformers then answers, as for any other model. Files that cannot be read (a
    truncated download, say) raise: sentence-transformers could not read them either."""
    config = supported(directory)
    if config is None:
        return None
    try:
        return QueryEncoder(directory, config, max_tokens)
    except (ImportError, KeyError):
        return None  # a package missing, or weights not named as a BertModel's
