"""Comparing builds: is the new one slower or bigger than the base, in which layer, why, and is it real."""
