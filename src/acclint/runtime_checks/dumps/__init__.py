"""msprobe dumps read by acclint compare: layout, reader, cross-framework matching, causal verdict."""
