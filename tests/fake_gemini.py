"""A stdlib fake of Gemini's generateContent endpoint for running the real google-genai client offline."""
from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeGemini:
    """Records every request; answers from `queue` ({"json": obj} | {"text": s} | {"status": code}) or `default`."""

    def __init__(self, default: Any = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.queue: list[dict[str, Any]] = []
        self.default = default
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # silence
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                fake.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
                reply = fake.queue.pop(0) if fake.queue else {"json": fake.default(body) if callable(fake.default) else fake.default}
                if "status" in reply:
                    payload, code = {"error": {"code": reply["status"], "message": "scripted", "status": "UNAVAILABLE"}}, reply["status"]
                else:
                    text = reply["text"] if "text" in reply else json.dumps(reply["json"])
                    payload, code = {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}]}, 200
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def image(self, n: int = -1) -> bytes:
        """The inline image bytes of request n (URL-safe base64, as the client sends them)."""
        part = self.requests[n]["body"]["contents"][0]["parts"][0]
        return base64.urlsafe_b64decode(part["inlineData"]["data"])

    def stop(self) -> None:
        """Shut the server down."""
        self.server.shutdown()
