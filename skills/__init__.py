"""Skill definitions (observations, actions, termination), oracle controllers and trained-skill loading."""
