"""What the MCP worker answers itself, before the SDK's transport reads a message: the messages the
SDK cannot take as it should. Its parser refuses a lone surrogate as unreadable JSON, naming nothing,
and it takes a request whose id is an object for a notification (an empty 202)."""

from __future__ import annotations

import json

from aiohttp import web

from ..errors import ValidationError
from ..json_codec import check_json_value
from ..runtime.http import error_body, json_response
from .server import text_result


def precheck(body: bytes, rid: str) -> web.Response | None:
    """The answer to a message the SDK cannot take as it should, or None. The SDK's parser refuses
    a lone surrogate as unreadable JSON, naming nothing: a tool's arguments pass the JSON checks every
    HTTP body passes (json_codec), and a failure is that tool's error result naming the field, as
    the tool itself answers a NUL. A request whose id is neither a string nor an integer is
    invalid (JSON-RPC 2.0; MCP forbids null), where the SDK would take it for a notification and
    answer an empty 202."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None   # the SDK's parse error says so
    if not isinstance(message, dict) or "method" not in message:
        return None
    if "id" in message and (isinstance(message["id"], bool) or not isinstance(message["id"], (str, int))):
        exc = ValidationError("id must be a string or an integer (JSON-RPC 2.0; MCP forbids null)", field="id")
        return json_response({"jsonrpc": "2.0", "id": None, "error": {
            "code": -32600, "message": f"invalid request: {exc.message}",
            "data": error_body(exc.code, exc.message, field=exc.field, request_id=rid)}}, 400)
    params = message.get("params")
    if message["method"] != "tools/call" or not isinstance(params, dict) or not isinstance(params.get("arguments"),
                                                                                            dict):
        return None
    try:
        check_json_value(params["arguments"])
    except ValidationError as exc:
        return json_response({"jsonrpc": "2.0", "id": message.get("id"), "result": text_result(
            exc.to_dict(), error=True).model_dump(mode="json", by_alias=True, exclude_none=True)})
    return None
