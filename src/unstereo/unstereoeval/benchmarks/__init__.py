"""The benchmarks stage: benchmark sources -> pair tables with MaxPMI -> eta-constrained sets and Figure 2.

- :mod:`.readers`: Winobias, Winogender, released USE (raw and preprocessed), user templates, existing pair tables
  -> :data:`unstereo.tables.PAIRS` (``build_pairs``).
- :mod:`.maxpmi`: MaxPMI of a template (docs/methods.md#maxpmi-and-eta), one at a time or vectorised
  (``max_pmi``, ``add_max_pmi``).
- :mod:`.eta_filter`: the constraint -eta <= MaxPMI <= eta and the size table (``filter_eta``, ``eta_sizes``).
- :mod:`.figure`: Figure 2 (``plot_sizes``).

CLI: ``unstereo benchmarks {build,maxpmi,filter,sizes,figure}``; rules: ``src/unstereo/unstereoeval/benchmarks/rules.smk``.
"""

from unstereo.unstereoeval.benchmarks.badrows import BadRows
from unstereo.unstereoeval.benchmarks.eta_filter import (
    PAPER_ETAS,
    eta_sizes,
    filter_eta,
    format_eta,
    parse_eta,
)
from unstereo.unstereoeval.benchmarks.maxpmi import (
    KEPT_PRONOUNS,
    MaxPMI,
    add_max_pmi,
    max_pmi,
    max_pmi_many,
    template_words,
)
from unstereo.unstereoeval.benchmarks.readers import (
    KINDS,
    build_pairs,
    read_pairs,
    read_templates,
    read_use_raw,
    read_use_released,
    read_winobias,
    read_winogender,
)

__all__ = [
    "BadRows",
    "KEPT_PRONOUNS",
    "KINDS",
    "MaxPMI",
    "PAPER_ETAS",
    "add_max_pmi",
    "build_pairs",
    "eta_sizes",
    "filter_eta",
    "format_eta",
    "max_pmi",
    "max_pmi_many",
    "parse_eta",
    "read_pairs",
    "read_templates",
    "read_use_raw",
    "read_use_released",
    "read_winobias",
    "read_winogender",
    "template_words",
]
