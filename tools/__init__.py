"""Build-time tools (standard library only): asset fetching and the dev server."""
