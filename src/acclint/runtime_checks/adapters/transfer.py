"""transfer_weights(): give two models (torch or MindSpore, either direction) the same initial state."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from acclint.runtime_checks.model.errors import FingerprintError
from acclint.runtime_checks.adapters.frameworks import adapter_for
from acclint.runtime_checks.model.names import NameMapping, close_matches, load_mapping
from acclint.runtime_checks.adapters.records import NamedTensor

_LISTED = 10  # names shown per problem in an error message


@dataclass
class TransferReport:
    pairs: list[tuple[str, str]]  # (source native name, destination native name)

    def __len__(self) -> int:
        return len(self.pairs)


def transfer_weights(
    src: Any, dst: Any, mapping: "NameMapping | Mapping[str, Any] | str | Path | None" = None
) -> TransferReport:
    """Copy every parameter and running statistic of `src` into `dst`.

    Names are matched through the built-in cross-framework table and the optional user mapping
    (file path or dict, see acclint.runtime_checks.model.names). Nothing is copied unless every tensor
    has a partner of the same shape; otherwise FingerprintError lists what does not match.
    Values are cast to the destination's dtype and device; trainable flags are not touched.
    """
    rules = load_mapping(mapping)
    source, destination = adapter_for(src), adapter_for(dst)
    source_tensors = _by_common_name(source, rules, "source")
    destination_tensors = _by_common_name(destination, rules, "destination")

    problems = []
    only_source = [n for n in source_tensors if n not in destination_tensors]
    only_destination = [n for n in destination_tensors if n not in source_tensors]
    for name in only_source[:_LISTED]:
        problems.append(f"  {source_tensors[name].native_name} ({source.framework}) has no partner in the destination"
                        + _hint(name, only_destination))
    for name in only_destination[:_LISTED]:
        problems.append(f"  {destination_tensors[name].native_name} ({destination.framework}) has no partner in the source"
                        + _hint(name, only_source))
    hidden = len(only_source) + len(only_destination) - min(len(only_source), _LISTED) - min(len(only_destination), _LISTED)
    if hidden > 0:
        problems.append(f"  ... and {hidden} more unmatched names")
    for name, item in source_tensors.items():
        partner = destination_tensors.get(name)
        if partner is not None and tuple(item.shape) != tuple(partner.shape):
            problems.append(f"  {name}: shape {list(item.shape)} in the source, {list(partner.shape)} in the destination")
    if problems:
        raise FingerprintError(
            "cannot transfer weights, nothing was copied:\n" + "\n".join(problems)
            + "\n(add the missing renames to a mapping file: names / prefixes / cells / ignore)"
        )

    pairs = []
    for name, item in source_tensors.items():
        partner = destination_tensors[name]
        destination.write(partner.tensor, source.to_host(item.tensor))
        pairs.append((item.native_name, partner.native_name))
    return TransferReport(pairs)


def _by_common_name(adapter: Any, rules: NameMapping, side: str) -> dict[str, NamedTensor]:
    return rules.index(adapter.named_params() + adapter.named_state(), f"the {side} model")


def _hint(name: str, candidates: list[str]) -> str:
    near = close_matches(name, candidates)
    return f" (did you mean {' or '.join(near)}?)" if near else ""
