"""Tool selection and index selection for agents (issue 12)."""
