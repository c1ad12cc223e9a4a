"""The `reelfarm` command: one entry point that gathers each part's commands."""
