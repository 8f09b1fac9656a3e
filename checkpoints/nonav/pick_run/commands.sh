#!/bin/bash
# tp-srl-nonav's shipped pick (checkpoints/nonav/pick.md): pick run 28 (from scratch with the path sensor and the bumper,
# 5M steps; checkpoints/candidates/pick_nonav_r28/commands.sh) continued with two of run 25's later stages on 1,645
# starts near and far (stop 75, 2026-12-01, a 2-core Intel Xeon; runs/s75/run.sh ran these). Stage A 1,501,152 steps,
# 62.6 min at 400 steps/s (HAB evaluations beside it for 47 min); stage B 1,556,448 steps, 40.1 min at 649 steps/s,
# nothing else running. Code of commit bb0d36f (plus stop 75's wiring, which changes no training code); run from the
# repository root. Here: stage B's final training state (checkpoints/) and its config; nonav/pick.pt is its policy.
set -e
R=runs/nonav_pick
C=checkpoints/candidates/pick_nonav_r28
E=checkpoints/pick_cpu_run/episodes
mkdir -p $R
OLD="trainer.overlap_learning=false trainer.ppo.proximal_policy=behaviour"
N32="trainer.num_envs=32 trainer.envs_per_worker=16"
NP="trainer.progress_bar=false trainer.ppo.learner_bf16=true skill.episode_balance.mix=0.5 skill.obs_keys=[head_depth,obj_start_sensor,obj_path_compass,joint,is_holding,relative_resting_position,base_blocked]"
OS="skill.oracle_start.prob=0.3 skill.oracle_start.max_prefix_steps=250"
# the episodes, shipped here: stop 73's 1,000 train starts up to 14 m (make-episodes --kind pick --split train --count
# 1000 --seed 51 --out runs/s73/pick_far_1000.json.gz spawn.max_dist=14 spawn.see_opening=false), pick's 400-episode
# mix and its 245 bottom-level fridge starts, made with
# python -m rearrange.mix_episodes --out runs/s75/pick_far_mix_1645.json.gz --seed 75 runs/s73/pick_far_1000.json.gz $E/pick_train_mix_400.json.gz $E/pick_train_bottom_245_seed5.json.gz
EP=checkpoints/nonav/pick_run/episodes/pick_far_mix_1645.json.gz
# stage A: oracle starts, lr 1e-4, overlap off (run 25's stages 2-3)
train-skill --skill pick --out $R/ra $OLD $N32 $NP $OS trainer.init_from=$C/checkpoints/ckpt_000005001152.pt trainer.ppo.lr=1e-4 trainer.total_steps=1500000 trainer.checkpoint_interval=50 trainer.checkpoint_keep=2 dataset.path=$EP
# stage B: lr 5e-5, the way back out of the fridge's bottom compartment paid for, VER overlap on (run 25's stages 4-5);
# its length filled the session's time at stage A's speed
train-skill --skill pick --out $R/rb $N32 $NP $OS trainer.init_from=$R/ra trainer.ppo.lr=5e-5 skill.reward.exit_offset=0.1 trainer.total_steps=1554432 trainer.checkpoint_interval=50 trainer.checkpoint_keep=2 dataset.path=$EP
python -m skills.export $(ls $R/rb/checkpoints/ckpt_*.pt | sort | tail -1) $R/pick.pt
# the evaluations (docs/RESULTS.md stop 75):
eval-hab --scenario tidy_house --agent tp-srl-nonav --episodes 50 --split val --workers 2 agent.checkpoints.pick=$R/pick.pt   # NavPick 0.82
eval-skill --skill pick --checkpoint $R/pick.pt --episodes 100 --split val --workers 2   # 0.48
