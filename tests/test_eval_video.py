"""Evaluation videos: composed frames, MP4 written atomically and read back with imageio."""

from __future__ import annotations

import os
import stat

import imageio.v2 as iio
import numpy as np
import pytest

from eval.video import VideoWriter, compose_frame, depth_to_rgb, video_filename


def _frame(i: int, h: int = 120, w: int = 150) -> np.ndarray:
    img = np.zeros((h, w, 3), dtype=np.uint8)
    img[:, : (i * 7) % w, 0] = 255  # a red bar that grows, so frames differ
    img[h // 2 :, :, 2] = 128
    return img


def test_compose_frame_layout():
    rgb = np.full((100, 160, 3), 200, dtype=np.uint8)
    depth = np.linspace(0.0, 5.0, 64 * 64, dtype=np.float32).reshape(64, 64, 1)
    frame = compose_frame(rgb, depth, ["tidy_house ep 3", "skill: pick(obj_0)", "stage: place_0", "step 120"])
    assert frame.dtype == np.uint8
    assert frame.shape[1] == 160 + 100  # depth resized to the RGB height keeps its square aspect
    assert frame.shape[0] > 100 + 4 * 14  # strip with four text lines below the images
    assert np.array_equal(frame[:100, :160], rgb)
    strip = frame[100:]
    assert strip.max() == 255 and np.median(strip) < 60  # white text on a dark strip
    no_text = compose_frame(rgb, depth, [])
    assert no_text.shape == (100, 260, 3)
    # depth colour map: near and far ends differ, and a max_depth clips
    cm = depth_to_rgb(depth, max_depth=5.0)
    assert not np.array_equal(cm[0, 0], cm[-1, -1])
    assert np.array_equal(depth_to_rgb(depth, max_depth=1.0)[-1, -1], depth_to_rgb(depth, max_depth=1.0)[40, 40])
    with pytest.raises(ValueError, match="uint8"):
        compose_frame(rgb.astype(np.float32), depth)


def test_video_writes_and_reads_back(tmp_path):
    path = tmp_path / "videos" / video_filename("tidy_house", "3", True)
    assert path.name == "tidy_house_ep0003_success=1.mp4"
    frames = [_frame(i) for i in range(12)]
    with VideoWriter(path) as vw:
        for f in frames:
            vw.append(f)
    reader = iio.get_reader(path, format="FFMPEG")
    assert reader.get_meta_data()["fps"] == pytest.approx(30.0)
    back = list(reader.iter_data())
    reader.close()
    assert len(back) == 12
    assert back[0].shape == (128, 160, 3)  # 120x150 padded to multiples of 16
    # content survives encoding (lossy): frame 5's red bar is 35 px wide
    assert back[5][60, 20, 0] > 200 and back[5][60, 60, 0] < 60
    assert not np.array_equal(back[0], back[11])
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temp file left


def test_video_error_keeps_existing_file(tmp_path):
    path = tmp_path / video_filename("set_table", "set_table_0007", False)
    assert path.name == "set_table_ep0007_success=0.mp4"
    with VideoWriter(path) as vw:
        vw.append(_frame(0))
    before = path.read_bytes()
    with pytest.raises(ValueError, match="differs from the first frame"), VideoWriter(path) as vw:
        vw.append(_frame(1))
        vw.append(_frame(2, h=64))
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    with pytest.raises(ValueError, match="no frames"), VideoWriter(tmp_path / "empty.mp4"):
        pass
    assert not (tmp_path / "empty.mp4").exists()


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640)])
def test_video_file_mode_follows_umask(tmp_path, umask, mode):
    """Not mkstemp's 0600: others can read the video (as far as the umask allows)."""
    old = os.umask(umask)
    try:
        with VideoWriter(tmp_path / "v.mp4") as vw:
            vw.append(_frame(0))
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "v.mp4").stat().st_mode) == mode
