"""Corpus statistics: windowed co-occurrence counts, PMI/delta tables and the paper's appendix A (SPEC 1.1)."""
