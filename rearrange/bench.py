"""bench-sim: raw single-process simulator throughput (physics + head depth + observation assembly).

Runs random actions in a pick-like setup (objects on receptacles, robot next to the dining table) and
prints steps/s and the split of time between physics, head depth and observation assembly.
`--depth-backend render|raycast|none` picks how head depth is made (`camera.head.backend`; none: no
depth). With `--layouts N` it repeats the measurement on the first N training layouts (step time
varies with scene size and clutter). `--depth-sweep` times head depth alone per frame, ray-cast and
rendered, at several resolutions; `--env-step` times whole `RearrangeEnv.step` calls of the pick skill
(physics + task + observations). `--repeats` repeats each timing (medians are printed; the machine
may be shared). `--snapshot PATH` writes an overview image of one apartment next to the head depth
image (used for docs/apartment.png). Speed is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from configs.files import atomic_path

DEPTH_CHOICES = ("render", "raycast", "none")
# --depth-sweep resolutions (square images, side in pixels)
SWEEP_SIZES: dict[str, tuple[int, ...]] = {"raycast": (8, 12, 16, 24, 32), "render": (16, 32, 64, 128)}


def _setup_env_vars() -> None:
    """Headless EGL and one llvmpipe thread, unless the user chose otherwise (before any GL context)."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    os.environ.setdefault("LP_NUM_THREADS", "1")


def pick_like_state(sim, rng: np.random.Generator) -> str:
    """Objects on the dining table and counter, robot 0.9 m in front of the table facing it; returns the target."""
    from rearrange.objects import object_kind

    layout = sim.layout
    table = layout.receptacles["table_0"]
    counter = layout.receptacles["counter_0"]
    objects = {}
    for i, name in enumerate(sim.object_names):
        rec = table if i % 2 == 0 else counter
        k = object_kind(sim.object_kind(name))
        x = rec.center[0] - rec.half_extent[0] + 0.12 + 0.18 * (i // 2)
        objects[name] = ((x, rec.center[1], rec.center[2] + k.rest_height + 0.001), (1.0, 0.0, 0.0, 0.0))
    base = np.array([table.center[0], table.center[1] - table.half_extent[1] - 0.08 - 0.9])
    sim.reset_state(objects, {}, base + rng.uniform(-0.05, 0.05, 2), float(np.pi / 2 + rng.normal(0, 0.2)))
    return sim.object_names[0]


def assemble_observation(sim, depth: np.ndarray | None, target: str) -> dict[str, np.ndarray]:
    """The pick skill's observations (habitat names) from simulator state, as float32 arrays."""
    ee = sim.ee_pos
    c, s = np.cos(sim.base_yaw), np.sin(sim.base_yaw)
    rel = sim.object_pos(target) - ee
    obs = {} if depth is None else {"head_depth": depth}
    return obs | {
        "joint": sim.arm_qpos.astype(np.float32),
        "ee_pos": sim.ee_pos_base.astype(np.float32),
        "is_holding": np.array([float(sim.grasped is not None)], dtype=np.float32),
        "relative_resting_position": (sim.resting_pos_base - sim.ee_pos_base).astype(np.float32),
        "obj_start_sensor": np.array(
            [c * rel[0] + s * rel[1], -s * rel[0] + c * rel[1], rel[2]], dtype=np.float32
        ),
    }


def head_camera_cfg(backend: str, width: int, height: int) -> dict[str, Any]:
    """The sim config overrides of a head depth backend ("none" keeps the rendered camera's config)."""
    head = {"width": width, "height": height, "backend": "render" if backend == "none" else backend}
    return {"camera": {"head": head}}


def _pick_sim(layout_seed: int, n_objects: int, backend: str, width: int, height: int):
    from rearrange.layout import generate_layout
    from rearrange.objects import OBJECT_KINDS
    from rearrange.sim import RearrangeSim

    kinds = sorted(OBJECT_KINDS)[:n_objects]
    return RearrangeSim(generate_layout(layout_seed), kinds, head_camera_cfg(backend, width, height))


def measure(
    layout_seed: int, steps: int, width: int, height: int, n_objects: int, seed: int = 0,
    backend: str = "render",
) -> dict[str, float]:
    """Time `steps` random-action policy steps; returns seconds per part and steps/s."""
    rng = np.random.default_rng(seed)
    sim = _pick_sim(layout_seed, n_objects, backend, width, height)
    target = pick_like_state(sim, rng)
    with_depth = backend != "none"
    if with_depth:
        sim.head_depth()  # create the GL context (or the ray directions) outside the timed loop
    t_phys = t_render = t_obs = 0.0
    cpu0 = time.process_time()
    for i in range(steps):
        if i % 100 == 0:
            pick_like_state(sim, rng)
        a = rng.uniform(-1.0, 1.0, 11)
        t0 = time.perf_counter()
        sim.step(a[0:7], float(a[7]), a[8:10])
        t1 = time.perf_counter()
        depth = sim.head_depth() if with_depth else None
        t2 = time.perf_counter()
        assemble_observation(sim, depth, target)
        t3 = time.perf_counter()
        t_phys += t1 - t0
        t_render += t2 - t1
        t_obs += t3 - t2
    cpu = time.process_time() - cpu0
    total = t_phys + t_render + t_obs
    out = {
        "cpu_sps": steps / cpu,
        "physics": t_phys,
        "render": t_render,
        "obs": t_obs,
        "total": total,
        "sps": steps / total,
        "ngeom": float(sim.model.ngeom),
        "area": float(np.prod(np.subtract(sim.layout.bounds[1], sim.layout.bounds[0]))),
    }
    sim.close()
    return out


def depth_sweep(
    layout_seed: int, frames: int, repeats: int, n_objects: int = 5, seed: int = 0,
    sizes: dict[str, tuple[int, ...]] = SWEEP_SIZES,
) -> dict[tuple[str, int], dict[str, float]]:
    """Head depth cost alone, per frame, for each (backend, square size) of `sizes`, in a pick scene.

    Each repeat times `frames` frames of every configuration in turn (the robot moving at random
    between frames, untimed), so load changes on a shared machine hit all of them alike. Returns
    ms per frame (see `_frame_stats`).
    """
    configs = [(b, n) for b, ns in sizes.items() for n in ns]
    sims = {c: _pick_sim(layout_seed, n_objects, c[0], c[1], c[1]) for c in configs}
    rngs = {c: np.random.default_rng(seed) for c in configs}
    for c, sim in sims.items():
        pick_like_state(sim, rngs[c])
        sim.head_depth()  # GL context / ray directions outside the timed loop
    times: dict[tuple[str, int], list[np.ndarray]] = {c: [] for c in configs}
    for _ in range(repeats):
        for c in configs:
            sim, rng, t = sims[c], rngs[c], np.empty((frames, 2))
            for i in range(frames):
                if i % 100 == 0:
                    pick_like_state(sim, rng)
                a = rng.uniform(-1.0, 1.0, 11)
                sim.step(a[0:7], None, a[8:10])
                t0, c0 = time.perf_counter(), time.process_time()
                sim.head_depth()
                t[i] = time.perf_counter() - t0, time.process_time() - c0
            times[c].append(t)
    for sim in sims.values():
        sim.close()
    return {c: _frame_stats(ts) for c, ts in times.items()}


def _frame_stats(repeats: list[np.ndarray]) -> dict[str, float]:
    """ms per call from per-repeat arrays of (wall, cpu) seconds per call: medians over all calls and
    medians over repeats of each repeat's mean, of wall-clock and of CPU time (the CPU time of this
    process is the least disturbed by other processes on a shared machine)."""
    every = np.concatenate(repeats)
    return {
        "median_ms": 1e3 * float(np.median(every[:, 0])),
        "mean_ms": 1e3 * float(np.median([t[:, 0].mean() for t in repeats])),
        "cpu_ms": 1e3 * float(np.median(every[:, 1])),
        "cpu_mean_ms": 1e3 * float(np.median([t[:, 1].mean() for t in repeats])),
    }


def measure_env_step(
    backend: str, width: int, height: int, steps: int, repeats: int, seed: int = 0, episodes: int = 4
) -> dict[str, float]:
    """ms per `RearrangeEnv.step` of the pick skill (physics + task + observations; resets untimed),
    random actions, on `episodes` generated training episodes; "none" drops head_depth from the obs."""
    from rearrange.env import RearrangeEnv
    from rearrange.generate import generate_episodes
    from rearrange.tasks.skill_tasks import load_skill_config, make_skill_task

    cfg = load_skill_config("pick")
    if backend == "none":
        cfg["obs_keys"] = [k for k in cfg["obs_keys"] if k != "head_depth"]
    env = RearrangeEnv(make_skill_task(cfg), generate_episodes("pick", "train", episodes, seed),
                       sim_cfg=head_camera_cfg(backend, width, height), sim_cache_size=episodes)
    env.reset(seed=seed)
    env.action_space.seed(seed)
    all_t: list[np.ndarray] = []
    for _ in range(repeats):
        t = np.empty((steps, 2))
        for i in range(steps):
            action = env.action_space.sample()
            t0, c0 = time.perf_counter(), time.process_time()
            _, _, terminated, truncated, _ = env.step(action)
            t[i] = time.perf_counter() - t0, time.process_time() - c0
            if terminated or truncated:
                env.reset()
        all_t.append(t)
    env.close()
    return _frame_stats(all_t)


def write_snapshot(path: str, layout_seed: int, width: int = 960, height: int = 540) -> None:
    """Overview RGB of one apartment (robot in front of the fridge, targets marked) next to its head depth."""
    import imageio.v3 as iio

    from rearrange.layout import generate_layout
    from rearrange.render import colorize_depth
    from rearrange.sim import RearrangeSim

    layout = generate_layout(layout_seed)
    sim = RearrangeSim(layout, ["bowl", "apple", "cracker_box", "tomato_soup_can"])
    table, counter = layout.receptacles["table_0"], layout.receptacles["counter_0"]
    shelf = layout.receptacles["fridge_shelf_1"]
    objs = {
        "obj_0": ((table.center[0] - 0.2, table.center[1], table.center[2] + 0.027), (1, 0, 0, 0)),
        "obj_1": ((shelf.center[0], shelf.center[1], shelf.center[2] + 0.038), (1, 0, 0, 0)),
        "obj_2": ((counter.center[0], counter.center[1], counter.center[2] + 0.106), (1, 0, 0, 0)),
        "obj_3": ((table.center[0] + 0.2, table.center[1], table.center[2] + 0.051), (1, 0, 0, 0)),
    }
    base = (table.center[0] + 0.2, table.center[1] - table.half_extent[1] - 0.08 - 0.85)
    sim.reset_state(objs, {"fridge": 1.6, "drawer_0": 0.35}, base, float(np.pi / 2 + 0.15))
    marks = [
        (objs["obj_1"][0], (1.0, 0.1, 0.1, 0.5)),
        ((table.center[0], table.center[1] + 0.15, table.center[2] + 0.05), (0.1, 1.0, 0.1, 0.5)),
    ]
    overview = sim.render_overview_rgb(width, height, marks)
    depth = sim.render_head_depth()
    dimg = colorize_depth(depth, float(depth.max()))  # colour range stretched to this frame
    scale = max(1, height // dimg.shape[0])
    dimg = np.repeat(np.repeat(dimg, scale, axis=0), scale, axis=1)
    pad = np.full((height, dimg.shape[1], 3), 255, dtype=np.uint8)
    top = (height - dimg.shape[0]) // 2
    pad[top : top + dimg.shape[0]] = dimg
    image = np.concatenate([overview, np.full((height, 8, 3), 255, np.uint8), pad], axis=1)
    sim.close()
    with atomic_path(path, suffix=".png") as tmp:
        iio.imwrite(tmp, image)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench-sim", description=__doc__.splitlines()[0])
    parser.add_argument("--layout-seed", type=int, default=100, help="apartment seed (default: 100)")
    parser.add_argument("--steps", type=int, default=1000, help="policy steps to time (default: 1000)")
    parser.add_argument("--width", type=int, default=128, help="head depth width (default: 128)")
    parser.add_argument("--height", type=int, default=128, help="head depth height (default: 128)")
    parser.add_argument("--depth-backend", default="render", choices=DEPTH_CHOICES,
                        help="head depth: rendered (GL), ray-cast (mj_multiRay) or none (default: render)")
    parser.add_argument("--objects", type=int, default=5, help="objects in the scene (default: 5)")
    parser.add_argument("--layouts", type=int, default=0, help="also time the first N training layouts")
    parser.add_argument("--repeats", type=int, default=1, help="repeat each timing, print medians (default: 1)")
    parser.add_argument("--depth-sweep", action="store_true",
                        help="time head depth alone per frame: raycast at "
                        f"{','.join(map(str, SWEEP_SIZES['raycast']))}, render at "
                        f"{','.join(map(str, SWEEP_SIZES['render']))} (square), --steps frames each")
    parser.add_argument("--env-step", action="store_true",
                        help="time RearrangeEnv.step of the pick skill with this depth backend and size")
    parser.add_argument(
        "--snapshot", metavar="PNG", help="write an overview + head depth image of --layout-seed and exit"
    )
    args = parser.parse_args(argv)
    from configs.compose import exit_with_error
    from rearrange.objects import OBJECT_KINDS

    if args.steps < 1 or args.width < 1 or args.height < 1 or args.repeats < 1:
        exit_with_error("--steps, --width, --height and --repeats must be positive")
    if not 0 <= args.objects <= len(OBJECT_KINDS):
        exit_with_error(f"--objects must be in 0..{len(OBJECT_KINDS)}")
    _setup_env_vars()
    if args.snapshot:
        write_snapshot(args.snapshot, args.layout_seed)
        print(f"wrote {args.snapshot}")
        return
    if args.depth_sweep:
        _print_depth_sweep(args)
        return
    if args.env_step:
        e = measure_env_step(args.depth_backend, args.width, args.height, args.steps, args.repeats)
        print(f"bench-sim --env-step: pick, depth {args.depth_backend} {args.width}x{args.height}, "
              f"{args.steps} steps x {args.repeats}, ms/step: wall {e['median_ms']:.3f} median, "
              f"{e['mean_ms']:.3f} mean ({1e3 / e['mean_ms']:.0f} steps/s); CPU {e['cpu_ms']:.3f} median, "
              f"{e['cpu_mean_ms']:.3f} mean ({1e3 / e['cpu_mean_ms']:.0f} steps/s per core)")
        return
    _print_measure(args)


def _print_depth_sweep(args: argparse.Namespace) -> None:
    r = depth_sweep(args.layout_seed, args.steps, args.repeats, max(args.objects, 1))
    print(f"bench-sim --depth-sweep: layout {args.layout_seed}, {args.steps} frames x {args.repeats} repeats, "
          f"MUJOCO_GL={os.environ['MUJOCO_GL']}, LP_NUM_THREADS={os.environ.get('LP_NUM_THREADS')}")
    print(f"{'backend':<9}{'size':>8}{'median ms':>11}{'mean ms':>9}{'cpu median':>12}{'cpu mean':>10}")
    for (backend, n), q in r.items():
        print(f"{backend:<9}{f'{n}x{n}':>8}{q['median_ms']:>11.3f}{q['mean_ms']:>9.3f}{q['cpu_ms']:>12.3f}"
              f"{q['cpu_mean_ms']:>10.3f}")


def _print_measure(args: argparse.Namespace) -> None:
    n_obj, backend = max(args.objects, 1), args.depth_backend
    runs = [measure(args.layout_seed, args.steps, args.width, args.height, n_obj, seed=k, backend=backend)
            for k in range(args.repeats)]
    r = {key: float(np.median([q[key] for q in runs])) for key in runs[0]}
    print(
        f"bench-sim: layout {args.layout_seed}, {args.steps} steps x {args.repeats} (medians), depth "
        f"{backend} {args.width}x{args.height}, {int(r['ngeom'])} geoms, MUJOCO_GL={os.environ['MUJOCO_GL']}"
    )
    print(f"{'part':<22}{'ms/step':>10}{'share':>9}")
    for key, label in (
        ("physics", "physics (4 substeps)"),
        ("render", f"head depth {backend}"),
        ("obs", "observation assembly"),
    ):
        print(f"{label:<22}{1e3 * r[key] / args.steps:>10.3f}{100 * r[key] / r['total']:>8.1f}%")
    print(f"{'total':<22}{1e3 * r['total'] / args.steps:>10.3f}{100.0:>8.1f}%")
    print(f"steps/s (one process, wall clock): {r['sps']:.1f}")
    print(f"steps/s (per CPU second, all threads; what one uncontended core gives): {r['cpu_sps']:.1f}")
    if args.layouts > 0:
        from rearrange.layout import TRAIN_LAYOUT_SEEDS

        print(f"\n{'layout':>7}{'area m2':>9}{'geoms':>7}{'physics ms':>12}{'depth ms':>10}{'steps/s':>9}")
        steps = max(100, args.steps // 4)
        for seed in TRAIN_LAYOUT_SEEDS[: args.layouts]:
            q = measure(seed, steps, args.width, args.height, n_obj, backend=backend)
            print(
                f"{seed:>7}{q['area']:>9.1f}{int(q['ngeom']):>7}{1e3 * q['physics'] / steps:>12.3f}"
                f"{1e3 * q['render'] / steps:>10.3f}{q['sps']:>9.1f}"
            )

if __name__ == "__main__":
    main()
