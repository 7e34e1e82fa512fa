"""``python -m rankmap.codes`` prints docs/findings.md."""

from rankmap.codes import markdown

print(markdown(), end="")
