# Rules of the benchmarks stage (see src/unstereo for the logic). Append final outputs to ALL_TARGETS.
