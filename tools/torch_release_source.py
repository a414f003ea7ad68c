"""torch/__init__.py of a torch release, read from its wheel on PyPI without downloading the wheel.

A wheel is a zip: HTTP range requests fetch its central directory and the one member (a few
hundred KiB of a 100-900 MB file). Used by gen_deterministic_ops.py --release.
"""

from __future__ import annotations

import io
import re
import urllib.request
import zipfile

INDEX = "https://pypi.org/simple/torch/"
MEMBER = "torch/__init__.py"


class _RangeFile(io.RawIOBase):
    """A read-only, seekable file over HTTP range requests."""

    def __init__(self, url: str, timeout: float = 60) -> None:
        self.url, self.timeout, self.pos = url, timeout, 0
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout) as response:
            self.size = int(response.headers["Content-Length"])

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = base + offset
        return self.pos

    def readinto(self, buffer) -> int:
        end = min(self.pos + len(buffer), self.size)
        if end <= self.pos:
            return 0
        request = urllib.request.Request(self.url, headers={"Range": f"bytes={self.pos}-{end - 1}"})
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            data = response.read()
        buffer[: len(data)] = data
        self.pos += len(data)
        return len(data)


def wheel_url(release: str, index: str = INDEX) -> str:
    """The URL of one x86-64 Linux wheel of torch `release` (e.g. "2.4": its .0 wheel)."""
    version = release if release.count(".") == 2 else f"{release}.0"
    with urllib.request.urlopen(index, timeout=60) as response:
        page = response.read().decode("utf-8")
    pattern = re.compile(rf'href="([^"#]+)[^"]*"[^>]*>torch-{re.escape(version)}-cp3\d+-cp3\d+-manylinux[^<]*x86_64\.whl<')
    found = pattern.search(page)
    if found is None:
        raise SystemExit(f"no x86-64 Linux wheel of torch {version} on {index}")
    return found.group(1)


def release_source(release: str) -> tuple[str, str]:
    """(the text of torch/__init__.py, the wheel's URL) for a torch release."""
    url = wheel_url(release)
    with zipfile.ZipFile(io.BufferedReader(_RangeFile(url), buffer_size=1 << 16)) as wheel:
        return wheel.read(MEMBER).decode("utf-8"), url
