"""Generation helpers several methods share: answer parsing, prompt files, generation settings, pair filters."""
