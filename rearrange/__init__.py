"""The embedded Home Assistant Benchmark: a MuJoCo apartment simulator, episodes, sensors and tasks."""


def _register() -> None:
    """Register the Gymnasium ids (rearrange/Explore-v0, the skills, the HAB scenarios).

    Cheap: only the env module and the task tables are imported; no sim, no GL context. Importing
    `rearrange` in a worker process is enough for `gymnasium.make("rearrange/Pick-v0")` to work.
    """
    from rearrange.env import register_envs
    from rearrange.tasks.hab import register_hab_envs
    from rearrange.tasks.skill_tasks import register_skill_envs

    register_envs()
    register_skill_envs()
    register_hab_envs()


_register()
