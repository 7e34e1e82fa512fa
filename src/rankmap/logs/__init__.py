"""Log reading and recognition for `rankmap explain` (reader, prefixes, patterns, rank map, causes)."""
