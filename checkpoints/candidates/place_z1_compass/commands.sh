#!/bin/bash
# Place run z1 (stops 86-87, docs/runs_stop86.json and runs_stop87.json): from scratch with obj_goal_path_compass;
# stop 68's p68 command (run 33's recipe on the cpu profile) with the compass in place of the bumper, 3M steps.
# Stop 86 ran it to 2,113,504 steps (40 min at 888 steps/s, 2-core AMD EPYC; val 0.67 / 0.70 there); stop 87
# resumed it to 3,000,256 (18 min at 820 steps/s). This folder holds the final training state and policy.
set -e
train-skill --skill place --out runs/s86/place_z1 trainer.total_steps=3000000 trainer.checkpoint_interval=50 trainer.checkpoint_keep=2 trainer.progress_bar=false skill.reward.displaced_pen=5.5 skill.reward.displaced_should_end=true dataset.path=checkpoints/place_cpu_run/episodes/place_train_400_seed0.json.gz 'skill.obs_keys=[head_depth,obj_goal_sensor,joint,is_holding,relative_resting_position,obj_goal_path_compass]'
# (cut off and continued: train-skill --skill place --resume runs/s86/place_z1)
python -m skills.export runs/s86/place_z1/checkpoints/ckpt_000003000256.pt checkpoints/candidates/place_z1_compass/place.pt
eval-skill --skill place --checkpoint checkpoints/candidates/place_z1_compass/place.pt --seed 0 --workers 2   # 0.62; --seed 1: 0.72
eval-skill --skill place --checkpoint checkpoints/candidates/place_z1_compass/place.pt --episodes-file runs/s86/sel21.json.gz --workers 2   # 0.61; sel22: 0.61 (runs/s86/data.sh makes them: its text is in docs/runs_stop86.json, "scripts")
# to fine-tune from it (run y1, stop 87): trainer.init_from=checkpoints/candidates/place_z1_compass
