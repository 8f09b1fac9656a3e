"""Skill and HAB evaluation: the TP-SRL agent loop, metrics with confidence intervals, videos, plots."""
