"""Normalised error signatures: the same failure reads the same across sessions and machines."""

from __future__ import annotations

import functools
import re

_EXC = re.compile(
    r"\b((?:[A-Za-z_][\w]*\.)*[A-Z][A-Za-z0-9_]*(?:Error|Exception|Exit|Interrupt|Warning|Fault))\b"
    r"(?::[ \t]*(.*))?"
)
_CODE = re.compile(r"\b(E[A-Z]{3,}|E\d{3,5}|TS\d{4}|[A-Z]{2,5}-?\d{3,5})\b")
# "0 failed" / "0 errors" are a passing summary, not an error line.
_ERRLINE = re.compile(
    r"(?im)^(?!.*\b0 (?:failed|errors?)\b).*\b(error|failed|fatal|panic|cannot|not found|no such)\b.*$"
)
_RUNTIME = re.compile(r"(?m)^(?:fatal error|panic|thread '[^']*' panicked at)[: ]\s*(.+)$")
_GO_FAIL = re.compile(r"(?m)^--- FAIL: (\S+)")

_MASKS = (
    (re.compile(r"(?:[A-Za-z]:)?(?:[\w.~-]*/)+[\w.-]+"), "<path>"),
    (re.compile(r"\b[0-9a-f]{7,64}\b"), "<id>"),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<id>"),
    (re.compile(r"0x[0-9a-fA-F]+"), "<hex>"),
    (re.compile(r"\d+(?:\.\d+)*"), "<n>"),
    (re.compile(r"'[^'\n]{1,80}'|\"[^\"\n]{1,80}\""), "<str>"),
    (re.compile(r"\s+"), " "),
)

MAX_SIGNATURE = 160


def mask(text: str) -> str:
    for pattern, repl in _MASKS:
        text = pattern.sub(repl, text)
    return text.strip()


@functools.lru_cache(maxsize=8192)  # segmenting, drafting and the rules all ask about the same turns
def error_signature(text: str) -> str:
    """Exception type + message with paths, numbers and ids masked; '' when nothing looks like an error.

    The last exception line wins: in a traceback it is the one that names the failure.
    """
    if not text:
        return ""
    matches = list(_EXC.finditer(text))
    if matches:
        m = matches[-1]
        kind = m.group(1).rsplit(".", 1)[-1]
        message = mask((m.group(2) or "").strip())[:MAX_SIGNATURE]
        return f"{kind}: {message}".rstrip(": ").strip()
    runtime = _RUNTIME.search(text)
    if runtime:
        return f"{runtime.group(0).split(':', 1)[0].split(' ', 1)[0]}: {mask(runtime.group(1))[:MAX_SIGNATURE]}"
    line = _ERRLINE.search(text)
    # An error code counts only on the error line itself (a printed tsconfig's "ES2022" is no error).
    code = _CODE.search(line.group(0)) if line else None
    if code and line:
        return f"{code.group(1)}: {mask(line.group(0))[:MAX_SIGNATURE]}"
    go_fail = _GO_FAIL.search(text)
    if go_fail:
        return f"FAIL: {go_fail.group(1)}"
    if line:
        return mask(line.group(0))[:MAX_SIGNATURE]
    return ""
