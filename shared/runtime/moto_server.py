"""The embedded moto (S3 + SQS) served over HTTP/1.1 connections that stay open, for the dev stack.

moto's own ``ThreadedMotoServer`` serves its WSGI app with werkzeug's development server, which closes
the connection after every response (werkzeug >= 2.1 sends ``Connection: close``): every botocore call
of every worker opened a new TCP connection, and the server started a new thread for each. Real S3 and
SQS keep connections alive, so that was the emulator's own overhead (2.2 requests per ingested
document). This serves the same app (``DomainDispatcherApplication(create_backend_app)``, with
``moto_speedups`` applied to it as before) with cheroot, a WSGI server made for production use: a fixed
pool of request threads, and keep-alive connections parked in a selector between requests, so an idle
connection holds no thread.

What moto's request handler adds to werkzeug's is kept: S3 user metadata headers whose names have
underscores (``x-amz-meta-source_file``) keep them (``_MotoGateway``).
"""

from __future__ import annotations

import threading

from cheroot import wsgi

# Requests in progress at once. A consumer's long poll holds a thread for up to its wait (a second or
# so); past this many, requests wait in the pool's queue, they are not refused.
THREADS = 32
# An idle keep-alive connection is closed after this many seconds (botocore reopens one it finds closed).
IDLE_SECONDS = 60


class _MotoGateway(wsgi.Gateway_10):
    """cheroot's WSGI 1.0 environ plus moto's record of S3 metadata header names with underscores.

    cheroot folds ``X-Amz-Meta-Source_File`` into ``HTTP_X_AMZ_META_SOURCE_FILE`` like any header;
    moto's ``Request.headers`` reports such a header under the name recorded in the environ, so its
    metadata key keeps the underscore, as through moto's own server (``MotoRequestHandler``).
    """

    def get_environ(self):
        from moto.core.request import (PRESERVED_HEADER_NAMES_ENVIRON_KEY, environ_key_for_header,
                                       should_preserve_original_header_name)

        environ = super().get_environ()
        names = [name.decode("iso-8859-1") for name in self.req.inheaders]
        dashed = {environ_key_for_header(name) for name in names if "_" not in name}
        environ[PRESERVED_HEADER_NAMES_ENVIRON_KEY] = {
            environ_key_for_header(name): name for name in names
            # never let an underscored header stand in for a dashed one (as moto's handler)
            if should_preserve_original_header_name(name) and environ_key_for_header(name) not in dashed}
        return environ


class KeepAliveMotoServer:
    """``start()`` / ``stop()`` like moto's ``ThreadedMotoServer``, on 127.0.0.1:``port``."""

    def __init__(self, ip_address: str, port: int, *, threads: int = THREADS) -> None:
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

        app = DomainDispatcherApplication(create_backend_app)
        self._server = wsgi.Server((ip_address, port), app, numthreads=threads, timeout=IDLE_SECONDS,
                                   server_name="moto")
        self._server.gateway = _MotoGateway
        # cheroot keeps at most 10 idle keep-alive connections by default and closes the rest after their
        # response; each worker's botocore pool holds up to 32, and the stack runs several workers
        self._server.keep_alive_conn_limit = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._server.prepare()  # bound and listening when this returns
        self._thread = threading.Thread(target=self._server.serve, name="moto-server", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.stop()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
