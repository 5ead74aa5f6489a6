"""The model registry (``data/models.csv``, shipped in the package): one row per model, in the paper's order.

Columns: ``id`` (model id used in score and metric tables; hub id where there is one), ``reference_name`` (the
model name written in the released score files), ``display_name`` (as printed in the paper), ``family``, ``size``,
``params_b`` (billions of parameters), ``deduplicated`` (trained on the deduplicated PILE), ``trained_on_pile``
(yes / partial / no).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from unstereo.errors import InputError
from unstereo.package_data import DATA_DIR, packaged

DEFAULT_REGISTRY = DATA_DIR / "models.csv"

COLUMNS = [
    "id",
    "reference_name",
    "display_name",
    "family",
    "size",
    "params_b",
    "deduplicated",
    "trained_on_pile",
]


def load_registry(path: str | Path | None = None) -> pd.DataFrame:
    """Read and check the registry; adds ``order`` (row position = the paper's model order)."""
    path = packaged(path) if path else DEFAULT_REGISTRY
    if not path.is_file():
        raise InputError("model registry not found", path=path)
    reg = pd.read_csv(path, keep_default_na=False, na_values=[""])
    missing = [c for c in COLUMNS if c not in reg.columns]
    if missing:
        raise InputError(f"model registry lacks column(s) {missing}", path=path)
    for col in ("id", "display_name"):
        dup = reg[col].duplicated()
        if dup.any():
            raise InputError(
                f"duplicated {col} {reg.loc[dup, col].iloc[0]!r}", path=path, line=int(dup.idxmax()) + 2
            )
    bad = ~reg["deduplicated"].astype(str).str.lower().isin(["true", "false"])
    if bad.any():
        raise InputError("column deduplicated must be true/false", path=path, line=int(bad.idxmax()) + 2)
    reg["deduplicated"] = reg["deduplicated"].astype(str).str.lower() == "true"
    reg["order"] = range(len(reg))
    return reg


def name_map(reg: pd.DataFrame) -> dict[str, str]:
    """reference_name -> id, for ingesting the released score files."""
    return dict(zip(reg["reference_name"], reg["id"], strict=True))


def attach(metrics: pd.DataFrame, reg: pd.DataFrame) -> pd.DataFrame:
    """Add display_name, deduplicated and order to a table with a ``model`` column.

    Models missing from the registry keep their id as display name and come after the registry's models.
    """
    out = metrics.merge(
        reg[["id", "display_name", "deduplicated", "order"]], left_on="model", right_on="id", how="left"
    )
    out = out.drop(columns="id")
    unknown = out["display_name"].isna()
    out.loc[unknown, "display_name"] = out.loc[unknown, "model"]
    out["deduplicated"] = out["deduplicated"].astype("boolean").fillna(False).astype(bool)
    extra = {m: len(reg) + i for i, m in enumerate(sorted(out.loc[unknown, "model"].unique()))}
    out["order"] = [
        int(o) if not pd.isna(o) else extra[m] for o, m in zip(out["order"], out["model"], strict=True)
    ]
    return out
