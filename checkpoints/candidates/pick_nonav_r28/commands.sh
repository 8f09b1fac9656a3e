#!/bin/bash
# Pick run 28 (stop 74, 2026-12-01; checkpoints/pick.md "Run 28", docs/RESULTS.md stop 74): a pick for the agent without
# nav, trained from scratch with the path sensor (obj_path_compass) and the bumper (base_blocked) on starts across the
# house. Run 25's stage 1 (32 envs, learner bf16, episode balance 0.5) on 1,000 starts up to 14 m + 200 ordinary ones.
# Stopped by SIGTERM at 3,719,136 of its 5,000,000 steps (94.8 min at 654 steps/s, a 2-core Intel Xeon; NavPick there
# 0.46 [0.32, 0.60], tp-srl-nonav, Tidy House, 50 val, seed 0; the shipped pick 0.32), then resumed to the end of its
# schedule (`train-skill --resume runs/s74/r1`, 34.7 min): 5,001,152 steps. Here: that final state (pick.pt is its policy).
# Code of commit 211ad37; run from the repository root.
set -e
D=checkpoints/candidates/pick_nonav_r28
# what ran (episodes: runs/s73/pick_far_1000.json.gz = make-episodes --kind pick --split train --count 1000 --seed 51
#   --out runs/s73/pick_far_1000.json.gz spawn.max_dist=14 spawn.see_opening=false, mixed with the ordinary 200):
# python -m rearrange.mix_episodes --out runs/s74/pick_far_mix_1200.json.gz --seed 74 runs/s73/pick_far_1000.json.gz checkpoints/pick_cpu_run/episodes/pick_train_200_seed0.json.gz
# train-skill --skill pick --out runs/s74/r1 trainer.overlap_learning=false trainer.ppo.proximal_policy=behaviour trainer.num_envs=32 trainer.envs_per_worker=16 trainer.progress_bar=false trainer.ppo.learner_bf16=true skill.episode_balance.mix=0.5 'skill.obs_keys=[head_depth,obj_start_sensor,obj_path_compass,joint,is_holding,relative_resting_position,base_blocked]' trainer.total_steps=5000000 trainer.checkpoint_interval=50 trainer.checkpoint_keep=3 dataset.path=runs/s74/pick_far_mix_1200.json.gz
# the rule's evaluations of the final policy (docs/RESULTS.md stop 74):
eval-hab --scenario tidy_house --agent tp-srl-nonav --episodes 50 --split val --workers 2 agent.checkpoints.pick=$D/pick.pt   # NavPick: stage pick_0
eval-skill --skill pick --checkpoint $D/pick.pt --episodes 100 --split val --workers 2                                         # own val, seed 0
# go on from this state (its schedule is spent: a new stage, e.g. run 25's oracle-start stage, with init_from):
# train-skill --skill pick --out runs/pick_nonav_r2 trainer.init_from=$D/checkpoints/ckpt_000005001152.pt trainer.ppo.lr=1e-4 trainer.total_steps=1250000 skill.oracle_start.prob=0.3 dataset.path=$D/episodes/pick_far_mix_1200.json.gz (plus run 25's stage-2 keys and these obs_keys)
