"""Reports: the library's results as Documents (document.py) that every renderer reads, one builder per command."""
