"""Bulk-load a BEIR corpus into an entity of a running stack, bypassing upload and ingestion.

For evaluation runs on a busy machine: ingestion through the workers runs at ~1 document/s under
load, so a 5000-passage corpus would take over an hour. Each document becomes one chunk (its
title + text, what the workers index; MS MARCO passages are shorter than one chunk), embedded with
the same model, written with binary COPY (shared/evaluation/loader.py); the entity and an API key
are made through the upload worker's admin routes. Then: `edgeindex eval --entity ENTITY ...` or
`edgeindex router train --entity-for NAME=ENTITY ...`.

usage: python scripts/seed_beir.py DATASET_DIR --upload-url URL --admin-key KEY --dsn DSN
"""

from __future__ import annotations

import argparse
import asyncio
import time

from edgeindex.bindings.ai import local_embedder
from edgeindex.bindings.database import Database
from edgeindex.evaluation import beir, loader
from edgeindex.evaluation.edgeindex_client import EdgeIndexClient
from edgeindex.evaluation.runner import entity_name

BATCH = 500


async def main(args) -> None:
    dataset = beir.load(args.dataset)
    entity = entity_name(dataset)
    async with EdgeIndexClient(args.upload_url, args.upload_url, args.admin_key) as admin:
        await admin.create_entity(entity, name=f"bulk-loaded {dataset.name}")
        key = await admin.create_key(entity)
    db = Database(args.dsn, min_size=1, max_size=2, name="SEED")
    await db.open()
    embedder = local_embedder()
    started = time.perf_counter()
    try:
        docs = [loader.SeedDocument(d.id, [d.content], title=d.title, source=f"beir:{dataset.name}")
                for d in dataset.corpus.values()]
        for i in range(0, len(docs), BATCH):
            await loader.seed_documents(db, embedder, entity, docs[i:i + BATCH])
            print(f"seeded {min(i + BATCH, len(docs))}/{len(docs)}", flush=True)
    finally:
        await db.close()
    print(f"entity {entity} key {key} ({time.perf_counter() - started:.0f}s)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset")
    parser.add_argument("--upload-url", required=True)
    parser.add_argument("--admin-key", required=True)
    parser.add_argument("--dsn", required=True)
    asyncio.run(main(parser.parse_args()))
