#!/bin/bash
# Place probe b1 (stop 65, docs/runs_stop65.json): the shipped place's training state fine-tuned 1.5M steps with
# skill.episode_balance.mix=0.5 (code frozen at d2f6a9d in the clone runs/s65/src2). Val 0.66 / 0.70, 277 of 400 over four sets.
set -e
M=/work/main
cd $M/runs/s65/src2 && export PYTHONPATH=$M/runs/s65/src2 && . $M/.venv/bin/activate
R=$M/runs/s65/place_b1
P=$M/runs/s65/post_place && mkdir -p $P
date +%s > $P/t0
# run 54's training state (checkpoints/place_cpu_run until stop 70, when the place shipped with s2 replaced it)
mkdir -p $M/runs && git -C $M show 1219f34:checkpoints/place_cpu_run/checkpoints/ckpt_000006000576.pt > $M/runs/place_r54_state.pt
train-skill --skill place --out $R trainer.init_from=$M/runs/place_r54_state.pt trainer.ppo.lr=5e-5 trainer.total_steps=1500000 trainer.checkpoint_interval=50 trainer.checkpoint_keep=2 skill.start_grasp.max_tilt=0.6 skill.start_grasp.max_lateral=0.03 skill.start_grasp.max_arm_offset=0.5 skill.reward.displaced_pen=5.5 skill.reward.displaced_should_end=true dataset.path=checkpoints/place_cpu_run/episodes/place_train_400_seed0.json.gz trainer.num_envs=32 trainer.envs_per_worker=16 trainer.progress_bar=false skill.episode_balance.mix=0.5
date +%s > $P/t1
python -m skills.export $(ls $R/checkpoints/ckpt_*.pt | sort | tail -1) $P/place_b1.pt
make-episodes --kind place --split train --count 100 --seed 21 --out $P/place_sel21.json.gz --no-progress
make-episodes --kind place --split train --count 100 --seed 22 --out $P/place_sel22.json.gz --no-progress
ev() { eval-skill --skill place --checkpoint $P/place_b1.pt --workers 2 --no-progress "$@"; }
ev --seed 0 --out $P/s0.json > $P/s0.log 2>&1
ev --seed 1 --out $P/s1.json > $P/s1.log 2>&1
ev --episodes-file $P/place_sel21.json.gz --out $P/sel21.json > $P/sel21.log 2>&1
ev --episodes-file $P/place_sel22.json.gz --out $P/sel22.json > $P/sel22.log 2>&1
touch $P/done
