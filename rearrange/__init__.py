"""The embedded Home Assistant Benchmark: a MuJoCo apartment simulator, episodes, sensors and tasks."""
