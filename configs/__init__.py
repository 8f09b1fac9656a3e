"""Hydra config tree, shipped as package data: every threshold and coefficient lives here, once.

Groups: `trainer/` (collection mode, PPO), `policy/` (networks), `sim/` (simulator), `skill/` (one
file per skill), `scenario/` (one file per HAB scenario). Top-level files are the entry points of the
command-line tools. `compose.py` composes the tree from Python (every command and test loads its
config through it), reads single files of it (`load_config_file`: the sim defaults, a skill, the
episode generator) and holds the one-line error helpers every command uses; the other rooms
(rearrange, trainer, skills, eval) import config from here and never locate or compose it themselves.
`files.py` holds the atomic file writes every room uses, `ranges.py` the numeric intervals config checks
name and `node.py` the typed reads of a config node that the trainer's and the evaluators' validation share
(`ConfigNode`; standard library and `compose` only). None of them imports anything of the project above this package, so it
is the bottom of the data flow and any room may import it.
"""
