#!/bin/sh
# Every attack sweep of docs/attacks.md, one after another on one core (resumable: run it again
# to finish what an interrupted run left), then the reconstructed quadrants and the tables and
# figures.
#     sh experiments/attacks/run_all.sh
set -e
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONPATH=src
VFL=${VFL:-.venv/bin/vfl}
PYTHON=${PYTHON:-.venv/bin/python}
for sweep in label_inference label_inference_adult reconstruction completion; do
    "$VFL" sweep "experiments/attacks/$sweep.toml"
done
"$PYTHON" experiments/attacks/quadrants.py
"$PYTHON" experiments/attacks/report.py
