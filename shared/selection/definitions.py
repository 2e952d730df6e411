"""Tool definitions as users have them: MCP ``tools/list`` entries, OpenAI ``tools`` items, or plain ones.

Everything is normalised to one shape (name, description, JSON Schema ``parameters``,
category, tags, requires, examples) and checked; a bad definition is a 400 naming the
field (``tools.3.parameters``), never a half-registered catalogue.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from jsonschema import SchemaError
from jsonschema.validators import validator_for

from .. import token_count, validation
from ..errors import ValidationError
from .text import split_identifier

T = TypeVar("T")

# A tool's name is any text its owner gives it (`PDF&URLTool`, `weather.get current`), up to this length,
# without control characters; LLMs get its alias (aliases.py).
MAX_NAME_CHARS = 256
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
MAX_TOOLS_PER_REQUEST = 1000
MAX_TOOLS_PER_ENTITY = 5000
MAX_DEFINITION_BYTES = 32_000
MAX_EXAMPLES = 20
MAX_DESCRIPTION_CHARS = 8000

# Plain parameter lists name their types loosely (BFCL says float, dict, tuple, any).
_TYPES = {
    "string": "string", "str": "string", "text": "string",
    "integer": "integer", "int": "integer", "long": "integer",
    "number": "number", "float": "number", "double": "number", "decimal": "number",
    "boolean": "boolean", "bool": "boolean",
    "object": "object", "dict": "object", "map": "object", "mapping": "object",
    "array": "array", "list": "array", "tuple": "array", "set": "array",
    "null": "null", "any": None,
}


@dataclass(frozen=True)
class ToolDef:
    name: str
    description: str
    parameters: dict
    category: str | None = None
    tags: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict)

    def function(self) -> dict:
        """The definition handed to an LLM (OpenAI ``function`` / MCP tool without the envelope)."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def embedded_text(self) -> str:
        """What the vector is made of: the name's words, category, description, parameter names."""
        props = self.parameters.get("properties") or {}
        params = ", ".join(" ".join(split_identifier(p)) or p for p in props)
        words = " ".join(split_identifier(self.name))
        head = f"{words} ({self.category})" if self.category else words
        tail = f" Tags: {', '.join(self.tags)}." if self.tags else ""
        return f"{head}: {self.description}{tail} Parameters: {params}".strip()

    def definition_hash(self) -> str:
        payload = {"function": self.function(), "category": self.category, "tags": list(self.tags),
                   "requires": list(self.requires), "examples": list(self.examples)}
        return validation.content_hash(json.dumps(payload, sort_keys=True))


def content_hash(text: str, model_id: str) -> str:
    """Hash of an embedded text and the model that embeds it: either changing means a new vector."""
    return validation.content_hash(f"{model_id}\n{text}")


def count_tokens(definition: dict) -> int:
    """Tokens of a definition as sent in an OpenAI-style ``tools`` array (cl100k_base)."""
    return token_count.count_tokens(json.dumps({"type": "function", "function": definition}))


def _str(value: Any, where: str, *, max_chars: int | None = None, required: bool = False) -> str:
    if value is None:
        if required:
            raise ValidationError(f"{where} is required", field=where)
        return ""
    if not isinstance(value, str):
        raise ValidationError(f"{where} must be a string", field=where)
    if max_chars is not None and len(value) > max_chars:
        raise ValidationError(f"{where} is longer than {max_chars} characters", field=where)
    return value


def tool_name(value: Any, where: str) -> str:
    """A tool's name as registered: trimmed, non-empty, at most MAX_NAME_CHARS, no control
    characters, valid Unicode."""
    name = _str(value, where, required=True).strip()
    if not name:
        raise ValidationError(f"{where} must not be empty", field=where)
    if len(name) > MAX_NAME_CHARS:
        raise ValidationError(f"{where} is longer than {MAX_NAME_CHARS} characters", field=where)
    if _CONTROL.search(name):
        raise ValidationError(f"{where} must not contain control characters", field=where)
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{where} must be valid Unicode (no lone surrogates)", field=where) from None
    return name


def _str_list(value: Any, where: str, *, limit: int = 64) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValidationError(f"{where} must be a list of non-empty strings", field=where)
    if len(value) > limit:
        raise ValidationError(f"{where} holds more than {limit} items", field=where)
    return tuple(dict.fromkeys(v.strip() for v in value))


def _plain_parameters(items: list, where: str) -> dict:
    """``[{"name", "type", "description", "required"}]`` -> a JSON Schema object."""
    properties: dict[str, dict] = {}
    required: list[str] = []
    for j, item in enumerate(items):
        at = f"{where}.{j}"
        if not isinstance(item, dict):
            raise ValidationError(f"{at} must be an object with name and type", field=at)
        name = _str(item.get("name"), f"{at}.name", required=True)
        if name in properties:
            raise ValidationError(f"{at}.name: parameter {name!r} is listed twice", field=f"{at}.name")
        schema: dict[str, Any] = {}
        kind = item.get("type")
        if kind is not None:
            if not isinstance(kind, str) or kind.strip().lower() not in _TYPES:
                raise ValidationError(f"{at}.type: unknown type {kind!r} (expected one of "
                                      f"{', '.join(sorted(_TYPES))})", field=f"{at}.type")
            mapped = _TYPES[kind.strip().lower()]
            if mapped:
                schema["type"] = mapped
        if item.get("description"):
            schema["description"] = _str(item["description"], f"{at}.description")
        if "enum" in item:
            schema["enum"] = item["enum"]
        if "default" in item:
            schema["default"] = item["default"]
        properties[name] = schema
        if item.get("required"):
            required.append(name)
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    return out


def _schema(value: Any, where: str) -> dict:
    if value is None:
        return {"type": "object", "properties": {}}
    if isinstance(value, list):
        value = _plain_parameters(value, where)
    if not isinstance(value, dict):
        raise ValidationError(f"{where} must be a JSON Schema object or a list of parameters", field=where)
    if "$schema" in value and not isinstance(value["$schema"], str):
        raise ValidationError(f"{where}.$schema must be a string (the URI of a JSON Schema dialect)",
                              field=f"{where}.$schema")
    if value.get("type", "object") != "object":
        raise ValidationError(f"{where}: a tool's parameters must be a schema of type 'object', "
                              f"got {value.get('type')!r}", field=where)
    try:
        validator_for(value).check_schema(value)
    except SchemaError as exc:
        path = "/".join(str(p) for p in exc.path)
        raise ValidationError(f"{where} is not a valid JSON Schema{f' at {path}' if path else ''}: "
                              f"{exc.message}", field=where) from None
    return value


def parse_tool(raw: Any, where: str) -> ToolDef:
    """One definition in any of the accepted shapes."""
    if not isinstance(raw, dict):
        raise ValidationError(f"{where} must be an object", field=where)
    if len(json.dumps(raw)) > MAX_DEFINITION_BYTES:
        raise ValidationError(f"{where} is larger than {MAX_DEFINITION_BYTES} bytes", field=where)
    body = raw
    if raw.get("type") == "function" and isinstance(raw.get("function"), dict):   # OpenAI tools[] item
        body = {**raw["function"], **{k: v for k, v in raw.items() if k not in ("type", "function")}}
        where_params = f"{where}.function.parameters"
    else:
        where_params = f"{where}.inputSchema" if "inputSchema" in raw else f"{where}.parameters"
    name = tool_name(body.get("name"), f"{where}.name")
    params = body.get("inputSchema", body.get("input_schema", body.get("parameters")))   # MCP, Anthropic, OpenAI
    category = body.get("category")
    if category is not None:
        category = _str(category, f"{where}.category", max_chars=128).strip() or None
    requires = _str_list(body.get("requires"), f"{where}.requires")
    if name in requires:
        raise ValidationError(f"{where}.requires: a tool cannot require itself", field=f"{where}.requires")
    extra = {k: body[k] for k in ("annotations", "title", "strict") if k in body}
    return ToolDef(
        name=name,
        description=_str(body.get("description"), f"{where}.description", max_chars=MAX_DESCRIPTION_CHARS).strip(),
        parameters=_schema(params, where_params),
        category=category,
        tags=_str_list(body.get("tags"), f"{where}.tags"),
        requires=requires,
        examples=_str_list(body.get("examples"), f"{where}.examples", limit=MAX_EXAMPLES),
        extra=extra,
    )


def parse_catalogue(body: dict) -> list[ToolDef]:
    """The tools of a register request.

    Accepts ``{"tools": [...]}`` (plain, OpenAI or MCP items, mixed), ``{"result": {"tools": [...]}}``
    (an MCP ``tools/list`` JSON-RPC response as received) or a single tool ``{"tool": {...}}``.
    """
    if "tool" in body:
        items, where = [body["tool"]], "tool"
    elif isinstance(body.get("result"), dict) and "tools" in body["result"]:
        items, where = body["result"]["tools"], "result.tools"
    else:
        items, where = body.get("tools"), "tools"
    if not isinstance(items, list) or not items:
        raise ValidationError(f"{where} must be a non-empty list of tool definitions", field=where)
    if len(items) > MAX_TOOLS_PER_REQUEST:
        raise ValidationError(f"{where}: at most {MAX_TOOLS_PER_REQUEST} tools per request, got {len(items)} "
                              "(register in batches)", field=where)
    if where == "tool":
        return [parse_tool(items[0], where)]
    return parse_named(items, where, parse_tool)


def parse_named(items: list, where: str, parse_one: Callable[[Any, str], T]) -> list[T]:
    """Each item parsed by ``parse_one(item, "where[i]")``; a name given twice is a 400 naming the
    second one. The one register loop of tools and index descriptors."""
    parsed: list[T] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(items):
        at = f"{where}.{i}"
        item = parse_one(raw, at)
        if item.name in seen:
            raise ValidationError(f"{at}.name: {item.name!r} is listed twice in this request "
                                  f"(also {where}.{seen[item.name]})", field=f"{at}.name")
        seen[item.name] = i
        parsed.append(item)
    return parsed
