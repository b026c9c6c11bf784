"""Reproducible benchmark scripts."""
