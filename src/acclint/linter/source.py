"""Reading a file's text: binary files are skipped, undecodable ones become per-file errors."""

from __future__ import annotations

import io
import stat
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

# Bytes sniffed for NUL to call a file binary (as git does).
_SNIFF = 8192


@dataclass(frozen=True)
class SourceText:
    text: Optional[str] = None
    error: Optional[str] = None  # reported in `errors`
    skip: Optional[str] = None  # reported in `skipped`
    size: int = 0  # bytes on disk


def read_source(path: Path, *, python: bool, limits=None) -> SourceText:
    """`limits`: a limits.Limits whose size limit is checked before the file is read, or None."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):  # a FIFO or device would block or never end
            return SourceText(skip="not a regular file")
        too_large = limits.size_skip(info.st_size) if limits is not None else None
        if too_large:
            return SourceText(skip=too_large, size=info.st_size)
        data = path.read_bytes()
    except PermissionError:
        return SourceText(error="cannot read file: permission denied")
    except IsADirectoryError:
        return SourceText(skip="is a directory")
    except OSError as exc:
        return SourceText(error=f"cannot read file: {exc.strerror or exc}")
    return decode_source(data, python=python)


def decode_source(data: bytes, *, python: bool) -> SourceText:
    """The text of a file's bytes (read from disk, or from stdin for `acclint scan -`)."""
    if b"\0" in data[:_SNIFF]:
        return SourceText(skip="binary file")
    encoding = "utf-8"
    if python:
        try:  # honour PEP 263 coding cookies and BOMs, as Python itself would
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as exc:
            if "encoding declaration" not in str(exc):
                return SourceText(error=f"cannot decode: {exc}")
            encoding = "utf-8"  # undecodable bytes in the first two lines: say so below
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        return SourceText(error=_decode_message(exc, encoding))
    if text.startswith("\ufeff"):
        text = text[1:]
    return SourceText(text=text, size=len(data))


def _decode_message(exc: Exception, encoding: str) -> str:
    if isinstance(exc, UnicodeDecodeError):
        line = exc.object[: exc.start].count(b"\n") + 1
        return (
            f"not valid {encoding}: byte 0x{exc.object[exc.start]:02x} at line {line} "
            "(save the file as UTF-8 or declare its encoding with a '# -*- coding: ... -*-' line)"
        )
    return f"unknown encoding {encoding!r}"
