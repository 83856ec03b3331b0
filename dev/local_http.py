"""An HTTP server on 127.0.0.1 served by a thread of this process: what the tests' stand-ins of identity providers
and credential endpoints (dev/oidc.py, dev/cloud_credentials.py) answer on."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LocalHttpServer:
    def __init__(self, handler: type[BaseHTTPRequestHandler], name: str, poll_interval: float = 0.5):
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(poll_interval,), name=name,
                                        daemon=True)
        self._thread.start()

    @property
    def host(self) -> str:
        """host:port."""
        host, port = self._server.server_address[:2]
        return f"{host}:{port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
