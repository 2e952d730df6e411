"""The schema, as numbered SQL migrations applied in order (``Database.migrate``)."""
