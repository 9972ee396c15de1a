#!/usr/bin/env python3
"""Trains models/bible-drelu.gguf: a small LLaMA-architecture model with a dReLU FFN
(relu(gate x) * relu(up x)) on the King James Bible, for Hearth's sparse FFN paths; with
--ffn swiglu, models/bible-swiglu.gguf: the same model with LLaMA's own SwiGLU FFN
(silu(gate x) * (up x)) and no sparsity training, for threshold sparsity (docs/threshold.md).

Everything is seeded and runs on one CPU thread, so the same command on the same
software gives the same file. See docs/model.md for the exact command and results.

Steps: dump the text with the `bible` program (Debian package bible-kjv), split off
the last 5% as held-out text, learn a byte-level BPE vocabulary (GPT-2 byte mapping
and pre-split), write it into a vocab-only GGUF and tokenize the corpus with
`hearth tokenize` (so training sees exactly the tokens Hearth makes), train, write
the GGUF, and score the held-out file the way `hearth perplexity` does.
"""
import argparse
import collections
import json
import math
import os
import re
import struct
import subprocess
import sys
import time

# One thread: the development machines are small and shared.
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

BOS_TEXT = "<|endoftext|>"
VERSE_RE = re.compile(r"^\S+?\d+:\d+ ")
# GPT-2's pre-tokenizer pattern; the text is pure ASCII, so the ASCII classes give the
# same split as \p{L} and \p{N}.
PRE_RE = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+")


# ---------------------------------------------------------------- data

def dump_bible():
    out = subprocess.run(["bible", "-f", "Gen1:1-Rev22:21"], stdin=subprocess.DEVNULL,
                         capture_output=True, check=True).stdout.decode("ascii")
    verses = []
    for line in out.splitlines():
        m = VERSE_RE.match(line)
        if not m:
            raise SystemExit("unexpected line from bible: %r" % line[:80])
        verses.append(line[m.end():].strip())
    if len(verses) != 31102:
        raise SystemExit("expected 31102 verses, got %d" % len(verses))
    return verses


def split_text(verses, heldout_frac, heldout_file_bytes):
    """Train on the first (1 - heldout_frac) of the bytes (whole verses), hold out the rest;
    the shipped held-out file is the first heldout_file_bytes of the held-out verses."""
    total = sum(len(v) + 1 for v in verses)
    acc, cut = 0, len(verses)
    for i, v in enumerate(verses):
        if acc >= total * (1 - heldout_frac):
            cut = i
            break
        acc += len(v) + 1
    train = "".join(v + "\n" for v in verses[:cut])
    held = "".join(v + "\n" for v in verses[cut:])
    small, n = [], 0
    for v in verses[cut:]:
        if n + len(v) + 1 > heldout_file_bytes:
            break
        small.append(v + "\n")
        n += len(v) + 1
    return train, held, "".join(small), cut


# ---------------------------------------------------------------- BPE vocabulary

def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def learn_bpe(text, n_vocab):
    """Greedy BPE on pre-split words: most frequent adjacent pair first, ties broken by
    the pair's text so the result does not depend on dict order."""
    b2u = bytes_to_unicode()
    words = collections.Counter(PRE_RE.findall(text))
    seqs = [[b2u[b] for b in w.encode("utf-8")] for w in words]
    counts = [words[w] for w in words]
    tokens = [b2u[b] for b in range(256)]
    known = set(tokens)
    merges = []
    target = n_vocab - 1  # the last id is the special token
    while len(tokens) < target:
        pairs = collections.Counter()
        for s, c in zip(seqs, counts):
            for a, b in zip(s, s[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        best = max(pairs.items(), key=lambda kv: (kv[1], [-ord(ch) for ch in kv[0][0] + " " + kv[0][1]]))[0]
        a, b = best
        merged = a + b
        merges.append(a + " " + b)
        if merged not in known:
            known.add(merged)
            tokens.append(merged)
        for s in seqs:
            i = 0
            while i < len(s) - 1:
                if s[i] == a and s[i + 1] == b:
                    s[i:i + 2] = [merged]
                i += 1
    tokens.append(BOS_TEXT)
    types = [1] * (len(tokens) - 1) + [3]
    return tokens, types, merges


# ---------------------------------------------------------------- GGUF writer

GGUF_U32, GGUF_I32, GGUF_F32, GGUF_BOOL, GGUF_STR, GGUF_ARR = 4, 5, 6, 7, 8, 9
GGML_F32 = 0
ALIGN = 32


def _gstr(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _kv(key, vtype, value):
    out = _gstr(key) + struct.pack("<I", vtype)
    if vtype == GGUF_U32:
        return out + struct.pack("<I", value)
    if vtype == GGUF_F32:
        return out + struct.pack("<f", value)
    if vtype == GGUF_BOOL:
        return out + struct.pack("<B", 1 if value else 0)
    if vtype == GGUF_STR:
        return out + _gstr(value)
    etype, items = value
    out += struct.pack("<IQ", etype, len(items))
    if etype == GGUF_STR:
        return out + b"".join(_gstr(x) for x in items)
    if etype == GGUF_I32:
        return out + struct.pack("<%di" % len(items), *items)
    raise ValueError(etype)


def write_gguf(path, kvs, tensors):
    """kvs: list of (key, type, value); tensors: list of (name, float32 ndarray in
    row-major torch order). GGUF dims are the reversed numpy shape (ggml order)."""
    head = struct.pack("<4sIQQ", b"GGUF", 3, len(tensors), len(kvs))
    head += b"".join(_kv(*kv) for kv in kvs)
    infos, offset, blobs = b"", 0, []
    for name, arr in tensors:
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        dims = list(reversed(arr.shape))
        infos += _gstr(name) + struct.pack("<I", len(dims)) + struct.pack("<%dQ" % len(dims), *dims)
        infos += struct.pack("<IQ", GGML_F32, offset)
        blob = arr.tobytes()
        pad = (-len(blob)) % ALIGN
        blobs.append(blob + b"\0" * pad)
        offset += len(blob) + pad
    meta = head + infos
    meta += b"\0" * ((-len(meta)) % ALIGN)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(meta)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def tokenizer_kvs(tokens, types, merges, bos):
    return [
        ("tokenizer.ggml.model", GGUF_STR, "gpt2"),
        ("tokenizer.ggml.pre", GGUF_STR, "gpt-2"),
        ("tokenizer.ggml.tokens", GGUF_ARR, (GGUF_STR, tokens)),
        ("tokenizer.ggml.token_type", GGUF_ARR, (GGUF_I32, types)),
        ("tokenizer.ggml.merges", GGUF_ARR, (GGUF_STR, merges)),
        ("tokenizer.ggml.bos_token_id", GGUF_U32, bos),
        ("tokenizer.ggml.eos_token_id", GGUF_U32, bos),
        ("tokenizer.ggml.add_bos_token", GGUF_BOOL, True),
        ("tokenizer.ggml.add_eos_token", GGUF_BOOL, False),
    ]


def hearth_tokenize(hearth, gguf, text_path):
    out = subprocess.run([hearth, "tokenize", "-m", gguf, "-f", text_path, "--ids", "--no-bos", "--no-special"],
                         capture_output=True, check=True).stdout.decode()
    return np.array([int(x) for x in out.split()], dtype=np.int64)


# ---------------------------------------------------------------- model

def rope(x, cos, sin):
    """LLaMA 'normal' RoPE: rotates consecutive pairs (2i, 2i+1). x: [B, H, T, hd]."""
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


class Block(nn.Module):
    def __init__(self, d, n_head, n_ff, ffn):
        super().__init__()
        self.n_head = n_head
        self.ffn = ffn
        self.attn_norm = nn.Parameter(torch.ones(d))
        self.wq = nn.Linear(d, d, bias=False)
        self.wk = nn.Linear(d, d, bias=False)
        self.wv = nn.Linear(d, d, bias=False)
        self.wo = nn.Linear(d, d, bias=False)
        self.ffn_norm = nn.Parameter(torch.ones(d))
        self.gate = nn.Linear(d, n_ff, bias=False)
        self.up = nn.Linear(d, n_ff, bias=False)
        self.down = nn.Linear(n_ff, d, bias=False)

    def forward(self, x, cos, sin, mask, eps):
        B, T, D = x.shape
        hd = D // self.n_head
        h = rms_norm(x, self.attn_norm, eps)
        q = self.wq(h).view(B, T, self.n_head, hd).transpose(1, 2)
        k = self.wk(h).view(B, T, self.n_head, hd).transpose(1, 2)
        v = self.wv(h).view(B, T, self.n_head, hd).transpose(1, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        att = att.masked_fill(mask[:T, :T], float("-inf")).softmax(-1)
        x = x + self.wo((att @ v).transpose(1, 2).reshape(B, T, D))
        h = rms_norm(x, self.ffn_norm, eps)
        if self.ffn == "swiglu":
            g = F.silu(self.gate(h))
            act = g * self.up(h)
        else:
            g = F.relu(self.gate(h))
            act = g * F.relu(self.up(h))  # dReLU
        return x + self.down(act), (act, g)


class Model(nn.Module):
    def __init__(self, n_vocab, d, n_layer, n_head, n_ff, n_ctx, rope_base, eps, ffn="drelu"):
        super().__init__()
        self.eps = eps
        self.embd = nn.Embedding(n_vocab, d)  # tied: also the output matrix
        self.blocks = nn.ModuleList(Block(d, n_head, n_ff, ffn) for _ in range(n_layer))
        self.out_norm = nn.Parameter(torch.ones(d))
        hd = d // n_head
        theta = rope_base ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
        ang = torch.arange(n_ctx, dtype=torch.float64)[:, None] * theta[None, :]
        self.register_buffer("cos", ang.cos().float(), persistent=False)
        self.register_buffer("sin", ang.sin().float(), persistent=False)
        self.register_buffer("mask", torch.triu(torch.ones(n_ctx, n_ctx, dtype=torch.bool), 1), persistent=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * n_layer) if name.endswith(("wo.weight", "down.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.embd(idx)
        cos, sin = self.cos[:T], self.sin[:T]
        acts, gates = [], []
        for b in self.blocks:
            x, (a, g) = b(x, cos, sin, self.mask, self.eps)
            acts.append(a)
            gates.append(g)
        self.gates = gates
        return rms_norm(x, self.out_norm, self.eps) @ self.embd.weight.t(), acts


def gguf_tensors(model):
    sd = {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    t = [("token_embd.weight", sd["embd.weight"])]
    for i in range(len(model.blocks)):
        p = "blocks.%d." % i
        for gname, tname in (("attn_norm", "attn_norm"), ("attn_q", "wq.weight"), ("attn_k", "wk.weight"),
                             ("attn_v", "wv.weight"), ("attn_output", "wo.weight"), ("ffn_norm", "ffn_norm"),
                             ("ffn_gate", "gate.weight"), ("ffn_up", "up.weight"), ("ffn_down", "down.weight")):
            t.append(("blk.%d.%s.weight" % (i, gname), sd[p + tname]))
    t.append(("output_norm.weight", sd["out_norm"]))
    return t


# ---------------------------------------------------------------- evaluation

@torch.no_grad()
def perplexity_like_hearth(model, toks, bos, n_ctx, byte_len, max_chunks=0):
    """hearth perplexity / llama.cpp: the text's tokens with BOS in front, chunks of n_ctx
    whose first token becomes BOS, only the second half scored."""
    toks = np.concatenate([[bos], toks])
    n_chunks = len(toks) // n_ctx
    if max_chunks:
        n_chunks = min(n_chunks, max_chunks)
    first = n_ctx // 2
    nll, count, nbytes = 0.0, 0, 0
    for k in range(n_chunks):
        buf = torch.tensor(toks[k * n_ctx:(k + 1) * n_ctx]).clone()
        buf[0] = bos
        logits, _ = model(buf[None])
        lp = logits[0].double().log_softmax(-1)
        tgt = torch.tensor(toks[k * n_ctx + first + 1:(k + 1) * n_ctx])
        nll -= lp[first:n_ctx - 1].gather(1, tgt[:, None]).sum().item()
        count += len(tgt)
        nbytes += int(byte_len[tgt.numpy()].sum())
    return math.exp(nll / count), nll / math.log(2) / nbytes, count


@torch.no_grad()
def sparsity(model, toks, bos, n_ctx, n_seq):
    """Per layer: the fraction of neurons whose gate is positive (what `hearth run --stats`
    reports as fired: Hearth's exact path computes only those), and the fraction whose
    activation relu(gate) * relu(up) is nonzero."""
    gate, act = np.zeros(len(model.blocks)), np.zeros(len(model.blocks))
    for s in range(n_seq):
        buf = torch.tensor(np.concatenate([[bos], toks[s * n_ctx:(s + 1) * n_ctx - 1]]))
        _, acts = model(buf[None])
        gate += np.array([(g > 0).float().mean().item() for g in model.gates])
        act += np.array([(a > 0).float().mean().item() for a in acts])
    return gate / n_seq, act / n_seq


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hearth", default="build/hearth", help="the hearth binary (for tokenize)")
    ap.add_argument("--ffn", choices=("drelu", "swiglu"), default="drelu",
                    help="FFN activation; swiglu trains without the L1 penalty and skips the sparsifying fine-tune")
    ap.add_argument("--out", default=None, help="default: models/bible-FFN.gguf")
    ap.add_argument("--heldout-out", default="models/heldout.txt")
    ap.add_argument("--work", default=None, help="intermediate files (default: /tmp/hearth-train, "
                    "/tmp/hearth-train-swiglu for --ffn swiglu)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--n-vocab", type=int, default=1024)
    ap.add_argument("--n-embd", type=int, default=160)
    ap.add_argument("--n-layer", type=int, default=4)
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--n-ff", type=int, default=640)
    ap.add_argument("--n-ctx", type=int, default=256)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--l1", type=float, default=2.0,
                    help="final weight of the L1 penalty on FFN activations (ramped up over the second half)")
    ap.add_argument("--heldout-frac", type=float, default=0.05)
    ap.add_argument("--heldout-file-bytes", type=int, default=80000)
    ap.add_argument("--sparsify-steps", type=int, default=300)
    ap.add_argument("--sparsify-lr", type=float, default=5e-4)
    ap.add_argument("--sparsify-l1", type=float, default=2.0,
                    help="weight of the L1 penalty on relu(gate) in the sparsifying fine-tune")
    ap.add_argument("--resume", action="store_true",
                    help="skip the main training: start the fine-tune from WORK/model.pt of an earlier run "
                         "with the same arguments (gives the same file, since the fine-tune starts afresh)")
    ap.add_argument("--export-only", action="store_true", help="write the GGUF from the saved final checkpoint")
    args = ap.parse_args()
    if args.out is None:
        args.out = "models/bible-%s.gguf" % args.ffn
    if args.work is None:
        args.work = "/tmp/hearth-train" if args.ffn == "drelu" else "/tmp/hearth-train-swiglu"
    if args.ffn == "swiglu":
        args.l1 = 0.0  # a dense model, as published SwiGLU models are

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    os.makedirs(args.work, exist_ok=True)
    t_start = time.time()

    verses = dump_bible()
    train_text, held_text, held_file_text, cut = split_text(verses, args.heldout_frac, args.heldout_file_bytes)
    print("text: %d verses, train %d bytes (verses 1-%d), held-out %d bytes, held-out file %d bytes"
          % (len(verses), len(train_text), cut, len(held_text), len(held_file_text)), flush=True)
    paths = {k: os.path.join(args.work, k + ".txt") for k in ("train", "heldout_all")}
    for k, txt in (("train", train_text), ("heldout_all", held_text)):
        with open(paths[k], "w") as f:
            f.write(txt)
    os.makedirs(os.path.dirname(args.heldout_out) or ".", exist_ok=True)
    with open(args.heldout_out, "w") as f:
        f.write(held_file_text)

    vocab_path = os.path.join(args.work, "vocab.json")
    if os.path.exists(vocab_path) and args.export_only:
        with open(vocab_path) as f:
            tokens, types, merges = json.load(f)
    else:
        t0 = time.time()
        tokens, types, merges = learn_bpe(train_text, args.n_vocab)
        print("bpe: %d tokens, %d merges, %.0f s" % (len(tokens), len(merges), time.time() - t0), flush=True)
        with open(vocab_path, "w") as f:
            json.dump([tokens, types, merges], f)
    n_vocab, bos = len(tokens), len(tokens) - 1
    tok_kvs = tokenizer_kvs(tokens, types, merges, bos)
    vocab_gguf = os.path.join(args.work, "vocab.gguf")
    write_gguf(vocab_gguf, [("general.architecture", GGUF_STR, "llama")] + tok_kvs, [])
    train_toks = hearth_tokenize(args.hearth, vocab_gguf, paths["train"])
    held_toks = hearth_tokenize(args.hearth, vocab_gguf, args.heldout_out)
    print("tokens: train %d (%.2f bytes/token), held-out file %d" % (len(train_toks), len(train_text) / len(train_toks),
                                                                     len(held_toks)), flush=True)
    u2b = {u: b for b, u in bytes_to_unicode().items()}
    byte_len = np.array([len(t) if ty == 1 else 0 for t, ty in zip(tokens, types)])
    assert all(all(ch in u2b for ch in t) for t, ty in zip(tokens, types) if ty == 1)

    model = Model(n_vocab, args.n_embd, args.n_layer, args.n_head, args.n_ff, args.n_ctx, 10000.0, 1e-5, args.ffn)
    n_params = sum(p.numel() for p in model.parameters())
    print("model: %d parameters" % n_params, flush=True)
    ckpt = os.path.join(args.work, "model.pt")
    # SwiGLU has no sparsifying fine-tune: its final checkpoint is the main training's.
    ckpt2 = os.path.join(args.work, "model-sparse.pt") if args.ffn == "drelu" else ckpt
    if args.export_only:
        model.load_state_dict(torch.load(ckpt2))
    else:
        if args.resume:
            model.load_state_dict(torch.load(ckpt))
        else:
            train(model, train_toks, bos, args)
            torch.save(model.state_dict(), ckpt)
        if args.ffn == "drelu":
            sparsify(model, train_toks, bos, args)
            torch.save(model.state_dict(), ckpt2)
    model.eval()

    ppl, bpb, count = perplexity_like_hearth(model, held_toks, bos, args.n_ctx, byte_len)
    print("held-out file (%s, -c %d): ppl %.6f over %d tokens, %.4f bits/byte" % (args.heldout_out, args.n_ctx, ppl,
                                                                                 count, bpb), flush=True)
    ppl16, _, _ = perplexity_like_hearth(model, held_toks, bos, args.n_ctx, byte_len, 16)
    print("held-out file, --chunks 16: ppl %.6f" % ppl16, flush=True)
    if args.ffn == "drelu":  # SwiGLU neurons are never exactly zero
        gate, act = sparsity(model, held_toks, bos, args.n_ctx, 8)
        print("held-out, per layer: gate > 0 (Hearth's fired) " + " ".join("%.1f%%" % (100 * z) for z in gate) +
              "; activation nonzero " + " ".join("%.1f%%" % (100 * z) for z in act), flush=True)

    kvs = [
        ("general.architecture", GGUF_STR, "llama"),
        ("general.name", GGUF_STR, "bible-" + args.ffn),
        ("general.file_type", GGUF_U32, 0),
        ("llama.context_length", GGUF_U32, args.n_ctx),
        ("llama.embedding_length", GGUF_U32, args.n_embd),
        ("llama.block_count", GGUF_U32, args.n_layer),
        ("llama.feed_forward_length", GGUF_U32, args.n_ff),
        ("llama.attention.head_count", GGUF_U32, args.n_head),
        ("llama.attention.head_count_kv", GGUF_U32, args.n_head),
        ("llama.attention.layer_norm_rms_epsilon", GGUF_F32, 1e-5),
        ("llama.rope.freq_base", GGUF_F32, 10000.0),
        ("llama.rope.dimension_count", GGUF_U32, args.n_embd // args.n_head),
        ("llama.vocab_size", GGUF_U32, n_vocab),
    ]
    # SwiGLU is llama's own FFN: no key, so llama.cpp and Hearth read it as a plain llama model.
    if args.ffn == "drelu":
        kvs.append(("hearth.ffn_activation", GGUF_STR, "drelu"))
    kvs += tok_kvs
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    write_gguf(args.out, kvs, gguf_tensors(model))
    print("wrote %s (%d bytes); total %.0f s" % (args.out, os.path.getsize(args.out), time.time() - t_start), flush=True)


def batch(data, gen, n_batch, T, bos):
    """Each sequence: BOS, then T-1 tokens from a random place (as perplexity's chunks look)."""
    starts = torch.randint(0, len(data) - T, (n_batch,), generator=gen)
    seqs = torch.stack([data[s:s + T] for s in starts.tolist()])
    return torch.cat([torch.full((n_batch, 1), bos, dtype=torch.long), seqs[:, :-1]], 1), seqs


def sparsify(model, toks, bos, args):
    """ProSparse-style fine-tune: an L1 penalty on relu(gate) as well. Hearth's exact dReLU
    path skips the neurons whose gate is not positive, and a gate that is positive where
    relu(up) is zero costs compute for nothing; the penalty pushes those below zero at no
    cost to the loss. A fresh optimizer and generator, so --resume gives the same result."""
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.sparsify_lr, betas=(0.9, 0.95))
    gen = torch.Generator().manual_seed(args.seed + 1)
    data = torch.from_numpy(toks)
    t0 = time.time()
    for step in range(args.sparsify_steps):
        lr = args.sparsify_lr * (1 - 0.9 * step / args.sparsify_steps)
        for g in opt.param_groups:
            g["lr"] = lr
        inp, seqs = batch(data, gen, args.batch, args.n_ctx, bos)
        logits, acts = model(inp)
        ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), seqs.reshape(-1))
        n = len(acts)
        loss = ce + args.l1 * sum(a.abs().mean() for a in acts) / n + \
            args.sparsify_l1 * sum(g.mean() for g in model.gates) / n
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0 or step == args.sparsify_steps - 1:
            gf = " ".join("%.0f" % (100 * (g > 0).float().mean().item()) for g in model.gates)
            af = " ".join("%.0f" % (100 * (a > 0).float().mean().item()) for a in acts)
            print("sparsify %4d  ce %.4f  lr %.2e  gate>0%% %s  act>0%% %s  %.0f s" %
                  (step, ce.item(), lr, gf, af, time.time() - t0), flush=True)


def train(model, toks, bos, args):
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95))
    gen = torch.Generator().manual_seed(args.seed)
    data = torch.from_numpy(toks)
    T = args.n_ctx
    t0 = time.time()
    for step in range(args.steps):
        lr = args.lr * min(1.0, (step + 1) / args.warmup)
        lr *= 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / args.steps))
        for g in opt.param_groups:
            g["lr"] = lr
        inp, seqs = batch(data, gen, args.batch, T, bos)
        logits, acts = model(inp)
        ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), seqs.reshape(-1))
        l1w = args.l1 * max(0.0, (step - args.steps / 2) / (args.steps / 2))
        loss = ce
        if l1w > 0:
            loss = ce + l1w * sum(a.abs().mean() for a in acts) / len(acts)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0 or step == args.steps - 1:
            z = " ".join("%.0f" % (100 * (a == 0).float().mean().item()) for a in acts)
            m = " ".join("%.3f" % a.abs().mean().item() for a in acts)
            print("step %5d  ce %.4f  lr %.2e  l1w %.3g  zeros%% %s  mean|a| %s  %.0f s" %
                  (step, ce.item(), lr, l1w, z, m, time.time() - t0), flush=True)


if __name__ == "__main__":
    sys.exit(main())
