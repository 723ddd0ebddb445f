"""Gemini through google-genai: one client factory (key, base URL, retries) and one structured image question."""
from __future__ import annotations

import os
from typing import Any, TypeVar

from pydantic import BaseModel

from tiermap.extras import import_extra
from tiermap.formats.base import SchemaError

M = TypeVar("M", bound=BaseModel)


class GeminiError(RuntimeError):
    """The Gemini API refused or failed a request after retries."""


def gemini_client(purpose: str) -> Any:
    """A google-genai client from GEMINI_API_KEY / GOOGLE_API_KEY (and GOOGLE_GEMINI_BASE_URL), retrying 429 and 5xx with backoff."""
    genai = import_extra("google.genai", "pipeline", f"Gemini ({purpose})")
    types = genai.types

    key = os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
    if not key:
        raise SchemaError("GEMINI_API_KEY", "<env>", f"a Gemini API key in the environment for {purpose}")
    return genai.Client(api_key=key, http_options=types.HttpOptions(
        base_url=os.environ.get("GOOGLE_GEMINI_BASE_URL"),
        retry_options=types.HttpRetryOptions(attempts=5, initial_delay=0.5, max_delay=8.0)))


def ask_image(client: Any, model: str, image_png: bytes, prompt: str, answer: type[M], system: str | None = None) -> M:
    """Send one PNG (as bytes) and a prompt; parse the JSON answer into `answer` or raise a one-line SchemaError."""
    from google.genai import errors, types

    try:
        resp = client.models.generate_content(
            model=model,
            contents=[types.Part.from_bytes(data=image_png, mime_type="image/png"), prompt],
            config=types.GenerateContentConfig(response_mime_type="application/json", response_schema=answer,
                                               temperature=0.0, system_instruction=system))
    except errors.APIError as err:
        raise GeminiError(f"Gemini {model}: HTTP {err.code} {err.status or ''} {str(err.message or '')[:120]} (after retries)") from None
    if resp.parsed is None:
        fields = ", ".join(answer.model_fields)
        raise SchemaError(f"gemini:{model}", "<answer>", f"JSON with fields {fields}", resp.text)
    return resp.parsed
