#!/bin/bash
# Place soup g3 (stop 71, docs/runs_stop71.json, checkpoints/place.md "Soups of c1's fine-tunes"): the equal weight
# average of c1, run f2 (stop 70) and run c3 (stop 69), three policies from c1's training state. Code a5a08a3.
# Four sets 79 / 78 / 70 / 83 = 310 of 400 (the shipped s2: 306); fresh val seeds 2 / 3: 0.72 / 0.76 (s2 0.71 / 0.72);
# tasks seeds 0 + 1: 70 + 65 = 135 of 300 (s2: 140): a candidate, not shipped.
set -e
# c1 and its training state (runs/s66/place_c1) first: bash checkpoints/candidates/place_c1_long/commands.sh
C1="trainer.init_from=runs/s66/place_c1 trainer.ppo.lr=1e-4 trainer.checkpoint_interval=100 trainer.checkpoint_keep=2 skill.start_grasp.max_tilt=0.6 skill.start_grasp.max_lateral=0.03 skill.start_grasp.max_arm_offset=0.5 skill.reward.displaced_pen=5.5 skill.reward.displaced_should_end=true trainer.num_envs=32 trainer.envs_per_worker=16 skill.episode_balance.mix=0.5"
# run c3 (stop 69): 3.5M steps on c1's 1,200 episodes with the graded release reward
train-skill --skill place --out runs/s69/place_c3 $C1 dataset.path=runs/s66/post_c1/place_train_1200.json.gz trainer.total_steps=3500000 skill.reward.place_reward_falloff=1.0
# run f2 (stop 70): 2.5M steps with 448 bottom-compartment episodes added, the gripper's way out paid
make-episodes --kind place --split train --count 900 --seed 41 --out runs/s70/place_fridge_900.json.gz skill_targets.shares.place.fridge=1.0 skill_targets.shares.place.surface=0.0 skill_targets.shares.place.drawer=0.0
python -m rearrange.filter_episodes --goal-receptacle fridge_shelf_0 --out runs/s70/place_bottom.json.gz runs/s70/place_fridge_900.json.gz
python -m rearrange.mix_episodes --out runs/s70/place_train_1648.json.gz runs/s66/post_c1/place_train_1200.json.gz runs/s70/place_bottom.json.gz
train-skill --skill place --out runs/s70/place_f2 $C1 dataset.path=runs/s70/place_train_1648.json.gz trainer.total_steps=2500000 skill.reward.exit_offset=0.1
python -m skills.soup checkpoints/candidates/place_g3_soup/place.pt runs/s66/place_c1 runs/s70/place_f2 runs/s69/place_c3
eval-skill --skill place --checkpoint checkpoints/candidates/place_g3_soup/place.pt --seed 0 --workers 2   # 0.79; --seed 1 0.78, --seed 2 0.72, --seed 3 0.76
