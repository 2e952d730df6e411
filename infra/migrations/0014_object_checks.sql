-- A changed object behind a ready version is noticed (issue 11, item 2).
--
-- With the object store's own presigned URLs (S3, R2), a URL stays usable until it expires, so
-- its holder can PUT to the same key after the version is ready. Ingestion records the ETag of
-- the object it read; when an object-created event for a ready version's key arrives again
-- and the object's ETag differs, the document keeps its status and index (what was checked at
-- upload) and says so in object_warning, until a new version is ready.
ALTER TABLE documents ADD COLUMN IF NOT EXISTS object_etag text;
ALTER TABLE documents ADD COLUMN IF NOT EXISTS object_warning text;
