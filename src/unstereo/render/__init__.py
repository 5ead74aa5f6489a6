"""Rendering of tables (CSV, Markdown, LaTeX, HTML) shared by the methods' reports."""
