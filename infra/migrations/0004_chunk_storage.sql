-- edgeindex schema, version 4: keep chunk vectors inline.
--
-- A 384-float vector is 1.5 kB; with the chunk's text and tsvector a row passes the 2 kB
-- TOAST threshold and Postgres moved the vector out of line, so every exact distance
-- (small tenants, selective filters, re-scoring the fused pool) went through the TOAST
-- index: ~3.5 µs a row, 18 ms for 5,000 chunks. Inline: 4 ms. Vectors never compress,
-- so they are stored PLAIN, and rows up to a page stay whole (long texts still get
-- compressed or moved out of line). Rows written before keep their layout until they are
-- rewritten (re-ingested, or VACUUM FULL).

ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE PLAIN;
ALTER TABLE chunks_p0 SET (toast_tuple_target = 8160);
ALTER TABLE chunks_p1 SET (toast_tuple_target = 8160);
ALTER TABLE chunks_p2 SET (toast_tuple_target = 8160);
ALTER TABLE chunks_p3 SET (toast_tuple_target = 8160);
ALTER TABLE chunks_p4 SET (toast_tuple_target = 8160);
ALTER TABLE chunks_p5 SET (toast_tuple_target = 8160);
ALTER TABLE chunks_p6 SET (toast_tuple_target = 8160);
ALTER TABLE chunks_p7 SET (toast_tuple_target = 8160);
