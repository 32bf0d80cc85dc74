"""Source URLs: what the unknown-scheme message offers is accepted; IPv6 hosts in brackets."""

from __future__ import annotations

import pytest

from tracer.errors import UsageError
from tracer.sources.registry import SCHEMES, open_source
from tracer.sources.url import SourceUrl


@pytest.mark.parametrize(
    ("text", "host", "port"),
    [
        ("tcp://[::1]:3443", "::1", 3443),
        ("tcp://[fe80::1%eth0]:2332", "fe80::1%eth0", 2332),
        ("tcp://[::1]", "::1", 3443),
        ("tcp://localhost:3443", "localhost", 3443),
        ("tcp://:3443", "localhost", 3443),
        ("tcp://10.0.0.2", "10.0.0.2", 3443),
    ],
)
def test_host_port(text: str, host: str, port: int) -> None:
    assert SourceUrl.parse(text).host_port(3443) == (host, port)


@pytest.mark.parametrize("text", ["tcp://[::1:3443", "tcp://[::1]x3443", "tcp://host:port", "tcp://host:99999"])
def test_bad_host_port_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError):
        SourceUrl.parse(text).host_port(3443)


def test_unknown_scheme_offers_only_what_is_accepted() -> None:
    with pytest.raises(UsageError) as info:
        open_source("ftp://x")
    message = str(info.value)
    offered = [word.rstrip(",") for word in message.split() if word.endswith(("://", "://,"))]
    assert offered, message
    assert "fvp://" not in message
    assert "'fvp -- COMMAND'" in message
    for scheme in offered:
        name = scheme[: -len("://")]
        assert name in SCHEMES and name != "fvp"
