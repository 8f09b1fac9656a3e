"""Hydra config tree, shipped as package data: every threshold and coefficient lives here, once.

Groups: `trainer/` (collection mode, PPO), `policy/` (networks), `sim/` (simulator), `skill/` (one
file per skill), `scenario/` (one file per HAB scenario). Top-level files are the entry points of the
command-line tools. This package holds no code.
"""
