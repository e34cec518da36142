"""Reading the commands' inputs: registered datasets (real unless the user
opts in to the surrogate) and the user's own CSV and domain JSON files, with
the SHA-256 of every file read (recorded in the synth sidecar)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Input", "add_allow_surrogate", "file_sha256", "is_file_arg", "resolve_dataset", "use_registered"]


@dataclass(frozen=True)
class Input:
    """A dataset a command read: the data, ``"real"`` or ``"surrogate"``, and
    ``{file: sha256}`` of the files it came from (empty for a surrogate)."""

    dataset: object
    source: str
    sha256: dict = field(default_factory=dict)
    path: Path | None = None  # the user's CSV, when the input was one


def add_allow_surrogate(parser) -> None:
    parser.add_argument(
        "--allow-surrogate",
        action="store_true",
        help="if a registered dataset's real files are absent and cannot be fetched, run on its deterministic "
        "surrogate (same schema, not the data) instead of stopping",
    )


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def is_file_arg(arg: str) -> bool:
    return arg.endswith((".csv", ".zip", ".CSV")) or "/" in arg or Path(arg).exists()


def use_registered(name: str, allow_surrogate: bool) -> tuple[str, dict[str, str]]:
    """Make the registered dataset ``name`` (a registry name) usable: its real files
    present and verified -> ``("real", {path: sha256})``; otherwise, with
    ``allow_surrogate``, ``("surrogate", {})``; otherwise ``ValueError`` saying what
    is missing and how to fetch it. A tampered local file is always refused."""
    from ..data.fetch import DataUnavailableError, require

    try:
        return "real", require(name)
    except DataUnavailableError as exc:
        if allow_surrogate:
            return "surrogate", {}
        raise ValueError(f"{exc}; or pass --allow-surrogate to run on the deterministic surrogate") from None


def resolve_dataset(arg: str, domain_json: str | None, *, what: str = "dataset", allow_surrogate: bool = False) -> Input:
    """The dataset named by ``--dataset``/``--public``: a registered name or a CSV (+ domain JSON)."""
    from ..data import RECORD_DATASETS, load_csv
    from ..data.fetch import DataUnavailableError
    from ..data.loaders import load_registered

    if is_file_arg(arg):
        path = Path(arg)
        if not path.is_file():
            raise ValueError(f"{what} file {arg!r} does not exist")
        if domain_json is None:
            raise ValueError(f"{what} {arg!r} is a CSV: pass its domain with --domain JSON")
        ds = load_csv(path, domain_json)
        return Input(ds, "real", {str(path): file_sha256(path), str(domain_json): file_sha256(domain_json)}, path)
    if arg not in RECORD_DATASETS:
        raise ValueError(f"unknown {what} {arg!r}: not a file and not one of {', '.join(RECORD_DATASETS)}")
    try:
        ds, source, sha = load_registered(arg, allow_surrogate=allow_surrogate)
    except DataUnavailableError as exc:
        raise ValueError(f"{exc}; or pass --allow-surrogate to run on the deterministic surrogate") from None
    if domain_json is not None:
        from ..domain import Domain

        dom = Domain.from_json(domain_json)
        if dom.to_dict() != ds.domain.to_dict():
            raise ValueError(f"--domain {domain_json!r} does not match the domain of registered dataset {arg!r}")
    return Input(ds, source, sha)
