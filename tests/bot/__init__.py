"""Tests of the Discord adapter, the reply path and the /memory commands."""
