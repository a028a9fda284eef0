"""What gateway tests share beyond conftest's gateway process: litellm's own price map."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any


def price_map_entry(model: str) -> dict[str, Any]:
    """The model's entry in the price map litellm loads with LITELLM_LOCAL_MODEL_COST_MAP."""
    spec = importlib.util.find_spec("litellm")
    assert spec is not None and spec.submodule_search_locations
    path = Path(next(iter(spec.submodule_search_locations)))
    entries = json.loads((path / "model_prices_and_context_window_backup.json").read_text())
    return entries[model]
