"""Text-only Gemini calls for VQA (answering and judging): structured JSON output, temperature 0, a prompt cache on disk.

Every request carries `response_mime_type="application/json"`, a `response_schema` (a list of pydantic items) and
`temperature=0`. Replies are cached as JSON files keyed by model + sha256 of the prompt, so a re-run costs no request.
Only replies that parse against the schema are cached; an unparsable reply is reported to the caller as None.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from tiermap import atomic
from tiermap.formats.base import dump_json
from tiermap.gemini import GeminiError, gemini_client

M = TypeVar("M", bound=BaseModel)
DEFAULT_MODEL = "gemini-2.5-flash"


def cache_key(model: str, prompt: str) -> str:
    """File name of a cached reply: the model (made file-safe) and sha256 of the prompt."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model)
    return f"{safe}-{hashlib.sha256(prompt.encode('utf-8')).hexdigest()}.json"


class JsonAsker:
    """Ask Gemini a text prompt for a JSON list of `item`s; cached on disk; the client is made on the first uncached call."""

    def __init__(self, model: str, cache: Path | None, purpose: str) -> None:
        self.model, self.cache, self.purpose = model, (Path(cache) if cache else None), purpose
        self._client: Any = None
        self.requests = 0
        self.unparsed = 0

    def ask(self, prompt: str, item: type[M]) -> list[M] | None:
        """The reply as a list of `item` (None when the reply is not such a list, after the client's retries)."""
        adapter = TypeAdapter(list[item])  # type: ignore[valid-type]
        path = self.cache / cache_key(self.model, prompt) if self.cache else None
        if path is not None and path.is_file():
            try:
                return adapter.validate_python(json.loads(path.read_text(encoding="utf-8")))
            except (ValueError, ValidationError):
                pass  # a damaged cache entry is asked again
        if self._client is None:
            self._client = gemini_client(self.purpose)  # a missing google-genai is a one-line hint here
        from google.genai import errors, types

        self.requests += 1
        try:
            resp = self._client.models.generate_content(
                model=self.model, contents=[prompt],
                config=types.GenerateContentConfig(temperature=0.0, response_mime_type="application/json",
                                                   response_schema=list[item]))  # type: ignore[valid-type]
        except errors.APIError as err:
            raise GeminiError(f"Gemini {self.model}: HTTP {err.code} {err.status or ''} "
                              f"{str(err.message or '')[:120]} (after retries)") from None
        parsed = resp.parsed
        if not isinstance(parsed, list) or not all(isinstance(p, item) for p in parsed):
            self.unparsed += 1
            return None
        if path is not None:
            atomic.write_text(path, dump_json([p.model_dump(mode="json") for p in parsed]))
        return parsed
