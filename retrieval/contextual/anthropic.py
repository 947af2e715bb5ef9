"""The Anthropic contextualizer (extra `remote`): a Claude model writes each chunk's context.

One request per chunk. The system prompt and the whole file come first and carry `cache_control`,
so the first request about a file writes them to the prompt cache and the file's other chunks read
them at a tenth of the price; the chunk and the question follow, uncached. The SDK retries 429, 529
(overloaded), other 5xx and timeouts with exponential backoff (honouring a retry-after of up to a
minute: a longer one stops the run at once, saying how long); what still fails stops the run with
one line. Key: ANTHROPIC_API_KEY; endpoint: ANTHROPIC_BASE_URL (the SDK's).
Only `contextual.generate.run` calls this, after the cost guard.
"""
from __future__ import annotations

import email.utils
import os
import time

import anthropic

from ..notes import first_line
from . import ENV_KEY, configured_model
from .endpoint import shown_url
from .prompt import MAX_OUTPUT_TOKENS, SYSTEM, chunk_block, file_block

DEFAULT_RETRIES = 6
DEFAULT_TIMEOUT = 60.0
MAX_CONTEXT_CHARS = 2000  # far above what max_tokens allows; a bound on what an endpoint may send back
MAX_RETRY_AFTER = 60.0  # seconds; the SDK would wait whatever a retry-after asks (up to 49 days), per retry
ECHO_CHARS = 250  # an answer holding this many characters of the chunk verbatim repeats it, not situates it


class AnthropicContextualizer:
    name = "anthropic"

    def __init__(self, model: str | None = None, *, client=None, max_tokens: int = MAX_OUTPUT_TOKENS,
                 max_retries: int = DEFAULT_RETRIES, timeout: float = DEFAULT_TIMEOUT, http_client=None):
        self.model = model or configured_model()
        self.max_tokens = max_tokens
        if client is None:
            key = os.environ.get(ENV_KEY, "").strip()
            if not key:
                raise RuntimeError(f"the Anthropic contextualizer needs an API key: set {ENV_KEY}")
            base = os.environ.get("ANTHROPIC_BASE_URL", "")
            if base.strip() and not base.strip().lower().startswith(("http://", "https://")):
                # No request to it can succeed: the SDK retried it for 23 s, as it retries an outage.
                raise RuntimeError(f"cannot set up the Anthropic client for ANTHROPIC_BASE_URL={shown_url(base)!r}: "
                                   "it is no http:// or https:// URL")
            # The key is passed explicitly so the SDK never goes looking for profiles on disk.
            try:
                client = anthropic.Anthropic(api_key=key, max_retries=max_retries, timeout=timeout,
                                             http_client=http_client, middleware=[_no_long_waits])
            except Exception as exc:  # noqa: BLE001 - the SDK checks its endpoint here (httpx2's InvalidURL)
                where = f" for ANTHROPIC_BASE_URL={shown_url(base)!r}" if base else ""
                raise RuntimeError(f"cannot set up the Anthropic client{where}: {first_line(exc)}") from exc
        self.client = client

    def params(self, path: str, file_text: str, chunk) -> dict:
        """The Messages API request for one chunk."""
        return {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": SYSTEM,
            "messages": [{
                "role": "user",
                "content": [
                    {"type": "text", "text": file_block(path, file_text), "cache_control": {"type": "ephemeral"}},
                    {"type": "text", "text": chunk_block(path, chunk.start_line, chunk.end_line, chunk.text)},
                ],
            }],
        }

    def request(self, path: str, file_text: str, chunk) -> str:
        """The context for one chunk: one paragraph, at most MAX_CONTEXT_CHARS (an endpoint behind
        ANTHROPIC_BASE_URL may ignore max_tokens); "" for an answer that is no context: without text,
        a refusal (whose apology is text), or the chunk repeated back (an echoing endpoint)."""
        message = self.client.messages.create(**self.params(path, file_text, chunk))
        content = getattr(message, "content", None)
        if not isinstance(content, list):
            raise UnexpectedAnswer(_not_a_message(message))
        if getattr(message, "stop_reason", None) == "refusal":
            return ""
        # Text blocks only: the SDK reads a block type it does not know as a TextBlock of that type.
        text = " ".join("".join(getattr(block, "text", "") or "" for block in content
                                if getattr(block, "type", "") == "text").split())
        if _repeats(text, chunk.text):
            return ""
        if len(text) > MAX_CONTEXT_CHARS:
            text = text[:MAX_CONTEXT_CHARS].rsplit(" ", 1)[0]
        return text  # one paragraph: the context is indexed and shown inline

    @staticmethod
    def fatal(exc: BaseException) -> str:
        """The one-line reason a failed request stops the run."""
        if isinstance(exc, (anthropic.AuthenticationError, anthropic.PermissionDeniedError)):
            return f"authentication failed ({exc.status_code}): check {ENV_KEY}"
        wait = _retry_after(exc.response.headers) if isinstance(exc, anthropic.APIStatusError) else None
        if wait is not None and wait > MAX_RETRY_AFTER:
            what = "rate limited" if exc.status_code == 429 else "the API is unavailable"
            return f"{what} ({exc.status_code}): the API asks to wait {wait:.0f} s before the next request"
        if isinstance(exc, anthropic.RateLimitError):
            return "still rate limited (429) after retrying"
        if isinstance(exc, anthropic.APIStatusError) and exc.status_code == 529:
            return "the API is still overloaded (529) after retrying"
        if isinstance(exc, anthropic.APIStatusError) and exc.status_code >= 500:
            return f"the API failed ({exc.status_code}) after retrying: {_api_message(exc)}"
        if isinstance(exc, anthropic.APITimeoutError):
            return "requests still time out after retrying"
        if isinstance(exc, anthropic.APIConnectionError):
            # The SDK's own message is "Connection error."; its cause says which (unknown host, refused, reset).
            cause = exc.__cause__ or exc.__context__
            why = first_line(cause) if cause is not None else exc.__class__.__name__
            return f"cannot reach the API ({why[:200]})"
        if isinstance(exc, anthropic.APIStatusError):
            return f"the API refused a request ({exc.status_code}): {_api_message(exc)}"
        if isinstance(exc, (UnexpectedAnswer, AttributeError, TypeError, ValueError)):
            # A proxy or an endpoint that is not the Messages API: HTML, another JSON shape.
            detail = str(exc).splitlines()[0][:200] if str(exc) else exc.__class__.__name__
            return f"the API's answer is not a Messages API reply ({detail})"
        return f"{exc.__class__.__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"

    @staticmethod
    def refused_only(exc: BaseException) -> bool:
        """Whether the API refused this request for what it holds (a prompt too long, a request too
        large, content it will not process), not for a setting every request shares."""
        return isinstance(exc, anthropic.APIStatusError) and exc.status_code in (400, 413)


class UnexpectedAnswer(ValueError):
    """The endpoint answered, but not with a message."""


def _not_a_message(answer) -> str:
    """What an answer without content blocks is: the SDK parses any JSON object as a Message."""
    kind = getattr(answer, "type", None)
    if not isinstance(kind, str):
        return f"the API answered with {type(answer).__name__}, not a message"
    if kind != "message":  # a proxy's 200 carrying an error object, say
        error = getattr(answer, "error", None)
        detail = error.get("message") if isinstance(error, dict) else None
        return f"an object of type {kind!r}" + (f": {detail}" if isinstance(detail, str) and detail else "")
    return "a message without content blocks"


def _retry_after(headers) -> float | None:
    """Seconds a response's retry-after-ms or retry-after asks to wait (a number or an HTTP date)."""
    try:
        if headers.get("retry-after-ms"):
            return float(headers["retry-after-ms"]) / 1000
        value = headers.get("retry-after")
        if not value:
            return None
        try:
            return float(value)
        except ValueError:
            parsed = email.utils.parsedate_tz(value)
            return float(email.utils.mktime_tz(parsed) - time.time()) if parsed else None
    except (ValueError, TypeError, OverflowError):
        return None


def _no_long_waits(request, call_next):
    """Middleware: a response asking for a wait longer than MAX_RETRY_AFTER is not retried, so the
    run stops now with one line saying how long (instead of holding the writer lock for hours)."""
    response = call_next(request)
    http = getattr(response, "http_response", None)
    if http is not None and not http.is_success:
        wait = _retry_after(http.headers)
        if wait is not None and wait > MAX_RETRY_AFTER:
            http.headers["x-should-retry"] = "false"  # the SDK obeys it before any retry-after
    return response


def _repeats(answer: str, chunk_text: str) -> bool:
    """Whether an answer holds the prompt's <chunk> tag, or ECHO_CHARS or more of the chunk verbatim
    (whitespace aside)."""
    if "<chunk>" in answer:
        return True
    chunk = " ".join(chunk_text.split())
    window, step = ECHO_CHARS // 2, ECHO_CHARS // 2
    return len(chunk) >= window and any(answer[i:i + window] in chunk
                                        for i in range(0, len(answer) - window + 1, step))


def _api_message(exc) -> str:
    """The API's own error message (`body.error.message`), not the SDK's rendering of the whole
    body as a Python dict."""
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str) or not message.strip():
        message = str(getattr(exc, "message", "") or exc)
    return (message.strip().splitlines() or [""])[0][:200]


def make(model: str | None = None) -> AnthropicContextualizer:
    return AnthropicContextualizer(model)
