#!/bin/bash
# Place run c1 (stop 66, docs/runs_stop66.json): probe b1's training state (runs/s65/place_b1, from
# checkpoints/candidates/place_b1_balance/commands.sh) trained 9M more steps on 1,200 episodes. Code 666b94c.
# Four sets 293 of 400 (val 0.69 / 0.77, train-split 0.70 / 0.77); tasks 70 of 150 (TH 0.36): not shipped.
set -e
P=runs/s66/post_c1 && mkdir -p $P
make-episodes --kind place --split train --count 800 --seed 31 --out $P/place_train_800_seed31.json.gz --no-progress
python -m rearrange.mix_episodes --out $P/place_train_1200.json.gz checkpoints/place_cpu_run/episodes/place_train_400_seed0.json.gz $P/place_train_800_seed31.json.gz
train-skill --skill place --out runs/s66/place_c1 trainer.init_from=runs/s65/place_b1 trainer.ppo.lr=1e-4 trainer.total_steps=9000000 trainer.checkpoint_interval=100 trainer.checkpoint_keep=0 skill.start_grasp.max_tilt=0.6 skill.start_grasp.max_lateral=0.03 skill.start_grasp.max_arm_offset=0.5 skill.reward.displaced_pen=5.5 skill.reward.displaced_should_end=true dataset.path=$P/place_train_1200.json.gz trainer.num_envs=32 trainer.envs_per_worker=16 trainer.progress_bar=false skill.episode_balance.mix=0.5
python -m skills.export runs/s66/place_c1/checkpoints/ckpt_000009000928.pt $P/place_c1.pt
eval-skill --skill place --checkpoint $P/place_c1.pt --seed 0 --workers 2   # 0.69; --seed 1: 0.77
python -m eval.checkpoint_curve runs/s66/place_c1 --every 9 --episodes 100 --split val --seed 0 --workers 2 --out $P/place_c1_curve
for s in tidy_house prepare_groceries set_table; do eval-hab --scenario $s --agent tp-srl --episodes 50 --split val --workers 2 agent.checkpoints.place=$P/place_c1.pt; done   # 0.36 / 0.38 / 0.66
