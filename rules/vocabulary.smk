# Rules of the vocabulary stage (see src/unstereo for the logic). Append final outputs to ALL_TARGETS.
