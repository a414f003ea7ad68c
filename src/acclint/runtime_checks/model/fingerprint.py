"""The fingerprint: what one side recorded at step 0, and its plain-JSON file format.

The file is meant to travel between machines (the GPU run and the NPU run are usually on
different hosts), so it is plain JSON with no framework objects in it. Non-finite floats
are written as the strings "NaN", "Infinity" and "-Infinity" because bare NaN is not JSON.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from acclint.runtime_checks.model import contenthash
from acclint.runtime_checks.model.errors import FingerprintError

FORMAT = "acclint-fingerprint"
# 2 added the batch, the module settings and the forward activations; version 1 files still load
# (those stages are then "not recorded"). 3 changed the content hash from sha256 to mix64
# (`contenthash`; named in `hash_algorithm`): older files still load, and compare says their
# hashes cannot be compared with newer ones instead of calling every tensor different.
FORMAT_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)

_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


@dataclass
class TensorRecord:
    """One parameter or one piece of state (running statistics), recorded before the step."""

    name: str  # common (torch-style) name after the built-in cross-framework mapping
    native_name: str  # the name in its own framework
    module: str  # class name of the owning module / cell (user mapping files key on it)
    shape: list[int]
    dtype: str
    trainable: bool
    numel: int
    stats: dict[str, float]  # mean, std, min, max, norm
    sha256: str  # content hash (the fingerprint's hash_algorithm; the name is kept from format 1)


@dataclass
class ValueRecord:
    """One tensor of the batch, or of a module's inputs or output, named by its path in that structure."""

    path: str  # "0", "1.labels", "input_ids"; "" for a lone tensor
    shape: list[int]
    dtype: str
    stats: dict[str, float]  # mean, std, min, max, norm
    sha256: str  # content hash by value (hash_algorithm): floats as float32, integers and bools as int64
    samples: list[str] | None = None  # batch only: a short hash per sample (along the first dimension)
    # activations only: float32 values at evenly spaced positions of the flattened tensor, which see
    # an element-wise change (a GELU approximation) that the statistics average away
    sample: list[float] | None = None


@dataclass
class ModuleRecord:
    """The numerics settings of one module that are not weights (norm eps, dropout p, ...)."""

    name: str  # native module path ("" is the model itself)
    module: str  # class name
    settings: dict[str, Any]  # common spelling and convention: eps, momentum (torch's), p, approximate, ...


@dataclass
class ActivationRecord:
    """What one module call saw (`io` "input", leaf modules only) or produced (`io` "output")."""

    name: str  # native module path ("" is the model itself)
    module: str  # class name
    call: int  # 0 for the module's first call in the step, 1 for its second, ...
    io: str
    leaf: bool
    values: list[ValueRecord]


@dataclass
class OptimizerGroup:
    hparams: dict[str, Any]  # launcher spelling: lr, weight-decay, adam-beta1, ...
    params: list[str]  # common names


@dataclass
class OptimizerRecord:
    type: str  # normalised algorithm, e.g. "adamw" or "adamw-no-bias-correction"
    native_type: str  # e.g. "torch.optim.adamw.AdamW"
    groups: list[OptimizerGroup]
    extra: dict[str, Any] = field(default_factory=dict)  # settings outside the groups, e.g. clip-grad


@dataclass
class StepRecord:
    loss: float  # step-0 loss
    grad_norm: float | None  # global L2 norm over all recorded gradients
    grad_norms: dict[str, float | None]  # common name -> L2 norm (None: no gradient)
    loss_after_step: float | None
    after_step_batch: str  # "same" (capture: same batch after the update) or "next" (probe: step-1 batch)
    update_norms: dict[str, float]  # common name -> ||param_after - param_before||
    step_kept: bool | None  # capture: whether the model keeps the step; probe: None (the user's own loop)
    # `acclint capture --steps N`: the loss of each of the N steps (step 0 first; each on its own
    # batch) and the lr of every optimizer group at each step, as the step used it. None: not recorded.
    losses: list[float] | None = None
    lrs: list[list[float]] | None = None
    # Several data-parallel ranks: each rank's own losses (index = rank); `losses` is their mean per step.
    rank_losses: list[list[float]] | None = None
    # What `--steps N` did not record, and why (a run that ended first, a step whose output is no loss).
    steps_unrecorded: str | None = None


@dataclass
class Fingerprint:
    framework: str  # "torch" or "mindspore"
    source: str  # "capture" or "probe"
    model: str  # class name of the model
    device: str
    training: bool
    params: list[TensorRecord]
    state: list[TensorRecord]
    optimizer: OptimizerRecord | None
    step: StepRecord | None
    env: dict[str, Any]
    rank: int = 0
    world_size: int = 1
    version: int = FORMAT_VERSION
    tensors_file: str | None = None
    hash_algorithm: str = contenthash.ALGORITHM
    # None: not recorded (a version 1 file, a Probe without the batch, activations switched off).
    batch: list[ValueRecord] | None = None
    modules: list[ModuleRecord] | None = None
    forward: list[ActivationRecord] | None = None  # in the order the hooks fired
    # True: one fingerprint of the whole model merged from all `world_size` ranks (sharded_run);
    # False with world_size > 1: one rank's own view (files written before distributed capture).
    logical: bool = False
    # Full initial tensors (common name -> numpy array) when asked for; saved to a side .npz, never to JSON.
    tensors: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    path: str | None = field(default=None, repr=False, compare=False)  # where it was loaded from / saved to

    # ------------------------------------------------------------------ summary helpers
    @property
    def label(self) -> str:
        version = self.env.get("versions", {}).get(self.framework, "?")
        where = self.path or "<memory>"
        return f"{where} ({self.framework} {version} on {self.device}, {self.source})"

    def param_count(self) -> tuple[int, int]:
        """(all, trainable) parameter element counts; state is not counted."""
        total = sum(p.numel for p in self.params)
        trainable = sum(p.numel for p in self.params if p.trainable)
        return total, trainable

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for transient in ("tensors", "path"):
            data.pop(transient)
        if not data["logical"]:
            del data["logical"]  # written for merged fingerprints only: a one-process file is as before
        ordered = {"format": FORMAT, "version": data.pop("version")}
        ordered.update(data)
        return _encode_non_finite(ordered)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, allow_nan=False)

    def save(self, path: str | Path) -> Path:
        """Write the fingerprint as JSON (and full tensors, if recorded, to a side .npz).

        A fingerprint merged from every rank (distributed capture or Probe) is the same on every
        rank and only rank 0 writes it. A rank's own view is written per rank: a "{rank}"
        placeholder in `path` is filled in, otherwise ".rank<N>" is inserted before the suffix.
        Returns the path (written, or on ranks other than 0 the one rank 0 writes).
        """
        from acclint.runtime_checks.model.ranks import rank_path

        if self.logical:
            target = Path(path)
            if self.rank != 0:
                self.path = str(target)
                return target
        else:
            target = rank_path(Path(path), self.rank, self.world_size)
        target.parent.mkdir(parents=True, exist_ok=True)
        if self.tensors:
            import numpy as np

            tensors_path = target.with_suffix(".tensors.npz")
            np.savez(tensors_path, **self.tensors)
            self.tensors_file = tensors_path.name
        target.write_text(self.to_json() + "\n", encoding="utf-8")
        self.path = str(target)
        return target

    def load_tensors(self) -> dict[str, Any] | None:
        """The full initial tensors, from memory or the side .npz; None when not recorded."""
        if self.tensors is None and self.tensors_file and self.path:
            import numpy as np

            npz_path = Path(self.path).parent / self.tensors_file
            try:
                with np.load(npz_path) as npz:
                    self.tensors = {key: npz[key] for key in npz.files}
            except (OSError, ValueError) as exc:
                raise FingerprintError(f"cannot read the tensors file {npz_path}: {exc}") from exc
        return self.tensors


def load(path: str | Path) -> Fingerprint:
    """Read a fingerprint file written by `Fingerprint.save`; FingerprintError on any problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FingerprintError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise FingerprintError(f"{path}: cannot read: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        # At the end, or on the last line (a string cut off in the middle runs to the end).
        truncated = exc.pos >= len(text.rstrip()) or "\n" not in text.rstrip()[exc.pos :]
        hint = " (the file looks truncated)" if truncated else ""
        raise FingerprintError(f"{path}: not valid JSON{hint}: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    fingerprint = from_dict(data, source=str(path))
    fingerprint.path = str(path)
    return fingerprint


def from_dict(data: Any, source: str = "fingerprint") -> Fingerprint:
    """Build a Fingerprint from its JSON dict, checking format, version and field types."""
    try:
        return _from_dict(data, source)
    except FingerprintError:
        raise
    except (TypeError, ValueError, AttributeError, KeyError) as exc:  # a field of the wrong shape deeper down
        raise FingerprintError(f"{source}: malformed fingerprint ({type(exc).__name__}: {exc})") from None


def _from_dict(data: Any, source: str) -> Fingerprint:
    reader = _Reader(source)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise FingerprintError(f"{source}: not an acclint fingerprint (no \"format\": \"{FORMAT}\" field)")
    version = data.get("version")
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        readable = ", ".join(map(str, READABLE_VERSIONS[:-1])) + f" and {READABLE_VERSIONS[-1]}"
        raise FingerprintError(
            f"{source}: fingerprint format version {version!r} is not supported by this acclint "
            f"(it reads versions {readable}); capture both sides with the same acclint version"
        )
    optimizer = data.get("optimizer")
    step = data.get("step")
    return Fingerprint(
        framework=reader.get(data, "framework", str),
        source=reader.get(data, "source", str),
        model=reader.get(data, "model", str),
        device=reader.get(data, "device", str),
        training=reader.get(data, "training", bool),
        params=[reader.tensor(item) for item in reader.get(data, "params", list)],
        state=[reader.tensor(item) for item in reader.get(data, "state", list)],
        optimizer=None if optimizer is None else reader.optimizer(optimizer),
        step=None if step is None else reader.step(step),
        env=reader.env(reader.get(data, "env", dict)),
        rank=reader.get(data, "rank", int),
        world_size=reader.get(data, "world_size", int),
        version=version,
        tensors_file=data.get("tensors_file"),
        hash_algorithm=reader.get(data, "hash_algorithm", str) if version >= 3 else contenthash.LEGACY_ALGORITHM,
        batch=reader.optional_list(data, "batch", reader.value),
        modules=reader.optional_list(data, "modules", reader.module),
        forward=reader.optional_list(data, "forward", reader.activation),
        logical=data.get("logical") is True,
    )


class _Reader:
    """Field access with messages that name the file and the field."""

    def __init__(self, source: str) -> None:
        self.source = source

    def get(self, data: dict, key: str, kind: type) -> Any:
        if not isinstance(data, dict) or key not in data:
            raise FingerprintError(f"{self.source}: field {key!r} is missing (truncated or hand-edited file?)")
        value = data[key]
        if kind is float:
            return self.number(value, key)
        if kind is int and isinstance(value, bool) or not isinstance(value, kind):
            raise FingerprintError(f"{self.source}: field {key!r} should be {kind.__name__}, got {type(value).__name__}")
        return value

    def number(self, value: Any, key: str) -> float:
        if isinstance(value, str) and value in _NON_FINITE:
            return _NON_FINITE[value]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FingerprintError(f"{self.source}: field {key!r} should be a number, got {value!r}")
        return float(value)

    def optional_number(self, value: Any, key: str) -> float | None:
        return None if value is None else self.number(value, key)

    def tensor(self, item: dict) -> TensorRecord:
        stats = self.get(item, "stats", dict)
        return TensorRecord(
            name=self.get(item, "name", str),
            native_name=self.get(item, "native_name", str),
            module=self.get(item, "module", str),
            shape=[int(n) for n in self.get(item, "shape", list)],
            dtype=self.get(item, "dtype", str),
            trainable=self.get(item, "trainable", bool),
            numel=self.get(item, "numel", int),
            stats={key: self.number(value, key) for key, value in stats.items()},
            sha256=self.get(item, "sha256", str),
        )

    def optional_list(self, data: dict, key: str, read: Any) -> list | None:
        return None if data.get(key) is None else [read(item) for item in self.get(data, key, list)]

    def value(self, item: dict) -> ValueRecord:
        samples = item.get("samples")
        return ValueRecord(
            path=self.get(item, "path", str),
            shape=[int(n) for n in self.get(item, "shape", list)],
            dtype=self.get(item, "dtype", str),
            stats={key: self.number(value, key) for key, value in self.get(item, "stats", dict).items()},
            sha256=self.get(item, "sha256", str),
            samples=None if samples is None else [str(s) for s in samples],
            sample=None if item.get("sample") is None else [self.number(v, "sample") for v in item["sample"]],
        )

    def module(self, item: dict) -> ModuleRecord:
        settings = self.get(item, "settings", dict)
        return ModuleRecord(
            name=self.get(item, "name", str),
            module=self.get(item, "module", str),
            settings={key: _decode_non_finite(value) for key, value in settings.items()},
        )

    def activation(self, item: dict) -> ActivationRecord:
        return ActivationRecord(
            name=self.get(item, "name", str),
            module=self.get(item, "module", str),
            call=self.get(item, "call", int),
            io=self.get(item, "io", str),
            leaf=self.get(item, "leaf", bool),
            values=[self.value(value) for value in self.get(item, "values", list)],
        )

    def env(self, env: dict) -> dict:
        for key in ("versions", "effective", "settings"):
            if key in env and not isinstance(env[key], dict):
                raise FingerprintError(f"{self.source}: field 'env.{key}' should be an object")
        return env

    def optimizer(self, item: dict) -> OptimizerRecord:
        groups = [
            OptimizerGroup(
                hparams={k: _decode_non_finite(v) for k, v in self.get(group, "hparams", dict).items()},
                params=list(self.get(group, "params", list)),
            )
            for group in self.get(item, "groups", list)
        ]
        return OptimizerRecord(
            type=self.get(item, "type", str),
            native_type=self.get(item, "native_type", str),
            groups=groups,
            extra={k: _decode_non_finite(v) for k, v in item.get("extra", {}).items()},
        )

    def step(self, item: dict) -> StepRecord:
        return StepRecord(
            loss=self.get(item, "loss", float),
            grad_norm=self.optional_number(item.get("grad_norm"), "grad_norm"),
            grad_norms={k: self.optional_number(v, k) for k, v in self.get(item, "grad_norms", dict).items()},
            loss_after_step=self.optional_number(item.get("loss_after_step"), "loss_after_step"),
            after_step_batch=self.get(item, "after_step_batch", str),
            update_norms={k: self.number(v, k) for k, v in self.get(item, "update_norms", dict).items()},
            step_kept=item.get("step_kept"),
            losses=None if item.get("losses") is None else [self.number(v, "losses") for v in item["losses"]],
            lrs=None if item.get("lrs") is None else [[self.number(v, "lrs") for v in row] for row in item["lrs"]],
            rank_losses=None if item.get("rank_losses") is None else [
                [self.number(v, "rank_losses") for v in row] for row in item["rank_losses"]],
            steps_unrecorded=item.get("steps_unrecorded"),
        )


def _encode_non_finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {key: _encode_non_finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode_non_finite(item) for item in value]
    return value


def _decode_non_finite(value: Any) -> Any:
    return _NON_FINITE.get(value, value) if isinstance(value, str) else value
