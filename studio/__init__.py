"""Content logic: built-in stories that turn typed fields and brand tokens into VideoDocs."""
