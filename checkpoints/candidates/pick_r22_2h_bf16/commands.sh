#!/bin/bash
# Pick run 22: run 20 exactly with trainer.ppo.learner_bf16=true on every stage (runs/s63/pick_r22_rule.txt).
set -e
cd /work/main
. .venv/bin/activate
R=runs/s63/pl32
E=checkpoints/pick_cpu_run/episodes
OLD="trainer.overlap_learning=false trainer.ppo.proximal_policy=behaviour"
N32="trainer.num_envs=32 trainer.envs_per_worker=16"
NP="trainer.progress_bar=false trainer.ppo.learner_bf16=true"
date +%s > $R/t0
python -m rearrange.mix_episodes --out $R/pick_mix_bottom.json.gz $E/pick_train_mix_400.json.gz:2 $E/pick_train_bottom_245_seed5.json.gz
train-skill --skill pick --out $R/r1 $OLD $N32 $NP trainer.total_steps=5000000 trainer.checkpoint_interval=50 trainer.checkpoint_keep=0 dataset.path=$E/pick_train_200_seed0.json.gz
date +%s > $R/t1
train-skill --skill pick --out $R/r2 $OLD $N32 $NP trainer.init_from=$R/r1 trainer.ppo.lr=1e-4 trainer.total_steps=1250000 trainer.checkpoint_interval=50 trainer.checkpoint_keep=0 skill.oracle_start.prob=0.3 dataset.path=$E/pick_train_200_seed0.json.gz
date +%s > $R/t2
train-skill --skill pick --out $R/r3 $OLD $N32 $NP trainer.init_from=$R/r2 trainer.ppo.lr=1e-4 trainer.total_steps=1250000 trainer.checkpoint_interval=50 trainer.checkpoint_keep=0 skill.oracle_start.prob=0.3 dataset.path=$E/pick_train_mix_400.json.gz
date +%s > $R/t3
train-skill --skill pick --out $R/r10 $N32 $NP trainer.init_from=$R/r3 trainer.ppo.lr=1e-4 skill.reward.exit_offset=0.1 trainer.total_steps=1000000 trainer.checkpoint_interval=100 trainer.checkpoint_keep=0 skill.oracle_start.prob=0.3 dataset.path=$R/pick_mix_bottom.json.gz
date +%s > $R/t4
S5=$(python - <<'PY'
t0, t3, t4 = (int(open(f"runs/s63/pl32/t{i}").read()) for i in (0, 3, 4))
sps = 1000000 / max(t4 - t3, 1)                     # stage 4's steps/s, its start-up included
left = 115 * 60 - (t4 - t0) - 60                    # seconds left, a minute kept for stage 5's start-up
steps = int(min(4000000, max(0, left * sps)) // 2048 * 2048)
print(steps)
PY
)
echo "stage 5 steps: $S5" > $R/s5_steps.txt
if [ "$S5" -gt 100000 ]; then
  train-skill --skill pick --out $R/r17 $N32 $NP trainer.init_from=$R/r10 trainer.ppo.lr=5e-5 skill.reward.exit_offset=0.1 trainer.total_steps=$S5 trainer.checkpoint_interval=100 trainer.checkpoint_keep=2 skill.oracle_start.prob=0.3 dataset.path=$R/pick_mix_bottom.json.gz
fi
date +%s > $R/t5
touch $R/done
# then (stop 63): the final checkpoint, exported and evaluated on val seeds 0 and 1
# python -m skills.export runs/s63/pl32/r17/checkpoints/ckpt_000003364832.pt runs/s63/pick_r22.pt
# eval-skill --skill pick --checkpoint checkpoints/candidates/pick_r22_2h_bf16/pick.pt --seed 0 --workers 2   # 0.87; --seed 1: 0.90
