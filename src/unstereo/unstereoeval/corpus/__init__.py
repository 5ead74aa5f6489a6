"""Corpus statistics: windowed co-occurrence counts, PMI/delta tables and appendix A (UnStereoEval paper,
section 2.1)."""
