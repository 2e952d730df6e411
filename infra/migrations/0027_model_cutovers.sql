-- Each change of the serving embedding model (`edgeindex models cutover`, `rollback`), newest last.
--
-- A cutover swaps the target model's vectors (backfilled into `chunk_vectors`) into `chunks.embedding`
-- and keeps the vectors it replaces in `chunk_vectors` under the model they came from, so a rollback is
-- the same swap back. `embedding_model` names the serving model; workers follow it (runtime/serving_model.py).
CREATE TABLE model_cutovers (
    id          bigserial PRIMARY KEY,
    from_model  text NOT NULL,
    to_model    text NOT NULL,
    dimension   integer NOT NULL CHECK (dimension > 0),
    chunks      bigint NOT NULL,          -- chunks whose vector was swapped
    embedded    bigint NOT NULL,          -- of them, embedded during the cutover (written since the backfill)
    rollback    boolean NOT NULL DEFAULT false,
    at          timestamptz NOT NULL DEFAULT now()
);
