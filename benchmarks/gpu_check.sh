#!/usr/bin/env bash
# The GPU checks, as one call of the device tool on its H200 machine (bare: torch there, lander's other dependencies
# carried as wheels in .whl/, which .git/info/exclude ignores; results in BENCHMARKS.md "On a GPU"). The wheels of
# 2026-11-29 (50 MB): Box2D, farama-notifications, adastop, antlr4-python3-runtime (built here: `pip wheel`),
# cwevals, fastapi, starlette, greenlet, gymnasium, hydra-core, hydra-joblib-launcher, omegaconf, the seven
# opentelemetry-* wandb needs, googleapis-common-protos, platformdirs, plotly, pydantic, pydantic_core,
# typing-inspection, annotated-types, pygame-ce, stable_baselines3, uvicorn, wandb, submitit and
# hydra-submitit-launcher (lander's launchers import it: a sweep needs it), ale-py for Pong (imageio-ffmpeg, 68 MB, is not
# carried: no video there, and the test harness runs cold).
# Here: python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp
#   --platform manylinux_2_28_x86_64 ... -d .whl <each missing package>; then, through the tool:
#   run(command="bash benchmarks/gpu_check.sh", carry=[".whl"]). The run's folder comes back as cuda_run.tgz.
#   `bash benchmarks/gpu_check.sh pong`: Pong's speed on the GPU instead (ale-py's wheel in .whl too).
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
R=$PWD; W=/tmp/g; mkdir -p $W; cd $W
if [ "$1" = pong ]; then  # Pong's training speed three ways (docs/course-experiments.md; carry ale-py's wheel too)
  P="experiment=qcritic_pong algo=mac seed=0 total_timesteps=16000 eval.freq=8000 eval.episodes=2 eval.n_envs=2"
  for v in "device=cuda vec_env=subproc" "device=cuda" "device=cpu vec_env=subproc"; do
    n=$(echo $v | tr ' =' '__'); echo "=== $v"
    timeout 200 python3 -m lander.run $P $v video.enabled=false logger=none hydra.run.dir=$W/$n 2>&1 | tail -2
    python3 -c "import json;s=json.load(open('$W/$n/summary.json'));print(s['status'],s['train_steps_per_second'])"
  done
  exit
fi
nvidia-smi -L; python3 -c "import torch;print(torch.__version__, torch.cuda.is_available())"; which ffmpeg; git -C $R log --oneline -1 2>/dev/null
step() { echo "=== $1 $(date +%T)"; }
step test
(cd $R && LANDER_TEST_COLD=1 timeout 150 python3 -m pytest tests/e2e/test_artifacts.py -k gpu -n 0 -p no:cacheprovider -q 2>&1 | tail -8)
step default-cuda
/usr/bin/time -f "wall %e s cpu %U+%S" timeout 150 python3 -m lander.run device=cuda total_timesteps=32768 eval.freq=16384 video.enabled=false hydra.run.dir=$W/cuda 2>&1 | tail -4
python3 - <<'P'
import json,pandas as pd
s=json.load(open('/tmp/g/cuda/summary.json')); print({k:s.get(k) for k in ('status','gpu','gpu_peak_memory_mb','device','final_eval_mean','eval_mean')})
r=pd.read_csv('/tmp/g/cuda/metrics/resources.csv'); print([c for c in r.columns if 'gpu' in c]); print(r.tail(2).to_string())
P
step sbs-cuda
timeout 60 python3 -m lander.run device=cuda seeds_per_process=2 --multirun seed=0,1 total_timesteps=4096 logger=none 2>&1 | tail -3; echo "rc ${PIPESTATUS[0]}"
step evaluate-no-cuda
CUDA_VISIBLE_DEVICES= timeout 90 python3 -m lander.evaluate run=$W/cuda n_episodes=3 2>&1 | tail -3; echo "rc ${PIPESTATUS[0]}"
step reproduce-cuda
timeout 170 python3 -m lander.reproduce $W/cuda 2>&1 | tail -4; echo "rc ${PIPESTATUS[0]}"
step algos
for a in "dqn algo.model.learning_starts=200 total_timesteps=1000" "sac env=lunar_lander_continuous algo.model.learning_starts=200 algo.model.buffer_size=5000 algo.model.batch_size=64 total_timesteps=600" "a2c n_envs=2 total_timesteps=1000"; do
 timeout 60 python3 -m lander.run algo=$a device=cuda logger=none video.enabled=false eval.freq=500 eval.episodes=2 report=false hydra.run.dir=$W/${a%% *} 2>&1 | tail -2; echo "rc ${PIPESTATUS[0]} $(python3 -c "import json;s=json.load(open('$W/${a%% *}/summary.json'));print(s.get('status'),s.get('gpu'))")"
done
step pack
tar czf $OUT/cuda_run.tgz --exclude="*.mp4" -C $W cuda && ls -la $OUT
