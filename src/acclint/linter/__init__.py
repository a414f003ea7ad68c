"""The static engine: discovery, one parse and one pass per file, project facts, dispatch to rules."""
