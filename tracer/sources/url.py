"""Source URLs: ``scheme://location?key=value&...``."""

from __future__ import annotations

import dataclasses
import urllib.parse

from tracer.errors import UsageError


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
        """Split ``host:port``."""
        host, sep, port = self.location.rpartition(":")
        if not sep:
            host, port = self.location, ""
        if not port:
            if default_port is None:
                raise UsageError(f"{self.text}: expected host:port")
            return host or "localhost", default_port
        try:
            return host or "localhost", int(port)
        except ValueError:
            raise UsageError(f"{self.text}: port must be a number, not {port!r}") from None

    def option(self, name: str, default: str | None = None) -> str | None:
        """Return a query option."""
        return self.options.get(name, default)
