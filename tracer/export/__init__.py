"""Renderings of decoded data: packet listings, reports, JUnit, Perfetto, CSV."""
