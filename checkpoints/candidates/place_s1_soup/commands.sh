#!/bin/bash
# Place soup s1 (stop 70, docs/runs_stop70.json, checkpoints/place.md "Runs f1 and f2"): the weight average of c1 and
# run f1 (c1's training state + 2.5M steps with 448 bottom-compartment episodes, without the exit term). Code 3b62a89.
# Four sets 300 of 400 (val 0.76 / 0.74); tasks 63 of 150 (0.28 / 0.32 / 0.66, arm resets failing in 27): not shipped.
set -e
# c1 and its training state (runs/s66/place_c1) first: bash checkpoints/candidates/place_c1_long/commands.sh
make-episodes --kind place --split train --count 900 --seed 41 --out runs/s70/place_fridge_900.json.gz skill_targets.shares.place.fridge=1.0 skill_targets.shares.place.surface=0.0 skill_targets.shares.place.drawer=0.0
python -m rearrange.filter_episodes --goal-receptacle fridge_shelf_0 --out runs/s70/place_bottom.json.gz runs/s70/place_fridge_900.json.gz
python -m rearrange.mix_episodes --out runs/s70/place_train_1648.json.gz runs/s66/post_c1/place_train_1200.json.gz runs/s70/place_bottom.json.gz
train-skill --skill place --out runs/s70/place_f1 trainer.init_from=runs/s66/place_c1 trainer.ppo.lr=1e-4 trainer.total_steps=2500000 trainer.checkpoint_interval=100 trainer.checkpoint_keep=2 skill.start_grasp.max_tilt=0.6 skill.start_grasp.max_lateral=0.03 skill.start_grasp.max_arm_offset=0.5 skill.reward.displaced_pen=5.5 skill.reward.displaced_should_end=true dataset.path=runs/s70/place_train_1648.json.gz trainer.num_envs=32 trainer.envs_per_worker=16 skill.episode_balance.mix=0.5
python -m skills.export runs/s70/place_f1/checkpoints/ckpt_000002500576.pt runs/s70/place_f1.pt
python -m skills.soup checkpoints/candidates/place_s1_soup/place.pt checkpoints/candidates/place_c1_long/place.pt runs/s70/place_f1.pt
