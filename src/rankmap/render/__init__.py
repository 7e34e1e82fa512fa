"""Rendering of reports: rich text for people, ``rankmap/1`` JSON for machines."""
