"""Episode datasets: dataclasses, JSON / .json.gz reading and atomic writing, validation.

The format follows habitat's RearrangeDatasetV0 (one layout, object kinds and start poses, goal
positions, receptacle names, articulated joint states per episode) with a dataset header:

    {"version": 1, "kind": "pick", "split": "train", "seed": 0, "episodes": [ {...}, ... ]}

Every malformed or corrupt file raises `EpisodeFileError` with a one-line message naming the file
and the problem. The generator lives in `rearrange.generate`.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from configs.files import write_bytes_atomic

FORMAT_VERSION = 1
SKILL_KINDS = ("pick", "place", "nav", "open_fridge", "close_fridge", "open_cab", "close_cab")
SCENARIO_KINDS = ("tidy_house", "prepare_groceries", "set_table")
EPISODE_KINDS = SKILL_KINDS + SCENARIO_KINDS
SPLITS = ("train", "val")


class EpisodeFileError(ValueError):
    """An episode file that cannot be read or does not follow the format; the message is one line."""


@dataclass
class ObjectSpec:
    """One movable object: its name in the sim ("obj_0", ...), kind, start pose and receptacle."""

    name: str
    kind: str
    pos: list[float]  # (3,)
    quat: list[float]  # (4,) w, x, y, z
    receptacle: str


@dataclass
class TargetSpec:
    """A rearrangement target: move `object` to `goal_pos` on `goal_receptacle`."""

    object: str
    goal_pos: list[float]  # (3,)
    goal_receptacle: str


@dataclass
class Episode:
    """One episode; `targets` are in the order a plan handles them."""

    episode_id: str
    kind: str
    split: str
    layout_seed: int
    objects: list[ObjectSpec]
    targets: list[TargetSpec]
    art_states: dict[str, float]
    robot_start: dict[str, Any] | None = None  # {"xy": [x, y], "yaw": a}
    # kind-specific extras: "start_holding" (place, nav: the object starts in the gripper), "nav_goal"
    # (nav), "receptacle_kind" (pick/place/nav: "surface", "fridge" or "drawer", where the skill works),
    # "articulated" and "handle" (open/close), "drawer", "drawer_handle", "fridge_handle" (set_table)
    info: dict[str, Any] = field(default_factory=dict)

    def object_kinds(self) -> list[str]:
        """Object kinds in sim order (obj_0, obj_1, ...), as `RearrangeSim` expects them."""
        return [o.kind for o in self.objects]

    def object_spec(self, name: str) -> ObjectSpec:
        for o in self.objects:
            if o.name == name:
                return o
        raise KeyError(f"episode {self.episode_id} has no object '{name}'")

    def to_dict(self) -> dict[str, Any]:
        return {
            "episode_id": self.episode_id,
            "kind": self.kind,
            "split": self.split,
            "layout_seed": int(self.layout_seed),
            "objects": [
                {"name": o.name, "kind": o.kind, "pos": _floats(o.pos), "quat": _floats(o.quat),
                 "receptacle": o.receptacle}
                for o in self.objects
            ],
            "targets": [
                {"object": t.object, "goal_pos": _floats(t.goal_pos), "goal_receptacle": t.goal_receptacle}
                for t in self.targets
            ],
            "art_states": {k: float(v) for k, v in self.art_states.items()},
            "robot_start": None if self.robot_start is None else {
                "xy": _floats(self.robot_start["xy"]), "yaw": float(self.robot_start["yaw"])},
            "info": _plain(self.info),
        }


def _floats(values: Sequence[float]) -> list[float]:
    return [float(v) for v in values]


def _plain(value: Any) -> Any:
    """Numpy scalars/arrays and tuples -> JSON-ready Python values."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):
        return _plain(value.tolist())
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        return float(value)
    raise TypeError(f"cannot store {type(value).__name__} in an episode")


# ----------------------------------------------------------------------------- validation


class _Bad(Exception):
    """Internal: a validation failure with its location."""


def _req(d: Any, key: str, where: str) -> Any:
    if not isinstance(d, dict):
        raise _Bad(f"{where} must be an object")
    if key not in d:
        raise _Bad(f"{where} is missing '{key}'")
    return d[key]


def _str(v: Any, where: str) -> str:
    if not isinstance(v, str) or not v:
        raise _Bad(f"{where} must be a non-empty string")
    return v


def _vec(v: Any, n: int, where: str) -> list[float]:
    if not isinstance(v, list) or len(v) != n:
        raise _Bad(f"{where} must be a list of {n} numbers")
    out = []
    for x in v:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            raise _Bad(f"{where} must be a list of {n} finite numbers")
        out.append(float(x))
    return out


def _num(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise _Bad(f"{where} must be a finite number")
    return float(v)


def episode_from_dict(d: Any, where: str = "episode") -> Episode:
    """Validate one episode dict and build the `Episode`; raises `EpisodeFileError` (one line)."""
    try:
        return _episode_from_dict(d, where)
    except _Bad as exc:
        raise EpisodeFileError(str(exc)) from None


def _episode_from_dict(d: Any, where: str) -> Episode:
    episode_id = _str(_req(d, "episode_id", where), f"{where}.episode_id")
    where = f"episode '{episode_id}'"
    kind = _str(_req(d, "kind", where), f"{where}.kind")
    if kind not in EPISODE_KINDS:
        raise _Bad(f"{where}.kind '{kind}' is unknown; valid choices: {', '.join(EPISODE_KINDS)}")
    split = _str(_req(d, "split", where), f"{where}.split")
    if split not in SPLITS:
        raise _Bad(f"{where}.split '{split}' is unknown; valid choices: {', '.join(SPLITS)}")
    layout_seed = _req(d, "layout_seed", where)
    if isinstance(layout_seed, bool) or not isinstance(layout_seed, int):
        raise _Bad(f"{where}.layout_seed must be an integer")
    raw_objects = _req(d, "objects", where)
    if not isinstance(raw_objects, list):
        raise _Bad(f"{where}.objects must be a list")
    objects = []
    for i, o in enumerate(raw_objects):
        w = f"{where}.objects[{i}]"
        objects.append(ObjectSpec(
            name=_str(_req(o, "name", w), f"{w}.name"), kind=_str(_req(o, "kind", w), f"{w}.kind"),
            pos=_vec(_req(o, "pos", w), 3, f"{w}.pos"), quat=_vec(_req(o, "quat", w), 4, f"{w}.quat"),
            receptacle=_str(_req(o, "receptacle", w), f"{w}.receptacle")))
    names = [o.name for o in objects]
    if len(set(names)) != len(names):
        raise _Bad(f"{where}.objects has duplicate names")
    for i, o in enumerate(objects):
        if o.name != f"obj_{i}":
            raise _Bad(f"{where}.objects[{i}].name must be 'obj_{i}' (sim order), got '{o.name}'")
        if abs(math.sqrt(sum(q * q for q in o.quat)) - 1.0) > 1e-3:
            raise _Bad(f"{where}.objects[{i}].quat must be a unit quaternion")
    raw_targets = _req(d, "targets", where)
    if not isinstance(raw_targets, list):
        raise _Bad(f"{where}.targets must be a list")
    targets = []
    for i, t in enumerate(raw_targets):
        w = f"{where}.targets[{i}]"
        obj = _str(_req(t, "object", w), f"{w}.object")
        if obj not in names:
            raise _Bad(f"{w}.object '{obj}' is not one of the episode's objects")
        targets.append(TargetSpec(object=obj, goal_pos=_vec(_req(t, "goal_pos", w), 3, f"{w}.goal_pos"),
                                  goal_receptacle=_str(_req(t, "goal_receptacle", w), f"{w}.goal_receptacle")))
    raw_art = _req(d, "art_states", where)
    if not isinstance(raw_art, dict):
        raise _Bad(f"{where}.art_states must be an object of joint values")
    art_states = {str(k): _num(v, f"{where}.art_states.{k}") for k, v in raw_art.items()}
    raw_start = d.get("robot_start")
    robot_start = None
    if raw_start is not None:
        w = f"{where}.robot_start"
        robot_start = {"xy": _vec(_req(raw_start, "xy", w), 2, f"{w}.xy"),
                       "yaw": _num(_req(raw_start, "yaw", w), f"{w}.yaw")}
    info = d.get("info", {})
    if not isinstance(info, dict):
        raise _Bad(f"{where}.info must be an object")
    return Episode(episode_id=episode_id, kind=kind, split=split, layout_seed=layout_seed,
                   objects=objects, targets=targets, art_states=art_states,
                   robot_start=robot_start, info=info)


# ----------------------------------------------------------------------------- IO


def dataset_dict(episodes: Sequence[Episode], kind: str | None = None, split: str | None = None,
                 seed: int | None = None) -> dict[str, Any]:
    """The on-disk dict: header plus episodes. kind/split default to the episodes' (or "mixed")."""
    kinds = {e.kind for e in episodes}
    splits = {e.split for e in episodes}
    return {
        "version": FORMAT_VERSION,
        "kind": kind if kind is not None else (kinds.pop() if len(kinds) == 1 else "mixed"),
        "split": split if split is not None else (splits.pop() if len(splits) == 1 else "mixed"),
        "seed": seed,
        "episodes": [e.to_dict() for e in episodes],
    }


def out_path_error(path: str | os.PathLike) -> str | None:
    """The one-line error for an `--out` episode file that is not `.json` or `.json.gz`, else None."""
    name = Path(path).name
    if name.endswith(".json") or name.endswith(".json.gz"):
        return None
    return f"--out must end with .json or .json.gz, got '{path}'"


def save_episodes(path: str | os.PathLike, episodes: Sequence[Episode], *, kind: str | None = None,
                  split: str | None = None, seed: int | None = None) -> None:
    """Write episodes atomically (temp file in the same folder, then os.replace); gzip if `.gz`."""
    path = Path(path)
    data = json.dumps(dataset_dict(episodes, kind, split, seed), separators=(",", ":")).encode()
    if path.name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    write_bytes_atomic(path, data)


def load_dataset(path: str | os.PathLike) -> dict[str, Any]:
    """Read and validate a dataset file; returns the header with `episodes` as `Episode` objects."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise EpisodeFileError(f"episode file {path} does not exist") from None
    except OSError as exc:
        raise EpisodeFileError(f"cannot read episode file {path}: {exc.strerror}") from None
    try:
        if path.name.endswith(".gz") or raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        data = json.loads(raw.decode("utf-8"))
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise EpisodeFileError(f"episode file {path} is not valid gzip: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EpisodeFileError(f"episode file {path} is not valid JSON: {str(exc).splitlines()[0]}") from None
    try:
        if not isinstance(data, dict):
            raise _Bad("top level must be an object with 'version' and 'episodes'")
        version = _req(data, "version", "dataset")
        if version != FORMAT_VERSION:
            raise _Bad(f"unsupported version {version!r} (this code reads version {FORMAT_VERSION})")
        raw_eps = _req(data, "episodes", "dataset")
        if not isinstance(raw_eps, list):
            raise _Bad("'episodes' must be a list")
        episodes = [_episode_from_dict(e, f"episodes[{i}]") for i, e in enumerate(raw_eps)]
        ids = [e.episode_id for e in episodes]
        if len(set(ids)) != len(ids):
            raise _Bad("duplicate episode_id values")
    except _Bad as exc:
        raise EpisodeFileError(f"malformed episode file {path}: {exc}") from None
    return {"version": version, "kind": data.get("kind"), "split": data.get("split"),
            "seed": data.get("seed"), "episodes": episodes}


def load_episodes(path: str | os.PathLike) -> list[Episode]:
    """Read a `.json` or `.json.gz` dataset; `EpisodeFileError` (one-line message) on bad files."""
    return load_dataset(path)["episodes"]


def load_episodes_of_kind(path: str | os.PathLike, kind: str) -> tuple[list[Episode], str | None]:
    """A dataset's episodes and its split (None if the header has none), for a caller that runs `kind`;
    `EpisodeFileError` (one line) on a bad file or on episodes of another kind."""
    data = load_dataset(path)
    wrong = sorted({e.kind for e in data["episodes"] if e.kind != kind})
    if wrong:
        raise EpisodeFileError(f"episode file {path} holds {', '.join(wrong)} episodes, not {kind}")
    return data["episodes"], data["split"]


def generate_episodes(kind: str, split: str, count: int, seed: int) -> list[Episode]:
    """Generate `count` episodes of `kind` on `split` layouts (see `rearrange.generate`)."""
    from rearrange.generate import generate_episodes as _generate

    return _generate(kind, split, count, seed)
