"""Tools quality (scripts/tune_select.py's harness, both halves) when a multi-sentence request's vectors
come from fewer token rows. The catalogue's vectors are the harness's (memoised); only the request's
vectors change, computed with torch (sentence-transformers; ONNX gives the same vectors to ~2e-7).

    .venv/bin/python results/selection/selectlat11/variants.py VARIANT[@ROWS][:z=SEGMENT_Z][:t=SEGMENT_MIN_TERMS] [...]

main        the request and each sentence, each on its own (what select does now)
sent_norm   the request's vector = the sentences' unit vectors averaged by token count (sentences only)
sent_mean   the request's vector = the token-weighted mean of the sentences' unpooled means (= the mean of
            every sentence token as encoded in its own sentence), normalised
span        one pass over the whole request; each sentence's vector = the mean of its tokens' contextual
            states in that pass (plus the pass's CLS and SEP), normalised
"""
import asyncio, sys
from pathlib import Path
import numpy as np
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))
import tune_select as ts
from edgeindex.bindings.onnx_query import length_buckets
from edgeindex.selection import tools as tl

MIN_ROWS = 0   # only requests whose texts pad to more rows than this get the variant (``@ROWS``)

ts.CACHE = Path("/tmp/selectlat11-vectors.pkl")


class Variant(ts.MemoEmbedder):
    def __init__(self, variant: str) -> None:
        super().__init__()
        self.variant = variant
        self.st = self.inner._model
        self.tok = self.st.tokenizer

    def token_states(self, text: str) -> np.ndarray:
        return self.st.encode([text], output_value="token_embeddings", convert_to_numpy=False)[0].numpy()

    def padded_rows(self, texts: list[str]) -> int:
        lens = [len(self.tok(t, truncation=True, max_length=256)["input_ids"]) for t in texts]
        return sum(len(g) * max(lens[i] for i in g) for g in length_buckets(lens))

    async def embed_queries(self, texts: list[str]) -> np.ndarray:
        if self.variant == "main" or len(texts) < 2 or self.padded_rows(texts) <= MIN_ROWS:
            return await super().embed_queries(texts)
        query, parts = texts[0], texts[1:]
        if self.variant in ("sent_norm", "sent_mean"):
            states = [self.token_states(p) for p in parts]
            means = np.vstack([s.mean(0) for s in states])
            units = means / np.linalg.norm(means, axis=1, keepdims=True)
            counts = np.array([len(s) for s in states], np.float32)[:, None]
            whole = (units if self.variant == "sent_norm" else means) * counts
            whole = whole.sum(0)
            return np.vstack([whole / np.linalg.norm(whole), units]).astype(np.float32)
        if self.variant == "span":
            enc = self.tok(query, return_offsets_mapping=True, truncation=True, max_length=256)
            offsets = enc["offset_mapping"]
            states = self.token_states(query)
            assert len(states) == len(offsets)
            whole = states.mean(0)
            out = [whole / np.linalg.norm(whole)]
            start = 0
            for p in parts:
                a = query.index(p, start)
                b = a + len(p)
                start = b
                idx = [0, len(offsets) - 1] + [i for i, (s, e) in enumerate(offsets) if e > s and s >= a and e <= b]
                m = states[idx].mean(0)
                out.append(m / np.linalg.norm(m))
            return np.vstack(out).astype(np.float32)
        raise SystemExit(f"unknown variant {self.variant}")


for spec in sys.argv[1:]:
    print(spec, flush=True)
    spec, _, min_terms = spec.partition(":t=")
    tl.SEGMENT_MIN_TERMS = int(min_terms) if min_terms else 3
    spec_rows, _, z = spec.partition(":z=")
    name, _, rows = spec_rows.partition("@")
    MIN_ROWS = int(rows) if rows else 0
    tl.SEGMENT_Z = float(z) if z else 3.0
    emb = Variant(name)
    asyncio.run(ts.run_tools(Path("/work/shared/data/tools-bfcl"), emb, False))
