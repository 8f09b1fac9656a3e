"""Evaluation videos: frame composition (RGB | depth | text strip) and an atomic MP4 writer.

- `compose_frame(rgb, depth, overlay_lines)`: the third-person RGB view and the colour-mapped head
  depth (resized to the RGB height) side by side, above a text strip with the given lines
  (scenario, current skill and argument, stage reached, step count...), drawn with Pillow's
  default font.
- `VideoWriter(path)`: context manager writing H.264 MP4 through imageio + imageio-ffmpeg at
  30 fps in yuv420p (plays in browsers and players); frames are padded with black to a multiple
  of 16 pixels (the codec's macro-block size) instead of being rescaled. Frames go to a hidden
  temporary file in the same folder, renamed to `path` on a clean close; on an exception the
  temporary file is removed and an existing `path` stays untouched. The finished file gets the
  mode of a plainly created one (0644 under the usual umask 022; `mkstemp` alone gives 0600), so
  that others can read it.
- `video_filename(scenario, episode_id, success)`: e.g. `tidy_house_ep0003_success=1.mp4`.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

import imageio.v2 as iio
import numpy as np
from matplotlib import colormaps
from PIL import Image, ImageDraw, ImageFont

VIDEO_FPS = 30  # habitat-baselines video_fps
MACRO_BLOCK = 16


def default_file_mode() -> int:
    """The mode `open()` would give a new file here: 0o666 less the process umask."""
    mask = os.umask(0)  # the umask can only be read by setting it; put it straight back
    os.umask(mask)
    return 0o666 & ~mask


def video_filename(scenario: str, episode_id: str | int, success: bool, ext: str = ".mp4") -> str:
    """File name carrying the scenario, episode id and success, e.g. `tidy_house_ep0003_success=1.mp4`."""
    eid = str(episode_id)
    if eid.startswith(f"{scenario}_"):
        eid = eid[len(scenario) + 1 :]
    eid = f"{int(eid):04d}" if eid.isdigit() else re.sub(r"[^A-Za-z0-9_-]", "_", eid)
    return f"{scenario}_ep{eid}_success={int(bool(success))}{ext}"


def depth_to_rgb(depth: np.ndarray, max_depth: float | None = None, cmap: str = "viridis") -> np.ndarray:
    """(H, W) or (H, W, 1) depth in metres -> (H, W, 3) uint8 through a matplotlib colour map."""
    d = np.asarray(depth, dtype=np.float64)
    if d.ndim == 3 and d.shape[2] == 1:
        d = d[..., 0]
    if d.ndim != 2:
        raise ValueError(f"depth must be (H, W) or (H, W, 1), got shape {np.asarray(depth).shape}")
    finite = d[np.isfinite(d)]
    if max_depth is None:
        max_depth = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    x = np.clip(np.nan_to_num(d, nan=0.0, posinf=max_depth) / max_depth, 0.0, 1.0)
    return (colormaps[cmap](x)[..., :3] * 255.0 + 0.5).astype(np.uint8)


def _as_rgb_uint8(frame: np.ndarray, what: str) -> np.ndarray:
    a = np.asarray(frame)
    if a.dtype != np.uint8:
        raise ValueError(f"{what} must be uint8, got {a.dtype}")
    if a.ndim == 2:
        a = a[..., None]
    if a.ndim != 3 or a.shape[2] not in (1, 3, 4):
        raise ValueError(f"{what} must be (H, W, 3) uint8, got shape {a.shape}")
    if a.shape[2] == 1:
        a = np.repeat(a, 3, axis=2)
    return np.ascontiguousarray(a[..., :3])


def text_strip(lines: Sequence[str], width: int, font_size: int = 14) -> np.ndarray:
    """A dark strip of the given width with one line of white text per entry."""
    font = ImageFont.load_default(size=font_size)
    line_h = font_size + 4
    height = 6 + line_h * len(lines)
    img = Image.new("RGB", (width, height), (24, 24, 24))
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(lines):
        draw.text((6, 3 + i * line_h), str(line), fill=(255, 255, 255), font=font)
    return np.asarray(img, dtype=np.uint8)


def compose_frame(
    rgb: np.ndarray,
    depth: np.ndarray | None,
    overlay_lines: Sequence[str] = (),
    max_depth: float | None = None,
    font_size: int = 14,
) -> np.ndarray:
    """Third-person RGB | colour-mapped depth (at the RGB height), above a text strip."""
    rgb = _as_rgb_uint8(rgb, "rgb")
    h = rgb.shape[0]
    parts = [rgb]
    if depth is not None:
        colored = depth_to_rgb(depth, max_depth)
        dh, dw = colored.shape[:2]
        new_w = max(1, round(dw * h / dh))
        parts.append(np.asarray(Image.fromarray(colored).resize((new_w, h), Image.BILINEAR), dtype=np.uint8))
    frame = np.concatenate(parts, axis=1)
    if overlay_lines:
        frame = np.concatenate([frame, text_strip(overlay_lines, frame.shape[1], font_size)], axis=0)
    return frame


def pad_to_block(frame: np.ndarray, block: int = MACRO_BLOCK) -> np.ndarray:
    """Pad a (H, W, 3) frame with black at the bottom and right to multiples of `block`."""
    h, w = frame.shape[:2]
    ph, pw = (-h) % block, (-w) % block
    if ph == 0 and pw == 0:
        return frame
    return np.pad(frame, ((0, ph), (0, pw), (0, 0)))


class VideoWriter:
    """Context manager writing RGB frames to an MP4 file atomically (see the module docstring)."""

    def __init__(self, path: str | os.PathLike, fps: int = VIDEO_FPS, quality: float = 7.0):
        self.path = Path(path)
        if self.path.suffix.lower() != ".mp4":
            raise ValueError(f"video path must end in .mp4, got {self.path}")
        self.fps = int(fps)
        self.quality = float(quality)
        self.frame_shape: tuple[int, int] | None = None  # (H, W) of the frames given, before padding
        self.num_frames = 0
        self._tmp: Path | None = None
        self._writer = None
        self._finished = False

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def append(self, frame: np.ndarray) -> None:
        """Add one (H, W, 3) uint8 frame; every frame must have the size of the first."""
        if self._finished:
            raise ValueError(f"video {self.path} is already closed")
        rgb = _as_rgb_uint8(frame, "video frame")
        if self.frame_shape is None:
            self.frame_shape = (rgb.shape[0], rgb.shape[1])
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.stem}.", suffix=".partial.mp4", dir=self.path.parent)
            os.close(fd)
            self._tmp = Path(tmp)
            self._writer = iio.get_writer(
                self._tmp,
                format="FFMPEG",
                mode="I",
                fps=self.fps,
                codec="libx264",
                pixelformat="yuv420p",
                quality=self.quality,
                macro_block_size=1,  # frames are padded here; never let the plugin rescale them
                ffmpeg_log_level="error",
            )
        elif (rgb.shape[0], rgb.shape[1]) != self.frame_shape:
            raise ValueError(f"video frame size {rgb.shape[:2]} differs from the first frame's {self.frame_shape}")
        self._writer.append_data(pad_to_block(rgb))
        self.num_frames += 1

    def close(self) -> Path:
        """Finish the file and move it into place; ValueError if no frame was written."""
        if self._finished:
            return self.path
        if self._writer is None:
            raise ValueError(f"no frames were written to {self.path}")
        try:
            self._writer.close()
        except BaseException:
            self.abort()
            raise
        self._writer = None
        assert self._tmp is not None
        os.chmod(self._tmp, default_file_mode())  # mkstemp made it 0600
        os.replace(self._tmp, self.path)
        self._tmp = None
        self._finished = True
        return self.path

    def abort(self) -> None:
        """Stop writing and remove the temporary file; `path` is left as it was."""
        if self._finished:
            return
        self._finished = True
        if self._writer is not None:
            with contextlib.suppress(Exception):  # the partial file is discarded anyway
                self._writer.close()
            self._writer = None
        if self._tmp is not None and self._tmp.exists():
            self._tmp.unlink()
        self._tmp = None
