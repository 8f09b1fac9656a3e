"""The embedded Home Assistant Benchmark: a MuJoCo apartment simulator, episodes, sensors and tasks."""


def _register() -> None:
    """Register the Gymnasium ids (cheap: no sim, no GL); skipped if gymnasium is unavailable."""
    try:
        from rearrange.env import register_envs
    except ImportError:  # pragma: no cover - gymnasium is a hard dependency; keep import safe anyway
        return
    register_envs()


_register()
