-- The search telemetry's JSON columns are stored as json, not jsonb (issue 15).
--
-- Every search writes one row (exact-cache hits included: thousands a second at 8 agents), and
-- nothing queries inside these columns: the feedback, the report, the admin page and the router's
-- training read them whole into Python. As jsonb, Postgres parses each row's ~1.7 KB of results
-- into its binary form, every score a numeric: about two thirds of the Postgres CPU a row costs
-- (~70-85 us per row as jsonb, ~20-30 as json). json keeps the text as sent, only checked.
-- Rewrites the table once (retention: ROUTER_TELEMETRY_DAYS).
ALTER TABLE search_telemetry
    ALTER COLUMN features TYPE json USING features::json,
    ALTER COLUMN results TYPE json USING results::json,
    ALTER COLUMN timings TYPE json USING timings::json;
