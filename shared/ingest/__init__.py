"""Document ingestion: extraction, chunking, hash-diff, embedding, summaries, the durable workflow."""
