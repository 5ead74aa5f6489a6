"""The variants stage's table: each variant's perplexity on held-out text against its base's."""

from unstereo.tables import TableSchema, columns

PERPLEXITY = TableSchema(
    "variants_perplexity",
    "one row per model variant: its perplexity and its base's on the same held-out sentences (none trained on)",
    columns("""
        variant               str     the variant's name (variants.models)
        base                  str     its base model (spec string)
        intervention          str     cda, control, embedding or sentiment
        strength              float   the intervention's strength (share swapped, lambda; 0 for the control)
        steps                 int     optimisation steps of its fine-tune
        ppl_base              float   the base's perplexity on the held-out sentences
        ppl_variant           float   the variant's perplexity on them
        ppl_ratio             float   ppl_variant / ppl_base (> 1: the variant models the text worse)
        ppl_gendered_base     float?  the base's perplexity on the held-out sentences with a gendered word
        ppl_gendered_variant  float?  the variant's on them
        heldout_sentences     int     held-out sentences
        heldout_gendered      int     of them, with a gendered word
    """),
    unique=("variant",),
)
