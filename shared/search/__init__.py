"""Agent search: request validation, filtered hybrid retrieval in Postgres, fusion, caches."""
