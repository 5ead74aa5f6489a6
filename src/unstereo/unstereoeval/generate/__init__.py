"""USE-k benchmark generation (docs/methods.md#use-k-generation; paper section 2.3 and appendix D).

Per seed word and pronoun: the Generation prompt -> numbered list -> check word and pronoun -> revision prompts
round robin -> pairing (direct pronoun mapping or the Editing prompt) -> template -> semantic filter on both
fillings. MaxPMI is added downstream by the benchmarks stage.
"""

from __future__ import annotations

from unstereo.unstereoeval.generate.pipeline import GenerateSettings, generate_benchmark, summarize, to_pairs
from unstereo.unstereoeval.prompts import Prompt, PromptSet, load_prompts

__all__ = [
    "GenerateSettings",
    "Prompt",
    "PromptSet",
    "generate_benchmark",
    "load_prompts",
    "summarize",
    "to_pairs",
]
