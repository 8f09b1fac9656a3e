#!/bin/bash
# Pick run 35 (c1, stop 80; checkpoints/pick.md run 35, docs/RESULTS.md stop 80, docs/runs_stop80.json): run 25 (the
# two-hour run with the bumper, checkpoints/candidates/pick_r25_2h_bumper/) fine-tuned on run 10's data plus the 536
# pick starts saved inside 2 x 70 Tidy House train episodes (checkpoints/candidates/pick_p2_push/episodes/), with run
# 25's stage-5 settings. Code 4f5b992, the 2-core Intel Xeon, 27.0 min. Val 0.89 / 0.91 / 0.88 (seeds 0 / 1 / 2: the
# best pick measured on that machine over three sets); Tidy House val seeds 0 / 1 with only pick changed: 19 / 10 of 50
# (the shipped pick 19 / 15), so not shipped. Run from the repository root.
set -e
E=checkpoints/pick_cpu_run/episodes
S=checkpoints/candidates/pick_p2_push/episodes
python -m rearrange.mix_episodes --out runs/s80/pick_p1_mix.json.gz $E/pick_train_mix_400.json.gz:2 $E/pick_train_bottom_245_seed5.json.gz $S/pick_th_s10.json.gz:2 $S/pick_th_s11.json.gz:2
train-skill --skill pick --out runs/s80/run_c1 trainer.ppo.learner_bf16=true skill.episode_balance.mix=0.5 'skill.obs_keys=[head_depth,obj_start_sensor,joint,is_holding,relative_resting_position,base_blocked]' trainer.init_from=checkpoints/candidates/pick_r25_2h_bumper/pick.pt trainer.ppo.lr=1e-4 trainer.total_steps=1000000 trainer.checkpoint_interval=100 trainer.checkpoint_keep=2 skill.oracle_start.prob=0.3 skill.reward.exit_offset=0.1 dataset.path=runs/s80/pick_p1_mix.json.gz trainer.seed=5
python -m skills.export runs/s80/run_c1/checkpoints/ckpt_000001001440.pt runs/s80/c1_pick.pt
for s in 0 1 2; do
  eval-skill --skill pick --checkpoint runs/s80/c1_pick.pt --episodes 100 --split val --seed $s --workers 2   # 0.89 / 0.91 / 0.88
done
for s in 0 1; do
  eval-hab --scenario tidy_house --agent tp-srl --episodes 50 --split val --seed $s --workers 2 --out runs/s80/th_c1_seed$s agent.checkpoints.pick=runs/s80/c1_pick.pt   # 19 / 10 of 50
done
