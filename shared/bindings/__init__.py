"""Binding implementations: one module per kind, each a small Protocol plus its real implementation."""
