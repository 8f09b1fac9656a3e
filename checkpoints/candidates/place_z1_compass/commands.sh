#!/bin/bash
# Place run z1 (stop 86, docs/runs_stop86.json): from scratch with obj_goal_path_compass; stop 68's p68 command
# (run 33's recipe on the cpu profile) with the compass in place of the bumper. Stopped by SIGTERM at 2,113,504 of
# its 3M steps (40 min at 888 steps/s, 2-core AMD EPYC); val 0.67 / 0.70 (seeds 0 / 1) at that point.
set -e
train-skill --skill place --out runs/s86/place_z1 trainer.total_steps=3000000 trainer.checkpoint_interval=50 trainer.checkpoint_keep=2 trainer.progress_bar=false skill.reward.displaced_pen=5.5 skill.reward.displaced_should_end=true dataset.path=checkpoints/place_cpu_run/episodes/place_train_400_seed0.json.gz 'skill.obs_keys=[head_depth,obj_goal_sensor,joint,is_holding,relative_resting_position,obj_goal_path_compass]'
# to continue it: copy this folder to a run folder and resume
#   mkdir -p runs/s87 && cp -r checkpoints/candidates/place_z1_compass runs/s87/place_z1 && gunzip runs/s87/place_z1/metrics.jsonl.gz
#   train-skill --skill place --resume runs/s87/place_z1
python -m skills.export runs/s86/place_z1/checkpoints/ckpt_000002113504.pt checkpoints/candidates/place_z1_compass/place.pt
eval-skill --skill place --checkpoint checkpoints/candidates/place_z1_compass/place.pt --seed 0 --workers 2   # 0.67; --seed 1: 0.70
