"""Retrieval evaluation: BEIR datasets, metrics, baselines (Chroma, BM25), reports."""
