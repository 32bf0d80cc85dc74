"""Source URLs: ``scheme://location?key=value&...``."""

from __future__ import annotations

import dataclasses
import urllib.parse

from tracer.errors import UsageError
from tracer.values import is_ascii_digits


@dataclasses.dataclass(frozen=True)
class SourceUrl:
    """A parsed source URL.

    Attributes:
        text: The URL as given.
        scheme: ``file``, ``tcp``, ``serial``...
        location: What follows ``scheme://`` up to ``?`` (a path, ``host:port``, a serial number).
        options: The query parameters (last one wins).
    """

    text: str
    scheme: str
    location: str
    options: dict[str, str]

    @classmethod
    def parse(cls, text: str) -> SourceUrl:
        """Parse ``text``; a bare path is taken as ``file://``."""
        if "://" not in text:
            return cls(text, "file", text, {})
        scheme, rest = text.split("://", 1)
        location, _, query = rest.partition("?")
        options = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
        return cls(text, scheme.lower(), urllib.parse.unquote(location), options)

    def host_port(self, default_port: int | None = None) -> tuple[str, int]:
        """Split ``host:port``; an IPv6 host is written in brackets (``[::1]:3443``).

        Raises:
            UsageError: No port and no default, a port that is not a number from 1 to 65535, or a
                bracket left open.
        """
        location = self.location
        if location.startswith("["):
            close = location.find("]")
            rest = location[close + 1 :] if close > 0 else ""
            if close < 0 or (rest and not rest.startswith(":")):
                raise UsageError(f"{self.text}: expected [IPv6-address]:port")
            host, port = location[1:close], rest[1:]
        else:
            host, sep, port = location.rpartition(":")
            if not sep:
                host, port = location, ""
        host = host or "localhost"
        if not port:
            if default_port is None:
                raise UsageError(f"{self.text}: expected host:port")
            return host, default_port
        if not is_ascii_digits(port) or len(port) > 5 or not 1 <= int(port) <= 65535:
            raise UsageError(f"{self.text}: port must be a number from 1 to 65535, not {port!r}")
        return host, int(port)

    def option(self, name: str, default: str | None = None) -> str | None:
        """Return a query option."""
        return self.options.get(name, default)
