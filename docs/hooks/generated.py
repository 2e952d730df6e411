"""MkDocs hook: pages whose reference parts are generated from the code at build time.

A page holds a marker line and the hook replaces it:

- ``<!-- generated: configuration -->``: one table of every ``wrangler.toml`` key, walked from the
  checked pydantic ``Config`` (shared/config.py): key, type, default, range, the environment
  variable that overrides it, and the field's description; then each worker's vars, walked from
  its schema in ``shared/worker_vars.py``.
- ``<!-- generated: http-api -->``: every worker's routes from the OpenAPI spec it serves
  (``runtime/openapi.build_spec`` over the worker module's ``routes``), with the request and
  response schemas.

Nothing here is copied by hand, so the manual cannot drift from the code: a renamed key, a new
route or a changed bound shows up in the next build.
"""

from __future__ import annotations

import importlib
import json
import types
import typing
from pathlib import Path
from typing import Any

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

ROOT = Path(__file__).resolve().parents[2]
WORKERS = ["upload", "ingest", "search", "mcp"]
MARKERS = {
    "<!-- generated: configuration -->": lambda: configuration(),
    "<!-- generated: http-api -->": lambda: http_api(),
}


def on_page_markdown(markdown: str, page, config, files) -> str:
    for marker, render in MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, render())
    return markdown


def cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


# --- configuration ------------------------------------------------------------------------


def _unwrap(annotation: Any) -> tuple[Any, str]:
    """(the model inside an annotation, the key suffix it adds): ``list[X]`` → ``[]``, ``dict[str, X]`` → ``.<name>``."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _unwrap(inner[0])
    if origin is list and args:
        model, suffix = _unwrap(args[0])
        return model, "[]" + suffix
    if origin is dict and len(args) == 2:
        model, suffix = _unwrap(args[1])
        return model, ".<name>" + suffix
    if origin is typing.Annotated:
        return _unwrap(args[0])
    return annotation, ""


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " or ".join(f'`"{a}"`' if isinstance(a, str) else f"`{a}`" for a in args)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in args)
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(_type_name(a) for a in args)}]"
    if annotation is type(None):
        return "none"
    return getattr(annotation, "__name__", str(annotation))


def _range(field: FieldInfo) -> str:
    parts: list[str] = []
    metadata = list(field.metadata)
    annotation = field.annotation
    if typing.get_origin(annotation) is typing.Annotated:
        metadata += [m for a in typing.get_args(annotation)[1:] for m in getattr(a, "metadata", [a])]
    for item in metadata:
        for attr, symbol in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            value = getattr(item, attr, None)
            if value is not None and isinstance(item, getattr(annotated_types, attr.capitalize(), object)):
                parts.append(f"{symbol} {value}")
        if isinstance(item, annotated_types.MaxLen):
            parts.append(f"at most {item.max_length} items")
        pattern = getattr(item, "pattern", None)
        if isinstance(pattern, str):
            parts.append(f"`{pattern}`")
    return ", ".join(parts)


def _default(field: FieldInfo) -> str:
    if field.default_factory is not None:
        try:
            value = field.default_factory()
        except TypeError:
            return ""
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return ""
    if isinstance(value, str):
        return f'`"{value}"`'
    return f"`{json.dumps(value, default=str)}`"


def _rows(model: type[BaseModel], prefix: str, overrides: dict[str, list[str]]) -> list[list[str]]:
    rows: list[list[str]] = []
    for name, field in model.model_fields.items():
        if name in ("path", "checked_vars") and prefix == "":
            continue  # where the file was read from, and the vars as checked: set by load(), not keys
        key = f"{prefix}{name}"
        inner, suffix = _unwrap(field.annotation)
        description = field.description or ""
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            if inner.__doc__ and not description:
                description = inner.__doc__.strip().split("\n\n")[0]
            rows.append([f"`[{key}{suffix}]`" if suffix != "[]" else f"`[[{key}]]`", "table", "", "", "",
                         description])
            rows.extend(_rows(inner, f"{key}{suffix}.", overrides))
            continue
        env = ", ".join(f"`{v}`" for v in overrides.get(key, []))
        rows.append([f"`{key}`", _type_name(field.annotation), _default(field), _range(field), env, description])
    return rows


def configuration() -> str:
    config = importlib.import_module("edgeindex.config")
    overrides: dict[str, list[str]] = {}
    for variable, path in config.ENV_OVERRIDES:
        overrides.setdefault(".".join(path), []).append(variable)
    for per_worker in ("port", "processes"):
        overrides[f"workers.<name>.{per_worker}"] = [f"EDGEINDEX_<NAME>_{per_worker.upper()}"]
    overrides["workers.<name>.vars"] = ["EDGEINDEX_VAR_<VAR>"]
    lines = ["| key | type | default | range | environment | description |",
             "| --- | --- | --- | --- | --- | --- |"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in _rows(config.Config, "", overrides)]
    schemas = importlib.import_module("edgeindex.worker_vars").SCHEMAS
    for worker_name, schema in schemas.items():
        prefix = f"workers.{worker_name}.vars."
        for var in schema.model_fields:
            overrides[f"{prefix}{var}"] = [f"EDGEINDEX_VAR_{var}"]
        lines += ["", f"Vars of the {worker_name} worker (`workers/{worker_name}.py`; "
                  "`shared/worker_vars.py`, checked at start-up):", "",
                  "| key | type | default | range | environment | description |",
                  "| --- | --- | --- | --- | --- | --- |"]
        lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in _rows(schema, prefix, overrides)]
    return "\n".join(lines) + "\n"


# --- HTTP API -----------------------------------------------------------------------------


def _schema_type(schema: dict) -> str:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{_anchor(name)})"
    if "anyOf" in schema:
        return " or ".join(_schema_type(s) for s in schema["anyOf"])
    if "enum" in schema:
        return " or ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    kind = schema.get("type", "any")
    if kind == "array":
        return f"array of {_schema_type(schema.get('items', {}))}"
    if kind == "object" and "additionalProperties" in schema and isinstance(schema["additionalProperties"], dict):
        return f"object of {_schema_type(schema['additionalProperties'])}"
    return str(kind)


def _anchor(name: str) -> str:
    return "schema-" + "".join(ch if ch.isalnum() else "-" for ch in name).lower()


def _constraints(schema: dict) -> str:
    parts = []
    for key, symbol in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"), ("exclusiveMaximum", "<"),
                        ("minLength", "min length"), ("maxLength", "max length"), ("minItems", "min items"),
                        ("maxItems", "max items")):
        if key in schema:
            parts.append(f"{symbol} {schema[key]}")
    if "pattern" in schema:
        parts.append(f"`{schema['pattern']}`")
    return ", ".join(parts)


def _schema_table(schema: dict) -> list[str]:
    properties = schema.get("properties") or {}
    if not properties:
        return [f"{_schema_type(schema)}", ""]
    required = set(schema.get("required") or [])
    lines = ["| field | type | required | default | constraints | description |",
             "| --- | --- | --- | --- | --- | --- |"]
    for name, prop in properties.items():
        default = f"`{json.dumps(prop['default'])}`" if "default" in prop else ""
        lines.append("| " + " | ".join(cell(c) for c in [
            f"`{name}`", _schema_type(prop), "yes" if name in required else "", default, _constraints(prop),
            prop.get("description", "")]) + " |")
    return lines + [""]


def _body_type(content: dict) -> str:
    parts = []
    for media, body in content.items():
        schema = body.get("schema")
        parts.append(f"`{media}`" + (f": {_schema_type(schema)}" if schema else ""))
    return "; ".join(parts)


def http_api() -> str:
    openapi = importlib.import_module("edgeindex.runtime.openapi")
    out: list[str] = []
    for worker in WORKERS:
        module = importlib.import_module(f"edgeindex.workers.{worker}")
        spec = openapi.build_spec(module.routes, title=f"edgeindex {worker} worker",
                                  description=(module.__doc__ or "").strip())
        out += [f"## The {worker} worker", ""]
        if spec["info"].get("description"):
            out += [spec["info"]["description"].split("\n\n")[0].replace("\n", " "), ""]
        out += ["| method | path | summary |", "| --- | --- | --- |"]
        for path, operations in spec["paths"].items():
            for method, op in operations.items():
                out.append(f"| {method.upper()} | `{cell(path)}` | {cell(op.get('summary', ''))} |")
        out.append("")
        for path, operations in spec["paths"].items():
            for method, op in operations.items():
                out += [f"### {method.upper()} `{path}`", "", op.get("summary", ""), ""]
                if op.get("description"):
                    out += [op["description"], ""]
                if op.get("security") == []:
                    out += ["No API key needed.", ""]
                params = op.get("parameters") or []
                if params:
                    out += ["| parameter | in | type | required | description |", "| --- | --- | --- | --- | --- |"]
                    for p in params:
                        out.append("| " + " | ".join(cell(c) for c in [
                            f"`{p['name']}`", p["in"], _schema_type(p.get("schema", {})),
                            "yes" if p.get("required") else "", p.get("description", "")]) + " |")
                    out.append("")
                if body := op.get("requestBody"):
                    out += [f"Request body: {_body_type(body.get('content', {}))}", ""]
                responses = op.get("responses") or {}
                if responses:
                    out += ["| status | meaning | body |", "| --- | --- | --- |"]
                    for status, response in responses.items():
                        out.append(f"| {status} | {cell(response.get('description', ''))} | "
                                   f"{_body_type(response.get('content', {}))} |")
                    out.append("")
        schemas = spec.get("components", {}).get("schemas", {})
        if schemas:
            out += [f"### Schemas of the {worker} worker", ""]
            for name, schema in schemas.items():
                out += [f"#### {name} {{#{_anchor(name)}}}", ""]
                if schema.get("description"):
                    out += [schema["description"].replace("\n", " "), ""]
                out += _schema_table(schema)
    return _unique_anchors("\n".join(out)) + "\n"


def _unique_anchors(text: str) -> str:
    """Schemas shared by several workers appear once per worker: later copies get a numbered anchor."""
    seen: dict[str, int] = {}
    lines = []
    for line in text.split("\n"):
        if line.startswith("#### ") and "{#schema-" in line:
            anchor = line.rsplit("{#", 1)[1].rstrip("}")
            seen[anchor] = seen.get(anchor, 0) + 1
            if seen[anchor] > 1:
                line = line.replace("{#" + anchor + "}", "{#" + f"{anchor}-{seen[anchor]}" + "}")
        lines.append(line)
    return "\n".join(lines)
