"""edgeindex-client: the Python SDK for edgeindex (HTTP only; no torch, no server code).

``Client`` and ``AsyncClient`` have the same methods; every request and response is a
pydantic model (``edgeindex_client.models``); errors carry the server's code and field
(``edgeindex_client.errors``).
"""

from ._ops import RawResponse, path_segment
from ._shared_api import UploadOutcome
from .async_client import AsyncClient
from .client import Client
from .errors import (
                     APIConnectionError,
                     APIError,
                     APITimeoutError,
                     AuthenticationError,
                     BadRequestError,
                     ConflictError,
                     DocumentFailedError,
                     EdgeIndexClientError,
                     NotFoundError,
                     PayloadTooLargeError,
                     PermissionDeniedError,
                     RateLimitError,
                     ServerError,
                     UnprocessableError,
                     UnsupportedMediaTypeError,
                     WaitTimeoutError,
)
from .files import collect_files, document_id_for, guess_content_type
from .models import (
                     Document,
                     IndexDescriptor,
                     IndexRegistration,
                     IndexSelection,
                     SearchFilters,
                     SearchInclude,
                     SearchRequest,
                     SearchResponse,
                     SearchResult,
                     SelectedIndex,
                     SelectedTool,
                     ToolSelection,
)
from .trajectory import AsyncTrajectory, Trajectory

__version__ = "0.1.0"
__all__ = [
    "APIConnectionError", "APIError", "APITimeoutError", "AsyncClient", "AsyncTrajectory", "AuthenticationError", "BadRequestError",
    "Client", "ConflictError", "Document", "DocumentFailedError", "EdgeIndexClientError", "IndexDescriptor",
    "IndexRegistration", "IndexSelection", "NotFoundError",
    "PayloadTooLargeError", "PermissionDeniedError", "RateLimitError", "RawResponse", "SearchFilters", "SearchInclude",
    "SearchRequest", "SearchResponse", "SearchResult", "SelectedIndex", "SelectedTool", "ServerError", "ToolSelection", "Trajectory", "UnprocessableError",
    "UnsupportedMediaTypeError", "UploadOutcome", "WaitTimeoutError", "collect_files", "document_id_for",
    "guess_content_type", "path_segment",
]
